// Weft perf tools: data types, reduction operators, deterministic input data and the host-side
// reference that validates a collective's output (the "#wrong" column).
//
// Every input element is a function of (seed, rank, index) only, so any rank can compute what any
// other rank sent and therefore what its own output must hold, without moving data.
//   - Copy collectives (AllGather, Broadcast, AlltoAll, Gather, Scatter, SendRecv, HyperCube) get
//     arbitrary bit patterns and are compared bit for bit.
//   - Reductions get small integers chosen per type, operator and rank count so that every partial
//     result is exact in the type: integer results are compared exactly (wrap-around arithmetic, as
//     the library does), floating-point results exactly as well, except for ncclAvg (a division)
//     and for rank counts so large that the sums leave the type's exact integers: those within a
//     per-type relative tolerance (float 1e-5, double 1e-12, half/bfloat16/fp8 eps * nranks).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"

namespace weftbench {

struct TypeDesc {
  ncclDataType_t type;
  const char* name;  // nccl-tests' spelling ("float", "half", "bfloat16", "f8e4m3", ...)
  size_t size;       // bytes per element
  bool isFloat;
  bool isSigned;    // floating-point types count as signed
  double exactInt;  // floats: every integer of magnitude <= exactInt is representable
  double eps;       // floats: 2^-mantissa_bits (spacing of values just above 1)
};

// All twelve NCCL types, in nccl-tests' order for "-d all".
const std::vector<TypeDesc>& allTypes();
const TypeDesc& typeDesc(ncclDataType_t type);

// The reduction a test runs. kNone: the collective only moves data.
enum class OpKind { kNone, kSum, kProd, kMax, kMin, kAvg, kMulSum };
struct OpDesc {
  OpKind kind;
  const char* name;  // nccl-tests' spelling: sum, prod, max, min, avg, mulsum
};
// The six operators, in nccl-tests' order for "-o all".
const std::vector<OpDesc>& allOps();

// Parse "-d"/"-o" arguments ("all" expands). Names are case-insensitive; a few aliases are
// accepted (char, int, fp16, float16, bf16, fp32, float32, fp64, float64, fp8e4m3, fp8e5m2, premulsum).
bool parseTypes(const std::string& arg, std::vector<ncclDataType_t>* out);
bool parseOps(const std::string& arg, std::vector<OpKind>* out);
const char* opName(OpKind op);

// The built-in NCCL operator for op (ncclSum for kNone and kMulSum, whose operator is created per
// communicator with ncclRedOpCreatePreMulSum).
ncclRedOp_t builtinOp(OpKind op);
// The scalar used by kMulSum, encoded in the datatype's own format (little-endian in the word).
uint64_t mulSumScalarBits(ncclDataType_t type);
constexpr int kMulSumScalar = 2;

// Encoding of floating-point types from/to double (round to nearest even).
double decodeFloat(ncclDataType_t type, uint64_t bits);
uint64_t encodeFloat(ncclDataType_t type, double v);

// What one rank puts in its send buffer for one check.
struct DataSpec {
  ncclDataType_t type = ncclFloat32;
  OpKind op = OpKind::kNone;  // kNone: raw bit patterns (copy collectives)
  int nranks = 1;
  uint64_t seed = 0;
};

// One stretch of a rank's output buffer and where its expected values come from.
struct Segment {
  enum Kind { kCopy, kReduce } kind;
  size_t outOffset;  // first element of the output buffer
  size_t count;      // elements
  int srcRank;       // kCopy: the rank whose input is copied
  size_t srcOffset;  // first input element (of srcRank for kCopy; of every rank for kReduce)
};

class Generator {
 public:
  explicit Generator(const DataSpec& spec);
  // Writes rank's input elements [first, first + count) to dst (count elements of the type).
  void fill(int rank, size_t first, size_t count, void* dst) const;
  // Counts the elements of out (a rank's output buffer) that differ from what segs expect.
  // On the first mismatch, *firstMismatch (when given) describes it.
  int64_t check(const std::vector<Segment>& segs, const void* out, std::string* firstMismatch) const;

 private:
  uint64_t hash(int rank, size_t index) const;
  int64_t value(int rank, size_t index) const;  // numeric modes: a small integer
  uint64_t rawBits(int rank, size_t index) const { return hash(rank, index) & mask_; }
  uint64_t encodeInt(int64_t v) const;  // an integer value in the type's format
  uint64_t expectReduceInt(size_t index) const;
  double expectReduceFloat(size_t index, double* magnitude) const;
  double tolerance() const;

  DataSpec spec_;
  TypeDesc td_;
  uint64_t mask_;
  int64_t range_;  // sum-like: values in [-range_, range_] (unsigned: [0, range_])
  int64_t minmaxRange_;
  bool exact_ = true;                  // floats: the expected result is exact, compare without tolerance
  std::vector<uint64_t> encodeTable_;  // small float types: bits of integers -L..L
  int64_t tableHalf_ = 0;
};

// Fills bytes with a recognisable pattern that no check expects.
void fillSentinel(void* dst, size_t bytes);

}  // namespace weftbench
