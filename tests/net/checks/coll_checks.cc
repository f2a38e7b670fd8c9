// Every collective of the API, for float32 and int32, every size of countsFor(), in place and out
// of place (AlltoAll only out of place: the API rejects in-place AlltoAll).
#include <algorithm>
#include <type_traits>

#include "checks.h"

namespace netcheck {

std::vector<size_t> countsFor(const Ctx& ctx, size_t elemBytes) {
  std::vector<size_t> out;
  for (size_t c :
       {size_t(0), size_t(1), size_t(7), size_t(1000), (size_t(1) << 20) / elemBytes, (size_t(16) << 20) / elemBytes})
    if (c * elemBytes <= ctx.maxBytes) out.push_back(c);
  return out;
}

namespace {

// Buffers that hold one block per rank (AllGather's output, ReduceScatter's input, ...) keep the
// big sizes at their total: a per-rank block of count/nranks (at least 1) elements.
size_t blockCount(const Ctx& ctx, size_t count, size_t elemBytes) {
  if (count * elemBytes < kHeavyBytes) return count;
  return std::max<size_t>(1, count / size_t(ctx.nranks));
}

template <typename T>
std::string label(const char* coll, const char* what, size_t count, bool inPlace) {
  return std::string(coll) + " " + what + " " + TypeInfo<T>::kName + " count=" + std::to_string(count) +
         (inPlace ? " in-place" : " out-of-place");
}

template <typename T>
bool heavySkip(size_t count, ncclRedOp_t op) {
  return count * sizeof(T) > kHeavyBytes && (!std::is_same_v<T, float> || op != ncclSum);
}

template <typename T>
void allReduce(Ctx& ctx, size_t count, ncclRedOp_t op, bool inPlace) {
  if (heavySkip<T>(count, op)) return;
  const uint32_t seed = ctx.nextSeed++;
  const int n = ctx.nranks;
  Buf<T> in(count), out(count);
  for (size_t i = 0; i < count; ++i) in.v[i] = input<T>(op, n, seed, ctx.rank, i);
  Buf<T>& dst = inPlace ? in : out;
  const std::string name = label<T>("allreduce", opName(op), count, inPlace);
  ctx.rep->step(name);
  ctx.rep->call(ncclAllReduce(in.data(), dst.data(), count, TypeInfo<T>::kType, op, ctx.comm, nullptr), name.c_str(),
                ctx.comm);
  verify(ctx, name, dst, 0, count, op, [&](size_t i) { return reduced<T>(op, n, seed, i); });
}

template <typename T>
void broadcast(Ctx& ctx, size_t count, bool inPlace) {
  if (heavySkip<T>(count, ncclSum)) return;
  const uint32_t seed = ctx.nextSeed++;
  const int root = int(seed % uint32_t(ctx.nranks));
  Buf<T> in(count), out(count);
  if (ctx.rank == root)
    for (size_t i = 0; i < count; ++i) in.v[i] = input<T>(ncclSum, ctx.nranks, seed, root, i);
  Buf<T>& dst = inPlace ? in : out;
  const std::string name = label<T>("broadcast", ("root=" + std::to_string(root)).c_str(), count, inPlace);
  ctx.rep->step(name);
  ctx.rep->call(ncclBroadcast(in.data(), dst.data(), count, TypeInfo<T>::kType, root, ctx.comm, nullptr), name.c_str(),
                ctx.comm);
  verify(ctx, name, dst, 0, count, ncclSum, [&](size_t i) { return input<T>(ncclSum, ctx.nranks, seed, root, i); });
}

template <typename T>
void reduce(Ctx& ctx, size_t count, ncclRedOp_t op, bool inPlace) {
  if (heavySkip<T>(count, op)) return;
  const uint32_t seed = ctx.nextSeed++;
  const int n = ctx.nranks;
  const int root = int(seed % uint32_t(n));
  Buf<T> in(count), out(count);
  for (size_t i = 0; i < count; ++i) in.v[i] = input<T>(op, n, seed, ctx.rank, i);
  Buf<T>& dst = inPlace ? in : out;
  const std::string name = label<T>("reduce", (std::string(opName(op)) + " root=" + std::to_string(root)).c_str(),
                                    count, inPlace);
  ctx.rep->step(name);
  ctx.rep->call(ncclReduce(in.data(), dst.data(), count, TypeInfo<T>::kType, op, root, ctx.comm, nullptr), name.c_str(),
                ctx.comm);
  if (ctx.rank == root)
    verify(ctx, name, dst, 0, count, op, [&](size_t i) { return reduced<T>(op, n, seed, i); });
  else if (!inPlace)  // only the root's receive buffer may be written
    verify(ctx, name, out, 0, count, ncclSum, [](size_t) { return Buf<T>::kSentinel; });
  else
    ctx.rep->pass(name);
}

template <typename T>
void allGather(Ctx& ctx, size_t total, bool inPlace) {
  if (heavySkip<T>(total, ncclSum)) return;
  const uint32_t seed = ctx.nextSeed++;
  const int n = ctx.nranks;
  const size_t c = blockCount(ctx, total, sizeof(T));
  Buf<T> in(c), out(c * n);
  T* src = inPlace ? out.data() + size_t(ctx.rank) * c : in.data();
  for (size_t i = 0; i < c; ++i) src[i] = input<T>(ncclSum, n, seed, ctx.rank, i);
  const std::string name = label<T>("allgather", "", c, inPlace);
  ctx.rep->step(name);
  ctx.rep->call(ncclAllGather(src, out.data(), c, TypeInfo<T>::kType, ctx.comm, nullptr), name.c_str(), ctx.comm);
  verify(ctx, name, out, 0, c * n, ncclSum,
         [&](size_t j) { return input<T>(ncclSum, n, seed, int(j / (c ? c : 1)), j % (c ? c : 1)); });
}

template <typename T>
void reduceScatter(Ctx& ctx, size_t total, ncclRedOp_t op, bool inPlace) {
  if (heavySkip<T>(total, op)) return;
  const uint32_t seed = ctx.nextSeed++;
  const int n = ctx.nranks;
  const size_t c = blockCount(ctx, total, sizeof(T));
  Buf<T> in(c * n), out(c);
  for (size_t j = 0; j < c * n; ++j) in.v[j] = input<T>(op, n, seed, ctx.rank, j);
  const size_t mine = size_t(ctx.rank) * c;
  const std::string name = label<T>("reducescatter", opName(op), c, inPlace);
  ctx.rep->step(name);
  if (inPlace) {
    ctx.rep->call(ncclReduceScatter(in.data(), in.data() + mine, c, TypeInfo<T>::kType, op, ctx.comm, nullptr),
                  name.c_str(), ctx.comm);
    verify(ctx, name, in, mine, c, op, [&](size_t i) { return reduced<T>(op, n, seed, mine + i); });
  } else {
    ctx.rep->call(ncclReduceScatter(in.data(), out.data(), c, TypeInfo<T>::kType, op, ctx.comm, nullptr), name.c_str(),
                  ctx.comm);
    verify(ctx, name, out, 0, c, op, [&](size_t i) { return reduced<T>(op, n, seed, mine + i); });
  }
}

// Block j of rank r's send buffer is input(seed, r, j*c + i): the receiver knows where each came from.
template <typename T>
void alltoall(Ctx& ctx, size_t total) {
  if (heavySkip<T>(total, ncclSum)) return;
  const uint32_t seed = ctx.nextSeed++;
  const int n = ctx.nranks;
  const size_t c = blockCount(ctx, total, sizeof(T));
  Buf<T> in(c * n), out(c * n);
  for (size_t j = 0; j < c * n; ++j) in.v[j] = input<T>(ncclSum, n, seed, ctx.rank, j);
  const std::string name = label<T>("alltoall", "", c, false);
  ctx.rep->step(name);
  ctx.rep->call(ncclAlltoAll(in.data(), out.data(), c, TypeInfo<T>::kType, ctx.comm, nullptr), name.c_str(), ctx.comm);
  const size_t cc = c ? c : 1;
  verify(ctx, name, out, 0, c * n, ncclSum,
         [&](size_t j) { return input<T>(ncclSum, n, seed, int(j / cc), size_t(ctx.rank) * c + j % cc); });
}

template <typename T>
void gather(Ctx& ctx, size_t total, bool inPlace) {
  if (heavySkip<T>(total, ncclSum)) return;
  const uint32_t seed = ctx.nextSeed++;
  const int n = ctx.nranks;
  const int root = int(seed % uint32_t(n));
  const size_t c = blockCount(ctx, total, sizeof(T));
  Buf<T> in(c), out(c * n);
  // In place only means something at the root: its contribution already sits in its block.
  T* src = inPlace && ctx.rank == root ? out.data() + size_t(root) * c : in.data();
  for (size_t i = 0; i < c; ++i) src[i] = input<T>(ncclSum, n, seed, ctx.rank, i);
  const std::string name = label<T>("gather", ("root=" + std::to_string(root)).c_str(), c, inPlace);
  ctx.rep->step(name);
  ctx.rep->call(ncclGather(src, out.data(), c, TypeInfo<T>::kType, root, ctx.comm, nullptr), name.c_str(), ctx.comm);
  const size_t cc = c ? c : 1;
  if (ctx.rank == root)
    verify(ctx, name, out, 0, c * n, ncclSum,
           [&](size_t j) { return input<T>(ncclSum, n, seed, int(j / cc), j % cc); });
  else
    ctx.rep->pass(name);
}

template <typename T>
void scatter(Ctx& ctx, size_t total, bool inPlace) {
  if (heavySkip<T>(total, ncclSum)) return;
  const uint32_t seed = ctx.nextSeed++;
  const int n = ctx.nranks;
  const int root = int(seed % uint32_t(n));
  const size_t c = blockCount(ctx, total, sizeof(T));
  Buf<T> in(c * n), out(c);
  if (ctx.rank == root)
    for (size_t j = 0; j < c * n; ++j) in.v[j] = input<T>(ncclSum, n, seed, root, j);
  const size_t mine = size_t(ctx.rank) * c;
  const bool rootInPlace = inPlace && ctx.rank == root;
  const std::string name = label<T>("scatter", ("root=" + std::to_string(root)).c_str(), c, inPlace);
  ctx.rep->step(name);
  T* dst = rootInPlace ? in.data() + mine : out.data();
  ctx.rep->call(ncclScatter(in.data(), dst, c, TypeInfo<T>::kType, root, ctx.comm, nullptr), name.c_str(), ctx.comm);
  verify(ctx, name, rootInPlace ? in : out, rootInPlace ? mine : 0, c, ncclSum,
         [&](size_t i) { return input<T>(ncclSum, n, seed, root, mine + i); });
}

template <typename T>
void allCollectives(Ctx& ctx) {
  for (size_t count : countsFor(ctx, sizeof(T))) {
    for (bool inPlace : {false, true}) {
      for (ncclRedOp_t op : {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg}) allReduce<T>(ctx, count, op, inPlace);
      broadcast<T>(ctx, count, inPlace);
      for (ncclRedOp_t op : {ncclSum, ncclMax}) reduce<T>(ctx, count, op, inPlace);
      allGather<T>(ctx, count, inPlace);
      for (ncclRedOp_t op : {ncclSum, ncclMin}) reduceScatter<T>(ctx, count, op, inPlace);
      if (!inPlace) alltoall<T>(ctx, count);
      gather<T>(ctx, count, inPlace);
      scatter<T>(ctx, count, inPlace);
    }
  }
}

}  // namespace

void runCollectiveChecks(Ctx& ctx) {
  allCollectives<float>(ctx);
  allCollectives<int32_t>(ctx);
}

}  // namespace netcheck
