// Weft's complex datatypes (weftComplex64, weftComplex128 in weft/weft.h) through every collective:
// sum, product, average and PreMulSum (host and device scalars) of the reducing ones, and the data
// movement of the others, checked against an exact reference; and the refusals (ncclMax/ncclMin,
// values that are not datatypes). The inputs are Gaussian integers small enough that every sum and
// product is exact in float whatever order an algorithm folds the ranks in, and an average is one
// correctly rounded division of that exact sum, so the reference knows every bit but the sign of
// a zero (compared by value). Every rank's AllReduce results must also be the same bits (digests).
// The ringonly/tree/ddaflat/ddatree/smallfifo variants (variants.cc) run it with each algorithm.
#include <gtest/gtest.h>

#include <complex>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

// A Gaussian integer, the reference's exact arithmetic.
struct Gauss {
  int64_t re = 0, im = 0;
  Gauss operator+(Gauss o) const { return {re + o.re, im + o.im}; }
  Gauss operator*(Gauss o) const { return {re * o.re - im * o.im, re * o.im + im * o.re}; }
};

// Parts in [-4, 4] for sums; in [-1, 2] for products (|z| <= sqrt(8), so 8 ranks' product has
// parts below 2^12: exact in float).
Gauss sumInput(int rank, size_t i) {
  return {static_cast<int64_t>((rank * 7 + i * 3) % 9) - 4, static_cast<int64_t>((rank * 5 + i * 11 + 4) % 9) - 4};
}
Gauss prodInput(int rank, size_t i) {
  return {static_cast<int64_t>((rank + 2 * i) % 4) - 1, static_cast<int64_t>((rank * 3 + i + 1) % 4) - 1};
}
// A rank's PreMulSum scalar: never zero, different on neighbouring ranks.
Gauss scalarOf(int rank) { return {rank % 3 - 1, 1 + rank % 2}; }

template <typename T>
std::complex<T> toComplex(Gauss g) {
  return {static_cast<T>(g.re), static_cast<T>(g.im)};
}

template <typename T>
ncclDataType_t dtypeOf() {
  return sizeof(T) == 4 ? weftComplex64 : weftComplex128;
}

template <typename T>
const char* nameOf() {
  return sizeof(T) == 4 ? "complex64" : "complex128";
}

uint64_t hashBytes(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
  return h;
}

// Element by element against want; reports the first difference. Values, not bits: the sign of a
// zero sum depends on the fold order, which the reference does not model.
template <typename T>
bool expectValues(RankCtx& ctx, const std::string& what, const std::complex<T>* got,
                  const std::vector<std::complex<T>>& want) {
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i].real() != want[i].real() || got[i].imag() != want[i].imag()) {
      ctx.failf("%s: rank %d element %zu is (%.9g, %.9g), expected (%.9g, %.9g)", what.c_str(), ctx.rank, i,
                static_cast<double>(got[i].real()), static_cast<double>(got[i].imag()),
                static_cast<double>(want[i].real()), static_cast<double>(want[i].imag()));
      return false;
    }
  return true;
}

enum class Red { kSum, kProd, kAvg, kPreMulHost, kPreMulDevice };
const char* redName(Red r) {
  switch (r) {
    case Red::kSum: return "sum";
    case Red::kProd: return "prod";
    case Red::kAvg: return "avg";
    case Red::kPreMulHost: return "premulsum(host scalar)";
    case Red::kPreMulDevice: return "premulsum(device scalar)";
  }
  return "?";
}

// Every rank's input for red, and the exact reduction of element i over n ranks.
Gauss inputFor(Red red, int rank, size_t i) { return red == Red::kProd ? prodInput(rank, i) : sumInput(rank, i); }

template <typename T>
std::complex<T> reduced(Red red, int n, size_t i) {
  Gauss acc = red == Red::kProd ? Gauss{1, 0} : Gauss{0, 0};
  for (int r = 0; r < n; ++r) {
    const Gauss x = inputFor(red, r, i);
    if (red == Red::kProd)
      acc = acc * x;
    else
      acc = acc + (red == Red::kPreMulHost || red == Red::kPreMulDevice ? x * scalarOf(r) : x);
  }
  std::complex<T> v = toComplex<T>(acc);
  // The exact sum divided once, in T: what Weft's average computes.
  if (red == Red::kAvg) v = {v.real() / static_cast<T>(n), v.imag() / static_cast<T>(n)};
  return v;
}

