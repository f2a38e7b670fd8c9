// Inputs and expected results of the collective cases, computed on the host in the plainest way:
// integers in 64-bit arithmetic truncated to the type (two's complement wraparound), floating types
// in double from the exact values of the (possibly low-precision) inputs.
//
// Value ranges are chosen so that most results are exact even in float8: sums use small integers
// (or quarter steps for float32/64), products use powers of two, max/min use any finite value.
// Where rounding is unavoidable (average, PreMulSum) the check allows a tolerance proportional to
// the type's epsilon x nranks x the largest term.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "coll_cases.h"
#include "dtypes.h"

namespace weft_test {

uint64_t mix64(uint64_t x);

// A rank's PreMulSum scalar, and the wrong value a device scalar holds until it is armed.
uint64_t scalarBits(ncclDataType_t dtype, int rank);
uint64_t wrongScalarBits(ncclDataType_t dtype);

struct Expect {
  uint64_t bits = 0;  // exact expectation
  double value = 0;   // approximate expectation (floating reductions)
  double tol = 0;
  bool approx = false;
};

inline Expect exactly(uint64_t bits) {
  Expect e;
  e.bits = bits;
  return e;
}

bool matches(ncclDataType_t dtype, const Expect& e, uint64_t got);
std::string describe(ncclDataType_t dtype, const Expect& e);

// AlltoAllv: elements rank src sends to rank dst for a case of count c (0, 1 or 2 around c).
size_t alltoallvCount(size_t c, int src, int dst);

// The uneven collectives' layout for a case of count c on n ranks, the same on every rank: rank 1
// (rank 0 alone) has the large block of c elements, even ranks have none, the other odd ranks a
// small one (c / 16 + 1); all empty when c is 0. Blocks lie in reverse rank order with a
// one-element gap after each, so displacements neither follow rank order nor touch. Returns the
// elements the layout spans.
size_t vcollLayout(size_t c, int n, std::vector<size_t>* counts, std::vector<size_t>* displs);

// Every rank's input of one case, and what the reductions of them must give. Inputs are a pure
// function of (case, rank, index), so any rank can compute any other rank's input.
class Reference {
 public:
  Reference(const CollCase& c, int nranks);
  // Element idx of rank `rank`'s input (the send array as the collective reads it).
  uint64_t input(int rank, size_t idx) const;
  // What output buffers and gaps hold before the call: anything the call must not write keeps it.
  uint64_t junk(int rank, size_t idx) const;
  // The reduction of element idx over every rank's input.
  Expect reduced(size_t idx) const;

 private:
  enum class Kind { kRawBits, kIntProd, kIntAvg, kFloatFinite, kFloatProd, kFloatSmall };
  uint64_t hash(int rank, size_t idx, int stream) const;
  // The input's exact value (floating types) from its hash.
  double floatValue(uint64_t h) const;
  uint64_t bitsFromHash(uint64_t h) const;

  CollCase c_;
  int nranks_;
  const DtypeInfo* info_;
  Kind kind_;
  uint64_t mask_;
  bool preMul_;
  std::vector<uint64_t> rankBase_;   // per rank: the hash every index is mixed with
  std::vector<double> scalarValue_;  // per rank: PreMulSum scalar (floating types)
  std::vector<uint64_t> scalarInt_;  // per rank: PreMulSum scalar (integer types)
};

}  // namespace weft_test
