// Host-side entry to the single-source reduction primitives (src/math/reduce_kernel.h): the
// executor describes a reduction once per operation (ReduceSpec) and calls reduceCopy per piece.
#pragma once
#include <cstddef>
#include <cstdint>

#include "math/port.h"
#include "nccl.h"
#include "weft/weft.h"

namespace weft {

enum class BaseOp : uint8_t { kSum = 0, kProd = 1, kMax = 2, kMin = 3 };

// A reduction as the executor runs it. ncclAvg on real floating types becomes kSum with a
// pre-multiply by 1/nranks; on integer and complex types kSum with a post-divide by nranks.
// ncclPreMulSum becomes kSum with a pre-multiply by the user's scalar (its bits stored in the
// datatype's own format; a complex128 scalar takes both words).
struct ReduceSpec {
  ncclDataType_t dtype = ncclFloat32;
  BaseOp op = BaseOp::kSum;
  bool preMul = false;          // multiply each rank's own input by preMulScalar before combining
  uint64_t preMulScalar = 0;    // raw bits of a value of type dtype (little end of the word)
  uint64_t preMulScalarHi = 0;  // the bytes past the first 8 of a 16-byte scalar (complex128)
  bool postDiv = false;         // divide the final result by divisor (integer average)
  int divisor = 1;
};

// Builds the spec for a built-in op (ncclSum..ncclAvg) and nranks. False if op or dtype is invalid,
// or if the op is ncclMax/ncclMin on a complex type (see opDefinedFor).
// (Also false for nranks < 1. ncclAvg over one rank is the identity and gets neither pre nor post,
// so it stays a plain copy. The arithmetic rules of each op are in reduce_ops.h.)
bool makeReduceSpec(ncclDataType_t dtype, ncclRedOp_t op, int nranks, ReduceSpec* out);

// Flags for reduceCopy.
enum ReduceFlags : unsigned {
  kApplyPre = 1u,   // apply the pre-multiply to `local` (a rank's own input enters the reduction)
  kApplyPost = 2u,  // apply the post-divide to the result (the final value is being written)
  // dst0 is a large buffer that will not be read again soon (a user's output beyond the caches):
  // write it with non-temporal stores, which skip reading each line in before it is overwritten.
  // The stores are fenced before reduceCopy returns, so a release store after it publishes them.
  kStreamDst0 = 4u,
  // dst1 is a FIFO slot that a peer on another core reads next. A loop that computes straight into
  // such lines stalls on each one (see kSlotBlockBytes in reduce_host.cc); with this flag the value
  // is computed into dst0 16 KiB at a time and copied into dst1 with memcpy. Same bytes. (With
  // kStreamDst0 the value goes through an L1 block and dst1 is copied from it, flag or not.)
  kSlotDst1 = 8u,
};

// For i in [0, count): v = local ? (partial ? op(partial[i], pre(local[i])) : pre(local[i]))
//                                : partial[i];
//                      if (kApplyPost) v = post(v);  dst0[i] = v;  if (dst1) dst1[i] = v;
// pre() and post() apply only when their flag is set and the spec asks for them. Buffers may alias
// exactly (dst0 == local, in place) but must not partially overlap. Without pre/post and with one
// source this is a plain copy (memcpy speed).
// (pre and post also work with kProd/kMax/kMin, though nothing builds such a spec; a divisor below 2
// means no post-divide.)
void reduceCopy(const ReduceSpec& spec, void* dst0, void* dst1, const void* partial, const void* local, size_t count,
                unsigned flags);

// memcpy in pieces small enough that glibc writes whole lines at every size (reduce_host.cc says
// why that matters for buffers a peer reads). Exact aliasing (dst == src) does nothing.
void copyBytes(void* dst, const void* src, size_t bytes);

// memcpy with non-temporal stores into dst (see kStreamDst0), fenced before it returns. Exact
// aliasing (dst == src) does nothing; elsewhere than x86-64 it is memcpy.
void copyStreaming(void* dst, const void* src, size_t bytes);

// Makes reduceCopy use its baseline (non-AVX2) loops even where AVX2 is available, so that tests can
// check that both builds of the loops give the same bits. Not for production use.
void reduceUseBaselineLoopsForTesting(bool on);

// Size in bytes of one element of dtype; 0 for an invalid dtype. Host and device code (the GPU
// kernel sizes its pieces with it).
WEFT_HOST_DEVICE inline size_t dataTypeSize(ncclDataType_t dtype) {
  switch (dtype) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
    case weftComplex64: return 8;
    case weftComplex128: return 16;
    default: return 0;
  }
}

// Whether dtype is one Weft knows: NCCL's twelve and Weft's complex types (weft/weft.h).
WEFT_HOST_DEVICE inline bool isValidDataType(ncclDataType_t dtype) { return dataTypeSize(dtype) != 0; }

WEFT_HOST_DEVICE inline bool isComplexDataType(ncclDataType_t dtype) {
  return dtype == weftComplex64 || dtype == weftComplex128;
}

// Whether the built-in op means something on dtype: everything but ncclMax/ncclMin on complex
// numbers, which have no order.
inline bool opDefinedFor(ncclRedOp_t op, ncclDataType_t dtype) {
  return !(isComplexDataType(dtype) && (op == ncclMax || op == ncclMin));
}
// Name for messages ("float32", "bfloat16", "complex64", ...); "invalid" for an invalid dtype.
const char* dataTypeName(ncclDataType_t dtype);

}  // namespace weft