// The op for red on this rank, creating a PreMulSum op when asked. `scalar` must outlive the call
// (a device scalar is read when the collective runs).
template <typename T>
bool opFor(RankCtx& ctx, Red red, std::complex<T>* scalar, ncclRedOp_t* op) {
  switch (red) {
    case Red::kSum: *op = ncclSum; return true;
    case Red::kProd: *op = ncclProd; return true;
    case Red::kAvg: *op = ncclAvg; return true;
    default: break;
  }
  const bool device = red == Red::kPreMulDevice;
  *scalar = device ? std::complex<T>(99, 99) : toComplex<T>(scalarOf(ctx.rank));
  if (!ctx.ok(ncclRedOpCreatePreMulSum(op, scalar, dtypeOf<T>(), device ? ncclScalarDevice : ncclScalarHostImmediate,
                                       ctx.comm),
              "ncclRedOpCreatePreMulSum", ctx.comm))
    return false;
  // A host scalar was copied at creation; a device scalar is read when the collective runs.
  *scalar = device ? toComplex<T>(scalarOf(ctx.rank)) : std::complex<T>(99, 99);
  return true;
}

void destroyOp(RankCtx& ctx, Red red, ncclRedOp_t op) {
  if (red == Red::kPreMulHost || red == Red::kPreMulDevice)
    ctx.ok(ncclRedOpDestroy(op, ctx.comm), "ncclRedOpDestroy", ctx.comm);
}

enum class RCall { kAllReduce, kAllReduceInPlace, kReduce, kReduceScatter, kReduceScatterv };
const char* rcallName(RCall c) {
  switch (c) {
    case RCall::kAllReduce: return "AllReduce";
    case RCall::kAllReduceInPlace: return "AllReduce in place";
    case RCall::kReduce: return "Reduce";
    case RCall::kReduceScatter: return "ReduceScatter";
    case RCall::kReduceScatterv: return "weftReduceScatterv";
  }
  return "?";
}

// One reducing call of `count` elements per rank's result, checked against the reference.
template <typename T>
void runReduce(RankCtx& ctx, RCall call, Red red, size_t count) {
  using C = std::complex<T>;
  const int n = ctx.nranks, r = ctx.rank;
  const std::string what = std::string(rcallName(call)) + " " + nameOf<T>() + " " + redName(red) + " count " +
                           std::to_string(count) + ", " + std::to_string(n) + " ranks";
  ctx.step(what);
  // ReduceScatter(v): the vector is n blocks; weftReduceScatterv gives rank q count - q elements.
  std::vector<size_t> counts(n, count), displs(n, 0);
  if (call == RCall::kReduceScatterv)
    for (int q = 0; q < n; ++q) counts[q] = count > static_cast<size_t>(q) ? count - q : 0;
  for (int q = 1; q < n; ++q) displs[q] = displs[q - 1] + counts[q - 1];
  const bool scatters = call == RCall::kReduceScatter || call == RCall::kReduceScatterv;
  const size_t total = scatters ? displs[n - 1] + counts[n - 1] : count;
  std::vector<C> send(total), recv(total + 1, C(-7, -7));
  for (size_t i = 0; i < total; ++i) send[i] = toComplex<T>(inputFor(red, r, i));
  C scalar;
  ncclRedOp_t op;
  if (!opFor(ctx, red, &scalar, &op)) return;
  const ncclDataType_t dt = dtypeOf<T>();
  const int root = n - 1;
  C* out = call == RCall::kAllReduceInPlace ? send.data() : recv.data();
  ncclResult_t res = ncclInternalError;
  switch (call) {
    case RCall::kAllReduce:
    case RCall::kAllReduceInPlace: res = ncclAllReduce(send.data(), out, count, dt, op, ctx.comm, nullptr); break;
    case RCall::kReduce: res = ncclReduce(send.data(), out, count, dt, op, root, ctx.comm, nullptr); break;
    case RCall::kReduceScatter: res = ncclReduceScatter(send.data(), out, count, dt, op, ctx.comm, nullptr); break;
    case RCall::kReduceScatterv:
      res = weftReduceScatterv(send.data(), out, counts.data(), displs.data(), dt, op, ctx.comm, nullptr);
      break;
  }
  destroyOp(ctx, red, op);
  if (!ctx.ok(res, what.c_str(), ctx.comm)) return;
  if (call == RCall::kReduce && r != root) return;
  const size_t mine = scatters ? counts[r] : count, from = scatters ? displs[r] : 0;
  std::vector<C> want(mine);
  for (size_t i = 0; i < mine; ++i) want[i] = reduced<T>(red, n, from + i);
  expectValues<T>(ctx, what, out, want);
  if (call != RCall::kAllReduceInPlace && recv[mine] != C(-7, -7))
    ctx.failf("%s: rank %d: the element after the result was written", what.c_str(), r);
  if (call == RCall::kAllReduce || call == RCall::kAllReduceInPlace) ctx.digest(what, hashBytes(out, mine * sizeof(C)));
}

