// Point-to-point (a ring and all pairs, each in one group) and a split communicator.
#include <algorithm>
#include <memory>

#include "checks.h"

namespace netcheck {
namespace {

// The data `src` sends to `dst`: a stream of its own, so a message delivered to the wrong peer or
// from the wrong peer shows.
float p2pValue(int nranks, uint32_t seed, int src, int dst, size_t i) {
  return input<float>(ncclSum, nranks, seed, src * nranks + dst, i);
}

void ring(Ctx& ctx, size_t count) {
  const uint32_t seed = ctx.nextSeed++;
  const int n = ctx.nranks;
  const int next = (ctx.rank + 1) % n, prev = (ctx.rank + n - 1) % n;
  Buf<float> in(count), out(count);
  for (size_t i = 0; i < count; ++i) in.v[i] = p2pValue(n, seed, ctx.rank, next, i);
  const std::string name = "sendrecv ring float32 count=" + std::to_string(count);
  ctx.rep->step(name);
  ctx.rep->call(ncclGroupStart(), "ncclGroupStart", ctx.comm);
  ctx.rep->call(ncclSend(in.data(), count, ncclFloat32, next, ctx.comm, nullptr), "ncclSend", ctx.comm);
  ctx.rep->call(ncclRecv(out.data(), count, ncclFloat32, prev, ctx.comm, nullptr), "ncclRecv", ctx.comm);
  ctx.rep->call(ncclGroupEnd(), (name + " (ncclGroupEnd)").c_str(), ctx.comm);
  verify(ctx, name, out, 0, count, ncclSum, [&](size_t i) { return p2pValue(n, seed, prev, ctx.rank, i); });
}

// Every rank sends to and receives from every rank, itself included, in one group.
void allPairs(Ctx& ctx, size_t count) {
  const uint32_t seed = ctx.nextSeed++;
  const int n = ctx.nranks;
  std::vector<std::unique_ptr<Buf<float>>> in, out;
  for (int p = 0; p < n; ++p) {
    in.push_back(std::make_unique<Buf<float>>(count));
    out.push_back(std::make_unique<Buf<float>>(count));
    for (size_t i = 0; i < count; ++i) in[p]->v[i] = p2pValue(n, seed, ctx.rank, p, i);
  }
  const std::string name = "sendrecv all-pairs float32 count=" + std::to_string(count);
  ctx.rep->step(name);
  ctx.rep->call(ncclGroupStart(), "ncclGroupStart", ctx.comm);
  for (int k = 0; k < n; ++k) {
    // Start with different peers on different ranks, as an application would.
    const int p = (ctx.rank + k) % n;
    ctx.rep->call(ncclSend(in[p]->data(), count, ncclFloat32, p, ctx.comm, nullptr), "ncclSend", ctx.comm);
    ctx.rep->call(ncclRecv(out[p]->data(), count, ncclFloat32, p, ctx.comm, nullptr), "ncclRecv", ctx.comm);
  }
  ctx.rep->call(ncclGroupEnd(), (name + " (ncclGroupEnd)").c_str(), ctx.comm);
  for (int p = 0; p < n; ++p)
    verify(ctx, name + " from rank " + std::to_string(p), *out[p], 0, count, ncclSum,
           [&](size_t i) { return p2pValue(n, seed, p, ctx.rank, i); });
}

}  // namespace

void runP2PChecks(Ctx& ctx) {
  for (size_t count : countsFor(ctx, sizeof(float))) {
    if (count * sizeof(float) > kHeavyBytes) continue;  // 1 MiB per peer is plenty here
    ring(ctx, count);
    allPairs(ctx, count);
  }
}

// Splits by rank parity with reversed keys, so the new ranks run opposite to the old ones, then
// checks the new communicator's size and rank and runs an AllReduce and an AllGather on it.
void runSplitChecks(Ctx& ctx) {
  const int color = ctx.rank % 2;
  std::vector<int> members;  // parent ranks of my color, in the new communicator's rank order
  for (int r = ctx.nranks - 1; r >= 0; --r)
    if (r % 2 == color) members.push_back(r);
  const int want = int(std::find(members.begin(), members.end(), ctx.rank) - members.begin());
  const int m = int(members.size());

  ncclComm_t sub = nullptr;
  ctx.rep->step("ncclCommSplit");
  ctx.rep->call(ncclCommSplit(ctx.comm, color, -ctx.rank, &sub, nullptr), "ncclCommSplit", ctx.comm);
  int count = -1, rank = -1;
  ctx.rep->call(ncclCommCount(sub, &count), "ncclCommCount", sub);
  ctx.rep->call(ncclCommUserRank(sub, &rank), "ncclCommUserRank", sub);
  const std::string base = "split color=" + std::to_string(color);
  if (count != m || rank != want)
    ctx.rep->fail(base + " size and rank", "got rank " + std::to_string(rank) + " of " + std::to_string(count) +
                                               ", expected " + std::to_string(want) + " of " + std::to_string(m));
  else
    ctx.rep->pass(base + " size and rank");

  const uint32_t seed = ctx.nextSeed++;
  const size_t c = 1000;
  Buf<int32_t> in(c), out(c);
  for (size_t i = 0; i < c; ++i) in.v[i] = input<int32_t>(ncclSum, ctx.nranks, seed, ctx.rank, i);
  ctx.rep->step(base + " allreduce");
  ctx.rep->call(ncclAllReduce(in.data(), out.data(), c, ncclInt32, ncclSum, sub, nullptr), "split allreduce", sub);
  verify(ctx, base + " allreduce sum int32 count=1000", out, 0, c, ncclSum, [&](size_t i) {
    int32_t s = 0;
    for (int r : members) s += input<int32_t>(ncclSum, ctx.nranks, seed, r, i);
    return s;
  });

  Buf<int32_t> mine(1), all{size_t(m)};
  mine.v[0] = ctx.rank;
  ctx.rep->step(base + " allgather");
  ctx.rep->call(ncclAllGather(mine.data(), all.data(), 1, ncclInt32, sub, nullptr), "split allgather", sub);
  verify(ctx, base + " allgather of parent ranks", all, 0, size_t(m), ncclSum,
         [&](size_t i) { return int32_t(members[i]); });
  ctx.rep->step("ncclCommDestroy(split)");
  ctx.rep->call(ncclCommDestroy(sub), "ncclCommDestroy(split)", nullptr);
}

}  // namespace netcheck
