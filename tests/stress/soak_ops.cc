#include "soak_ops.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

namespace soak {
namespace {

int32_t valueOf(int rank, uint32_t salt, size_t i) {
  return int32_t((uint64_t(rank) * 7919 + uint64_t(salt) * 31 + i * 13) % 1009) - 504;
}

const char* kindName(Kind k) {
  switch (k) {
    case Kind::kAllReduceSum: return "AllReduce(sum)";
    case Kind::kAllReduceMax: return "AllReduce(max)";
    case Kind::kAllGather: return "AllGather";
    case Kind::kReduceScatter: return "ReduceScatter";
    case Kind::kBroadcast: return "Broadcast";
    case Kind::kReduce: return "Reduce";
    case Kind::kAlltoAll: return "AlltoAll";
    case Kind::kSendRecv: return "Send/Recv ring";
  }
  return "?";
}

// Compares got with want(i) for i < n; fills *mismatch at the first difference.
template <typename Want>
void check(const std::vector<int32_t>& got, size_t n, Want want, const Op& op, std::string* mismatch) {
  for (size_t i = 0; i < n; ++i) {
    const int32_t w = want(i);
    if (got[i] != w) {
      *mismatch = describe(op) + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
                  std::to_string(w);
      return;
    }
  }
}

}  // namespace

Op OpStream::next() {
  Op op;
  op.kind = static_cast<Kind>(rng_() % kKinds);
  // Mostly small, sometimes up to 1 MiB per rank: the sizes where protocols and algorithms change.
  op.count = rng_() % 16 == 0 ? 1 + rng_() % (256 * 1024 / size_t(nranks_)) : 1 + rng_() % 4096;
  op.root = int(rng_() % unsigned(nranks_));
  op.salt = uint32_t(rng_());
  return op;
}

std::string describe(const Op& op) {
  return std::string(kindName(op.kind)) + " of " + std::to_string(op.count) + " int32 (root " +
         std::to_string(op.root) + ")";
}

ncclResult_t runAndCheck(const Op& op, ncclComm_t comm, int rank, int n, std::string* mismatch) {
  mismatch->clear();
  const size_t c = op.count;
  const bool blocks = op.kind == Kind::kAllGather || op.kind == Kind::kReduceScatter || op.kind == Kind::kAlltoAll;
  std::vector<int32_t> in(blocks && op.kind != Kind::kAllGather ? c * size_t(n) : c);
  std::vector<int32_t> out(blocks && op.kind != Kind::kReduceScatter ? c * size_t(n) : c, INT32_MIN);
  for (size_t i = 0; i < in.size(); ++i) in[i] = valueOf(rank, op.salt, i);
  auto sumOver = [&](size_t i) {
    int32_t s = 0;
    for (int r = 0; r < n; ++r) s += valueOf(r, op.salt, i);
    return s;
  };
  ncclResult_t res = ncclSuccess;
  switch (op.kind) {
    case Kind::kAllReduceSum:
      res = ncclAllReduce(in.data(), out.data(), c, ncclInt32, ncclSum, comm, nullptr);
      if (res == ncclSuccess) check(out, c, sumOver, op, mismatch);
      break;
    case Kind::kAllReduceMax:
      res = ncclAllReduce(in.data(), out.data(), c, ncclInt32, ncclMax, comm, nullptr);
      if (res == ncclSuccess)
        check(
            out, c,
            [&](size_t i) {
              int32_t m = INT32_MIN;
              for (int r = 0; r < n; ++r) m = std::max(m, valueOf(r, op.salt, i));
              return m;
            },
            op, mismatch);
      break;
    case Kind::kAllGather:
      res = ncclAllGather(in.data(), out.data(), c, ncclInt32, comm, nullptr);
      if (res == ncclSuccess)
        check(
            out, c * size_t(n), [&](size_t i) { return valueOf(int(i / c), op.salt, i % c); }, op, mismatch);
      break;
    case Kind::kReduceScatter:
      res = ncclReduceScatter(in.data(), out.data(), c, ncclInt32, ncclSum, comm, nullptr);
      if (res == ncclSuccess)
        check(
            out, c, [&](size_t i) { return sumOver(size_t(rank) * c + i); }, op, mismatch);
      break;
    case Kind::kBroadcast:
      res = ncclBroadcast(in.data(), out.data(), c, ncclInt32, op.root, comm, nullptr);
      if (res == ncclSuccess)
        check(
            out, c, [&](size_t i) { return valueOf(op.root, op.salt, i); }, op, mismatch);
      break;
    case Kind::kReduce:
      res = ncclReduce(in.data(), out.data(), c, ncclInt32, ncclSum, op.root, comm, nullptr);
      if (res == ncclSuccess && rank == op.root) check(out, c, sumOver, op, mismatch);
      break;
    case Kind::kAlltoAll:
      res = ncclAlltoAll(in.data(), out.data(), c, ncclInt32, comm, nullptr);
      // Block p of this rank's output is block `rank` of rank p's input.
      if (res == ncclSuccess)
        check(
            out, c * size_t(n), [&](size_t i) { return valueOf(int(i / c), op.salt, size_t(rank) * c + i % c); }, op,
            mismatch);
      break;
    case Kind::kSendRecv: {
      const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
      res = ncclGroupStart();
      if (res == ncclSuccess) res = ncclSend(in.data(), c, ncclInt32, next, comm, nullptr);
      if (res == ncclSuccess) res = ncclRecv(out.data(), c, ncclInt32, prev, comm, nullptr);
      const ncclResult_t end = ncclGroupEnd();
      if (res == ncclSuccess) res = end;
      if (res == ncclSuccess)
        check(
            out, c, [&](size_t i) { return valueOf(prev, op.salt, i); }, op, mismatch);
      break;
    }
  }
  return res;
}

}  // namespace soak