template <typename T>
void runAllReductions(RankCtx& ctx) {
  // 1 element, an odd count, and one that takes many FIFO slots (3001 x 16 bytes for complex128).
  for (size_t count : {size_t(1), size_t(37), size_t(3001)}) {
    for (Red red : {Red::kSum, Red::kProd, Red::kAvg, Red::kPreMulHost, Red::kPreMulDevice})
      runReduce<T>(ctx, RCall::kAllReduce, red, count);
    runReduce<T>(ctx, RCall::kAllReduceInPlace, Red::kProd, count);
    runReduce<T>(ctx, RCall::kReduce, Red::kProd, count);
    runReduce<T>(ctx, RCall::kReduce, Red::kPreMulDevice, count);
    runReduce<T>(ctx, RCall::kReduceScatter, Red::kAvg, count);
    runReduce<T>(ctx, RCall::kReduceScatter, Red::kSum, count);
    runReduce<T>(ctx, RCall::kReduceScatterv, Red::kPreMulHost, count);
    runReduce<T>(ctx, RCall::kReduceScatterv, Red::kProd, count);
  }
}

TEST(Complex, ReductionsComplex64) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) { runAllReductions<float>(ctx); }));
}

TEST(Complex, ReductionsComplex128) {
  EXPECT_RUN_OK(runRanks(kTier, 4, [](RankCtx& ctx) { runAllReductions<double>(ctx); }));
}

// Element i of rank r's data for the moving collectives: distinct per (rank, element, block) and
// exact in float for the counts here.
template <typename T>
std::complex<T> moved(int rank, size_t block, size_t i) {
  return {static_cast<T>(rank * 100000 + static_cast<int>(block) * 10000 + static_cast<int>(i)),
          -static_cast<T>(static_cast<int>(i) * 3 + rank)};
}

