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

#include "coll_cases.h"

namespace weft_test {

uint64_t mix64(uint64_t x);

// Element idx of rank `rank`'s input (the send array as the collective reads it).
uint64_t inputBits(const CollCase& c, int rank, size_t idx);
// What output buffers and gaps hold before the call: anything the call must not write keeps it.
uint64_t junkBits(const CollCase& c, int rank, size_t idx);

// A rank's PreMulSum scalar, and the wrong value a device scalar holds until it is armed.
uint64_t scalarBits(ncclDataType_t dtype, int rank);
uint64_t wrongScalarBits(ncclDataType_t dtype);

struct Expect {
  uint64_t bits = 0;   // exact expectation
  double value = 0;    // approximate expectation (floating reductions)
  double tol = 0;
  bool approx = false;
};

inline Expect exactly(uint64_t bits) {
  Expect e;
  e.bits = bits;
  return e;
}

// Reduction of element idx of every rank's input.
Expect reduceExpect(const CollCase& c, int nranks, size_t idx);
bool matches(ncclDataType_t dtype, const Expect& e, uint64_t got);
std::string describe(ncclDataType_t dtype, const Expect& e);

// AlltoAllv: elements rank src sends to rank dst for a case of count c (0, 1 or 2 around c).
size_t alltoallvCount(size_t c, int src, int dst);

}  // namespace weft_test
