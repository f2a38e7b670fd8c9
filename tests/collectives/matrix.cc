// The correctness matrix: every collective x datatype x reduction x in-place/out-of-place x rank
// count x element count, trimmed to what 2 cores can run in a few minutes (matrix_test.cc runs it).
#include "matrix.h"

#include "dtypes.h"

namespace weft_test {

std::string matrixCaseName(const MatrixParam& p) {
  return std::string(modeName(p.mode)) + "_" + collName(p.coll) + "_n" + std::to_string(p.nranks) + "_" +
         dtypeInfo(p.dtype).name + "_" + p.tag;
}

void PrintTo(const MatrixParam& p, std::ostream* os) { *os << matrixCaseName(p); }

namespace {

const std::vector<size_t> kSmallCounts = {0, 1, 7, 1023};
constexpr size_t kBigCount = 1000003;

// One datatype of each element size: enough for collectives that only move bytes.
const std::vector<ncclDataType_t> kOneTypePerSize = {ncclInt8, ncclFloat16, ncclFloat32, ncclFloat64};
// The reducing types worth repeating at larger rank counts (every format and signedness family).
const std::vector<ncclDataType_t> kReduceTypes = {ncclUint8,   ncclInt32,    ncclInt64,      ncclFloat16,   ncclFloat32,
                                                  ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};

void addFull(std::vector<MatrixParam>* out, Mode mode, int nranks, const std::vector<ncclDataType_t>& dataTypes,
             const std::vector<ncclDataType_t>& reduceTypes, const std::vector<Red>& reds,
             const std::vector<size_t>& counts) {
  for (Coll coll : allColls()) {
    for (ncclDataType_t dt : collReduces(coll) ? reduceTypes : dataTypes) {
      out->push_back({mode, coll, nranks, dt, reds, counts, "small"});
    }
  }
}

// Weft's uneven collectives (weftAllGatherv, weftReduceScatterv) with the skewed layout of
// vcollLayout: one large block, empty ones, small ones, gaps.
void addUneven(std::vector<MatrixParam>* out, Mode mode, int nranks, const std::vector<ncclDataType_t>& dataTypes,
               const std::vector<ncclDataType_t>& reduceTypes, const std::vector<Red>& reds,
               const std::vector<size_t>& counts) {
  for (Coll coll : unevenColls())
    for (ncclDataType_t dt : collReduces(coll) ? reduceTypes : dataTypes)
      out->push_back({mode, coll, nranks, dt, reds, counts, "small"});
}

void addBig(std::vector<MatrixParam>* out, Mode mode, Coll coll, int nranks, ncclDataType_t dt, Red red) {
  out->push_back({mode, coll, nranks, dt, {red}, {kBigCount}, "big"});
}

std::vector<MatrixParam> threadsMatrix() {
  std::vector<MatrixParam> v;
  // Every datatype x every op at small counts for 1 to 5 ranks.
  for (int n : {1, 2, 3, 4, 5}) addFull(&v, Mode::kThreads, n, allDtypes(), allDtypes(), allReds(), kSmallCounts);
  // 8 ranks on 2 cores: every format family and op, one type per size for data movement.
  addFull(&v, Mode::kThreads, 8, kOneTypePerSize, kReduceTypes, allReds(), kSmallCounts);
  // A prime and a larger rank count, on a few combinations.
  for (int n : {7, 16})
    addFull(&v, Mode::kThreads, n, {ncclInt8}, {ncclFloat32, ncclBfloat16}, {Red::kSum, Red::kAvg, Red::kPreMulDev},
            {0, 7, 1023});
  // A million and three elements: float sum and int32 max everywhere but 8 ranks x all, and
  // every collective once.
  for (int n : {2, 3, 4, 5, 8}) addBig(&v, Mode::kThreads, Coll::kAllReduce, n, ncclFloat32, Red::kSum);
  for (int n : {2, 3, 4, 5}) addBig(&v, Mode::kThreads, Coll::kAllReduce, n, ncclInt32, Red::kMax);
  addBig(&v, Mode::kThreads, Coll::kAllReduce, 4, ncclBfloat16, Red::kAvg);
  addBig(&v, Mode::kThreads, Coll::kAllReduce, 3, ncclFloat8e4m3, Red::kPreMulDev);
  addBig(&v, Mode::kThreads, Coll::kReduceScatter, 3, ncclFloat32, Red::kSum);
  addBig(&v, Mode::kThreads, Coll::kReduceScatter, 5, ncclInt32, Red::kMax);
  addBig(&v, Mode::kThreads, Coll::kReduce, 3, ncclFloat64, Red::kSum);
  addBig(&v, Mode::kThreads, Coll::kReduce, 4, ncclInt32, Red::kMax);
  addBig(&v, Mode::kThreads, Coll::kAllGather, 4, ncclBfloat16, Red::kSum);
  addBig(&v, Mode::kThreads, Coll::kBroadcast, 5, ncclInt8, Red::kSum);
  addBig(&v, Mode::kThreads, Coll::kBcast, 2, ncclUint8, Red::kSum);
  addBig(&v, Mode::kThreads, Coll::kAlltoAll, 3, ncclFloat32, Red::kSum);
  addBig(&v, Mode::kThreads, Coll::kGather, 3, ncclFloat16, Red::kSum);
  addBig(&v, Mode::kThreads, Coll::kScatter, 3, ncclFloat16, Red::kSum);
  addBig(&v, Mode::kThreads, Coll::kAlltoAllv, 3, ncclInt32, Red::kSum);
  // The uneven collectives: a type per size, the reducing families, every op, 1 to 5 and 8 ranks.
  const std::vector<ncclDataType_t> unevenReduceTypes = {ncclUint8, ncclInt32, ncclFloat32, ncclBfloat16,
                                                         ncclFloat8e4m3};
  for (int n : {1, 2, 3, 4, 5})
    addUneven(&v, Mode::kThreads, n, kOneTypePerSize, unevenReduceTypes, allReds(), kSmallCounts);
  addUneven(&v, Mode::kThreads, 8, {ncclFloat32}, {ncclFloat32, ncclInt64}, {Red::kSum, Red::kAvg, Red::kPreMulDev},
            kSmallCounts);
  addBig(&v, Mode::kThreads, Coll::kAllGatherv, 4, ncclFloat32, Red::kSum);
  addBig(&v, Mode::kThreads, Coll::kReduceScatterv, 3, ncclFloat32, Red::kSum);
  addBig(&v, Mode::kThreads, Coll::kReduceScatterv, 5, ncclInt32, Red::kMax);
  // One thread driving every rank (ncclCommInitAll + groups), as single-process multi-GPU code does.
  for (int n : {2, 3, 4})
    addFull(&v, Mode::kClique, n, {ncclInt8, ncclFloat32}, {ncclFloat32, ncclBfloat16, ncclInt8, ncclFloat8e5m2},
            {Red::kSum, Red::kMin, Red::kAvg, Red::kPreMulImm, Red::kPreMulDev}, {0, 1, 1023});
  addBig(&v, Mode::kClique, Coll::kAllReduce, 3, ncclFloat32, Red::kSum);
  addBig(&v, Mode::kClique, Coll::kReduceScatter, 2, ncclInt32, Red::kMax);
  addUneven(&v, Mode::kClique, 3, {ncclInt8}, {ncclFloat32}, {Red::kSum, Red::kPreMulImm, Red::kPreMulDev}, {0, 1023});
  return v;
}

std::vector<MatrixParam> procsMatrix() {
  std::vector<MatrixParam> v;
  for (int n : {2, 3}) addFull(&v, Mode::kProcs, n, kOneTypePerSize, allDtypes(), allReds(), kSmallCounts);
  for (int n : {4, 5})
    addFull(&v, Mode::kProcs, n, {ncclInt8, ncclFloat64}, {ncclInt32, ncclFloat32, ncclBfloat16, ncclFloat8e4m3},
            {Red::kSum, Red::kProd, Red::kMax, Red::kAvg, Red::kPreMulDev}, kSmallCounts);
  addFull(&v, Mode::kProcs, 8, {ncclFloat16}, {ncclFloat32, ncclInt64}, {Red::kSum, Red::kMin, Red::kPreMulImm},
          {1, 1023});
  for (int n : {2, 3, 4, 8}) addBig(&v, Mode::kProcs, Coll::kAllReduce, n, ncclFloat32, Red::kSum);
  for (int n : {3, 5}) addBig(&v, Mode::kProcs, Coll::kAllReduce, n, ncclInt32, Red::kMax);
  addBig(&v, Mode::kProcs, Coll::kReduceScatter, 2, ncclFloat32, Red::kSum);
  addBig(&v, Mode::kProcs, Coll::kReduce, 3, ncclBfloat16, Red::kSum);
  addBig(&v, Mode::kProcs, Coll::kBroadcast, 3, ncclInt8, Red::kSum);
  addBig(&v, Mode::kProcs, Coll::kAllGather, 3, ncclFloat64, Red::kSum);
  addBig(&v, Mode::kProcs, Coll::kAlltoAll, 3, ncclFloat16, Red::kSum);
  addBig(&v, Mode::kProcs, Coll::kAlltoAllv, 4, ncclInt8, Red::kSum);
  addBig(&v, Mode::kProcs, Coll::kGather, 4, ncclInt32, Red::kSum);
  addBig(&v, Mode::kProcs, Coll::kScatter, 2, ncclFloat32, Red::kSum);
  for (int n : {2, 3, 4})
    addUneven(&v, Mode::kProcs, n, {ncclFloat16}, {ncclFloat32, ncclInt32},
              {Red::kSum, Red::kMax, Red::kAvg, Red::kPreMulDev}, kSmallCounts);
  addBig(&v, Mode::kProcs, Coll::kAllGatherv, 3, ncclFloat64, Red::kSum);
  addBig(&v, Mode::kProcs, Coll::kReduceScatterv, 2, ncclFloat32, Red::kSum);
  return v;
}

}  // namespace

const std::vector<MatrixParam>& matrixFor(Mode tier) {
  if (tier == Mode::kProcs) {
    static const std::vector<MatrixParam> procs = procsMatrix();
    return procs;
  }
  static const std::vector<MatrixParam> threads = threadsMatrix();
  return threads;
}

}  // namespace weft_test