template <typename T>
void runMoves(RankCtx& ctx, size_t count) {
  using C = std::complex<T>;
  const int n = ctx.nranks, r = ctx.rank;
  const ncclDataType_t dt = dtypeOf<T>();
  const std::string tag = std::string(" ") + nameOf<T>() + " count " + std::to_string(count);
  const C junk(-7, -7);
  std::vector<C> mine(count), all(count * n, junk), want(count * n);
  for (size_t i = 0; i < count; ++i) mine[i] = moved<T>(r, 0, i);
  auto check = [&](const char* call, const C* got, const std::vector<C>& w) {
    expectValues<T>(ctx, call + tag, got, w);
  };

  ctx.step("Broadcast" + tag);
  const int bRoot = 1 % n;
  std::vector<C> b = r == bRoot ? mine : std::vector<C>(count, junk);
  if (ctx.ok(ncclBroadcast(b.data(), b.data(), count, dt, bRoot, ctx.comm, nullptr), "Broadcast", ctx.comm)) {
    for (size_t i = 0; i < count; ++i) want[i] = moved<T>(bRoot, 0, i);
    check("Broadcast", b.data(), std::vector<C>(want.begin(), want.begin() + count));
  }

  ctx.step("AllGather" + tag);
  for (int q = 0; q < n; ++q)
    for (size_t i = 0; i < count; ++i) want[q * count + i] = moved<T>(q, 0, i);
  if (ctx.ok(ncclAllGather(mine.data(), all.data(), count, dt, ctx.comm, nullptr), "AllGather", ctx.comm))
    check("AllGather", all.data(), want);

  ctx.step("Gather" + tag);
  std::fill(all.begin(), all.end(), junk);
  if (ctx.ok(ncclGather(mine.data(), all.data(), count, dt, 0, ctx.comm, nullptr), "Gather", ctx.comm) && r == 0)
    check("Gather", all.data(), want);

  // AlltoAll: rank r's block q goes to rank q as its block r.
  ctx.step("AlltoAll" + tag);
  std::vector<C> blocks(count * n), got(count * n, junk);
  for (int q = 0; q < n; ++q)
    for (size_t i = 0; i < count; ++i) {
      blocks[q * count + i] = moved<T>(r, q, i);
      want[q * count + i] = moved<T>(q, r, i);
    }
  if (ctx.ok(ncclAlltoAll(blocks.data(), got.data(), count, dt, ctx.comm, nullptr), "AlltoAll", ctx.comm))
    check("AlltoAll", got.data(), want);

  // AlltoAllv with the same blocks, rank q's block shortened by q elements.
  ctx.step("AlltoAllv" + tag);
  std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
  for (int q = 0; q < n; ++q) {
    sc[q] = count > static_cast<size_t>(q) ? count - q : 0;  // to q: my block q, shortened by q
    rc[q] = count > static_cast<size_t>(r) ? count - r : 0;  // from q: its block r, shortened by r
    sd[q] = rd[q] = q * count;
  }
  std::fill(got.begin(), got.end(), junk);
  if (ctx.ok(ncclAlltoAllv(blocks.data(), sc.data(), sd.data(), got.data(), rc.data(), rd.data(), dt, ctx.comm,
                           nullptr),
             "AlltoAllv", ctx.comm)) {
    std::vector<C> w(count * n, junk);
    for (int q = 0; q < n; ++q)
      for (size_t i = 0; i < rc[q]; ++i) w[q * count + i] = moved<T>(q, r, i);
    check("AlltoAllv", got.data(), w);
  }

  ctx.step("Scatter" + tag);
  const int sRoot = n - 1;
  std::vector<C> part(count, junk);
  if (ctx.ok(ncclScatter(blocks.data(), part.data(), count, dt, sRoot, ctx.comm, nullptr), "Scatter", ctx.comm)) {
    std::vector<C> w(count);
    for (size_t i = 0; i < count; ++i) w[i] = moved<T>(sRoot, r, i);
    check("Scatter", part.data(), w);
  }

  // Send/Recv: a ring shift inside one group.
  ctx.step("Send/Recv" + tag);
  std::fill(part.begin(), part.end(), junk);
  ctx.ok(ncclGroupStart(), "ncclGroupStart");
  ctx.ok(ncclSend(mine.data(), count, dt, (r + 1) % n, ctx.comm, nullptr), "ncclSend", ctx.comm);
  ctx.ok(ncclRecv(part.data(), count, dt, (r + n - 1) % n, ctx.comm, nullptr), "ncclRecv", ctx.comm);
  if (ctx.ok(ncclGroupEnd(), "ncclGroupEnd")) {
    std::vector<C> w(count);
    for (size_t i = 0; i < count; ++i) w[i] = moved<T>((r + n - 1) % n, 0, i);
    check("Send/Recv", part.data(), w);
  }

  // weftAllGatherv: rank q contributes count - q elements, packed in rank order.
  ctx.step("weftAllGatherv" + tag);
  std::vector<size_t> vc(n), vd(n, 0);
  for (int q = 0; q < n; ++q) vc[q] = count > static_cast<size_t>(q) ? count - q : 0;
  for (int q = 1; q < n; ++q) vd[q] = vd[q - 1] + vc[q - 1];
  std::fill(all.begin(), all.end(), junk);
  if (ctx.ok(weftAllGatherv(mine.data(), all.data(), vc.data(), vd.data(), dt, ctx.comm, nullptr), "weftAllGatherv",
             ctx.comm)) {
    std::vector<C> w(count * n, junk);
    for (int q = 0; q < n; ++q)
      for (size_t i = 0; i < vc[q]; ++i) w[vd[q] + i] = moved<T>(q, 0, i);
    check("weftAllGatherv", all.data(), w);
  }
}

