// Block-scaled FP8 quantization, single source for the host executor and GPU kernels (like
// lowp_types.h and reduce_kernel.h, every function is WEFT_HOST_DEVICE and loops over a block
// from a start with a stride, so a GPU thread group can share one block).
//
// A block is kLowpBlockElems consecutive elements stored as one float32 scale followed by that
// many e4m3 bytes (a LowpBlock); the last block of a range may be partly filled. The scale is the
// block's largest magnitude divided by 448 (e4m3's largest finite value), so every element fits:
// nothing saturates however large the data, and the relative rounding error of the largest
// elements stays e4m3's 2^-4. Elements much smaller than the block maximum lose precision (they
// fall into e4m3's subnormals: absolute error at most blockMax / 448 * 2^-10). A block of zeros
// gets scale 1. A block holding Inf or NaN gets a NaN scale, so it decodes to NaN: a non-finite
// input is never silently turned into a finite number.
#pragma once
#include <cstddef>
#include <cstdint>

#include "math/lowp_types.h"
#include "math/port.h"
#include "math/reduce_kernel.h"

namespace weft {

inline constexpr size_t kLowpBlockElems = 256;
inline constexpr float kE4M3MaxFinite = 448.0f;

struct LowpBlock {
  float scale;
  uint8_t q[kLowpBlockElems];
};
static_assert(sizeof(LowpBlock) == 4 + kLowpBlockElems, "a LowpBlock is its scale and its bytes, unpadded");

// Blocks needed for n elements.
WEFT_HOST_DEVICE WEFT_INLINE size_t lowpBlocks(size_t n) { return (n + kLowpBlockElems - 1) / kLowpBlockElems; }

template <typename T>
WEFT_HOST_DEVICE WEFT_INLINE float elementToFloat(const MemoryType<T>* p, size_t i) {
  return static_cast<float>(loadElement<T>(p, i));
}
template <typename T>
WEFT_HOST_DEVICE WEFT_INLINE void elementFromFloat(MemoryType<T>* p, size_t i, float v) {
  storeElement<T>(p, i, T(v));
}

// The scale of a block whose largest magnitude is absMax (NaN when absMax is not finite).
WEFT_HOST_DEVICE WEFT_INLINE float lowpScaleFor(float absMax) {
  if (!(absMax <= 3.4028234663852886e38f)) return bitsToFloat(kFloatCanonicalNaN);  // Inf or NaN
  const float s = absMax / kE4M3MaxFinite;
  // Zero (and magnitudes so small that the scale underflows to 0) would divide by zero.
  return s > 0.0f ? s : 1.0f;
}

// Largest |x[i]| of the n elements (NaN wins, so the block's scale becomes NaN).
template <typename T>
WEFT_HOST_DEVICE WEFT_INLINE float lowpAbsMax(const MemoryType<T>* x, size_t n) {
  float m = 0.0f;
  bool nan = false;
  for (size_t i = 0; i < n; ++i) {
    const float a = bitsToFloat(floatToBits(elementToFloat<T>(x, i)) & 0x7fffffffu);
    nan |= a != a;
    m = a > m ? a : m;
  }
  return nan ? bitsToFloat(kFloatCanonicalNaN) : m;
}

// Encodes elements [0, n) of x (n <= kLowpBlockElems) into one block. Bytes past n are zeroed, so
// a partial block's contents are fully defined.
template <typename T>
WEFT_HOST_DEVICE WEFT_INLINE void lowpQuantizeBlock(const MemoryType<T>* x, size_t n, LowpBlock* out) {
  const float scale = lowpScaleFor(lowpAbsMax<T>(x, n));
  out->scale = scale;
  for (size_t i = 0; i < kLowpBlockElems; ++i)
    out->q[i] = i < n ? float8e4m3BitsFromFloat(elementToFloat<T>(x, i) / scale) : 0;
}

// Same from float values (an accumulator being re-quantized).
WEFT_HOST_DEVICE WEFT_INLINE void lowpQuantizeFloatBlock(const float* x, size_t n, LowpBlock* out) {
  lowpQuantizeBlock<float>(x, n, out);
}

// The value of element i of a block, in float.
WEFT_HOST_DEVICE WEFT_INLINE float lowpDecode(const LowpBlock& b, size_t i) {
  return floatFromFloat8e4m3Bits(b.q[i]) * b.scale;
}

// acc[i] += decoded element i, for i < n (the reduction of ReduceScatter and AllReduce, in float).
WEFT_HOST_DEVICE WEFT_INLINE void lowpAccumulateBlock(const LowpBlock& b, size_t n, float* acc) {
  for (size_t i = 0; i < n; ++i) acc[i] += lowpDecode(b, i);
}

// out[i] = decoded element i in T, for i < n.
template <typename T>
WEFT_HOST_DEVICE WEFT_INLINE void lowpDequantizeBlock(const LowpBlock& b, size_t n, MemoryType<T>* out) {
  for (size_t i = 0; i < n; ++i) elementFromFloat<T>(out, i, lowpDecode(b, i));
}

// One block of the low-precision reduction (kLowpReduce): the float sum, in rank order, of the
// same block of every rank (block(r) points at rank r's), for n elements. With `requant` the sum is
// re-quantized into *requant and dst gets its decoded value, so that the block's owner keeps exactly
// what its peers will decode; without, dst gets the sum. The host executor and the GPU kernel both
// run this, so both give the same bits.
template <typename T, typename BlockOf>
WEFT_HOST_DEVICE WEFT_INLINE void lowpReduceBlock(BlockOf block, int nranks, size_t n, LowpBlock* requant,
                                                  MemoryType<T>* dst) {
  float acc[kLowpBlockElems];
  for (size_t i = 0; i < n; ++i) acc[i] = 0.0f;
  for (int r = 0; r < nranks; ++r) lowpAccumulateBlock(*block(r), n, acc);
  if (requant != nullptr) {
    lowpQuantizeFloatBlock(acc, n, requant);
    lowpDequantizeBlock<T>(*requant, n, dst);
  } else {
    for (size_t i = 0; i < n; ++i) elementFromFloat<T>(dst, i, acc[i]);
  }
}

// Whole ranges: n elements <-> lowpBlocks(n) blocks. Block k covers elements [k*256, k*256+256).
template <typename T>
WEFT_HOST_DEVICE WEFT_INLINE void lowpQuantize(const MemoryType<T>* x, size_t n, LowpBlock* out, size_t firstBlock,
                                               size_t blockStride) {
  for (size_t k = firstBlock; k * kLowpBlockElems < n; k += blockStride) {
    const size_t at = k * kLowpBlockElems;
    lowpQuantizeBlock<T>(x + at, n - at < kLowpBlockElems ? n - at : kLowpBlockElems, out + k);
  }
}

template <typename T>
WEFT_HOST_DEVICE WEFT_INLINE void lowpDequantize(const LowpBlock* in, size_t n, MemoryType<T>* out, size_t firstBlock,
                                                 size_t blockStride) {
  for (size_t k = firstBlock; k * kLowpBlockElems < n; k += blockStride) {
    const size_t at = k * kLowpBlockElems;
    lowpDequantizeBlock<T>(in[k], n - at < kLowpBlockElems ? n - at : kLowpBlockElems, out + at);
  }
}

}  // namespace weft
