// The low-precision collectives' accuracy check, shared by the host-mode suite (lowprec_test.cc)
// and the GPU suite (tests/gpu): inputs any rank can compute for every rank, and the bound each
// output element must meet.
//
// Tolerances, from the format: each quantization keeps 3 mantissa bits (relative error <= 2^-4
// of the element) plus half an e4m3 subnormal step of its block (<= blockMax * 2^-18). AllReduce
// rounds twice (the inputs, then the sum), so an element's error is bounded by
//   2^-4 * (sum_p |x_p| + |exact|) + nranks * max|x| * 2^-18 + the output type's rounding,
// ReduceScatter by 2^-4 * sum_p |x_p| + ..., AllGather and AlltoAll by 2^-4 * |x| + .... Every case
// prints its max and mean relative error (|error| / max(|exact|, rms of the exact output)).
#pragma once
#include <cstddef>
#include <string>

#include "harness.h"

namespace weft_test {

enum class LowpData { kNormal, kHuge, kEqual };
enum class LowpOp { kAllReduce, kAllGather, kReduceScatter, kAlltoAll };

// One rank's part of one low-precision call: what it sends, how it calls, and how its output is
// checked.
struct LowpCase {
  LowpOp op;
  ncclDataType_t dt;
  LowpData data;
  size_t count;
  int rank, nranks;

  size_t elemBytes() const { return dt == ncclFloat32 ? 4 : 2; }
  size_t inElems() const;
  size_t outElems() const;
  // "AllReduce float32 normal count 4099"
  std::string what() const;
  // Writes this rank's input (inElems elements) into buf.
  void fillInput(void* buf) const;
  ncclResult_t issue(const void* send, void* recv, ncclComm_t comm, void* stream) const;
  // Checks the output (outElems elements, in host memory) element by element against the bound,
  // records AllReduce's and AllGather's digest (every rank must hold the same bits), and on rank 0
  // prints the largest and mean relative error.
  void check(const void* out, Reporter* rep) const;
};

}  // namespace weft_test