TEST(Complex, DataMovement) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    for (size_t count : {size_t(1), size_t(2053)}) {
      runMoves<float>(ctx, count);
      runMoves<double>(ctx, count);
    }
  }));
}

// ncclMax/ncclMin on complex data, and values that are not datatypes, are argument errors that
// name the problem; the communicator stays usable.
TEST(Complex, OrderOpsAndUnknownTypesAreRefused) {
  EXPECT_RUN_OK(runRanks(kTier, 2, [](RankCtx& ctx) {
    std::vector<std::complex<double>> a(8, {1, 2}), b(8);
    for (ncclDataType_t dt : {weftComplex64, weftComplex128})
      for (ncclRedOp_t op : {ncclMax, ncclMin}) {
        const std::string what = std::string(op == ncclMax ? "max" : "min") + " on " +
                                 (dt == weftComplex64 ? "complex64" : "complex128");
        ctx.step(what);
        const size_t displs[2] = {0, 4}, counts[2] = {4, 4};
        const ncclResult_t calls[] = {
            ncclAllReduce(a.data(), b.data(), 4, dt, op, ctx.comm, nullptr),
            ncclReduce(a.data(), b.data(), 4, dt, op, 0, ctx.comm, nullptr),
            ncclReduceScatter(a.data(), b.data(), 2, dt, op, ctx.comm, nullptr),
            weftReduceScatterv(a.data(), b.data(), counts, displs, dt, op, ctx.comm, nullptr),
        };
        for (ncclResult_t res : calls) ctx.expect(res, ncclInvalidArgument, what.c_str(), ctx.comm);
        const std::string msg = lastError(ctx.comm);
        if (!mentionsAny(msg, {dt == weftComplex64 ? "complex64" : "complex128"}))
          ctx.failf("%s: the error does not name the datatype: %s", what.c_str(), msg.c_str());
      }
    // The gap after NCCL's types, the value after Weft's, and far out: all invalid.
    for (int v : {12, 13, 63, 66, 1000}) {
      const std::string what = "datatype " + std::to_string(v);
      const ncclDataType_t dt = static_cast<ncclDataType_t>(v);
      ctx.expect(ncclAllReduce(a.data(), b.data(), 4, dt, ncclSum, ctx.comm, nullptr), ncclInvalidArgument,
                 what.c_str(), ctx.comm);
      ctx.expect(ncclAllGather(a.data(), b.data(), 1, dt, ctx.comm, nullptr), ncclInvalidArgument, what.c_str(),
                 ctx.comm);
      ncclRedOp_t op;
      ctx.expect(ncclRedOpCreatePreMulSum(&op, a.data(), dt, ncclScalarHostImmediate, ctx.comm), ncclInvalidArgument,
                 what.c_str(), ctx.comm);
    }
    // A PreMulSum op created for one complex type does not serve the other.
    ncclRedOp_t op;
    if (ctx.ok(ncclRedOpCreatePreMulSum(&op, a.data(), weftComplex128, ncclScalarHostImmediate, ctx.comm),
               "ncclRedOpCreatePreMulSum", ctx.comm)) {
      ctx.expect(ncclAllReduce(a.data(), b.data(), 4, weftComplex64, op, ctx.comm, nullptr), ncclInvalidArgument,
                 "PreMulSum op of complex128 used on complex64", ctx.comm);
      ctx.ok(ncclRedOpDestroy(op, ctx.comm), "ncclRedOpDestroy", ctx.comm);
    }
    // Still usable: a complex128 sum of 4 elements, (1+2i) from both ranks.
    ctx.step("sum after the refusals");
    if (ctx.ok(ncclAllReduce(a.data(), b.data(), 4, weftComplex128, ncclSum, ctx.comm, nullptr), "AllReduce after",
               ctx.comm))
      expectValues<double>(ctx, "AllReduce after the refusals", b.data(), std::vector<std::complex<double>>(4, {2, 4}));
  }));
}

}  // namespace
}  // namespace weft_test
