// The single-source elementwise loop behind reduceCopy (reduce_host.h). The host executor calls it
// over a whole piece with stride 1; a CUDA or HIP kernel calls it with its own thread's start and a
// grid-wide stride. Both get the same element operations (reduce_ops.h), so a host rank and a GPU
// rank produce the same bits.
#pragma once
#include <cstddef>
#include <type_traits>

#include "math/lowp_types.h"
#include "math/port.h"
#include "math/reduce_ops.h"

namespace weft {

// How an element of type T sits in memory: the narrow formats as their raw bits, everything else
// as itself. The loop loads and stores plain integers for the narrow formats, which the host
// vectoriser handles (it gives up on loads of small structs) and which GPU code loads as the same
// 8- or 16-bit words.
template <typename T, bool kLowp = kIsLowPrecision<T>>
struct MemoryTypeOf {
  using type = T;
};
template <typename T>
struct MemoryTypeOf<T, true> {
  using type = typename T::Bits;
};
template <typename T>
using MemoryType = typename MemoryTypeOf<T>::type;

template <typename T>
WEFT_HOST_DEVICE WEFT_INLINE T loadElement(const MemoryType<T>* p, size_t i) {
  if constexpr (kIsLowPrecision<T>)
    return T::fromBits(p[i]);
  else
    return p[i];
}

template <typename T>
WEFT_HOST_DEVICE WEFT_INLINE void storeElement(MemoryType<T>* p, size_t i, T v) {
  if constexpr (kIsLowPrecision<T>)
    p[i] = v.bits;
  else
    p[i] = v;
}

// Which parts of the reduceCopy contract one instantiation performs. They are template arguments
// so that the loop body carries no per-element branches: every combination is its own loop.
enum ReduceVariant : unsigned {
  kVarPartial = 1u,  // read `partial`
  kVarLocal = 2u,    // read `local` (a rank's own input)
  kVarPre = 4u,      // pre-multiply `local` by preScalar (needs kVarLocal)
  kVarPost = 8u,     // post-divide the result by divisor
  kVarDst1 = 16u,    // also write the result to dst1
};

// For i = begin, begin + stride, ... below end:
//   v = local ? (partial ? op(partial[i], pre(local[i])) : pre(local[i])) : partial[i];
//   v = post(v); dst0[i] = v; dst1[i] = v;
// with each part present only when kVariant asks for it.
//
// Destinations may alias a source exactly (in-place reductions): element i is read completely
// before it is written. For that reason the pointers are deliberately not __restrict__, which would
// promise the compiler something in-place callers break. It costs nothing on the host: GCC guards
// the vector loop with a runtime overlap test that lets an exact alias (distance 0) through, and
// measured with and without __restrict__ the loops ran at the same speed. A GPU kernel that wants
// several loads in flight per thread should load a few elements before storing any (also safe
// under exact aliasing) rather than rely on __restrict__.
template <typename T, typename Op, unsigned kVariant>
WEFT_HOST_DEVICE WEFT_INLINE void reduceCopyRange(MemoryType<T>* dst0, MemoryType<T>* dst1,
                                                  const MemoryType<T>* partial, const MemoryType<T>* local, T preScalar,
                                                  int divisor, size_t begin, size_t end, size_t stride) {
  static_assert((kVariant & (kVarPartial | kVarLocal)) != 0, "reduceCopyRange needs a source");
  static_assert((kVariant & kVarPre) == 0 || (kVariant & kVarLocal) != 0,
                "the pre-multiply applies to the local input only");
  const Op op{};
  for (size_t i = begin; i < end; i += stride) {
    T v;
    if constexpr ((kVariant & kVarLocal) != 0) {
      T x = loadElement<T>(local, i);
      if constexpr ((kVariant & kVarPre) != 0) x = preMultiply(x, preScalar);
      if constexpr ((kVariant & kVarPartial) != 0)
        v = op(loadElement<T>(partial, i), x);
      else
        v = x;
    } else {
      v = loadElement<T>(partial, i);
    }
    if constexpr ((kVariant & kVarPost) != 0) v = postDivide(v, divisor);
    storeElement<T>(dst0, i, v);
    if constexpr ((kVariant & kVarDst1) != 0) storeElement<T>(dst1, i, v);
  }
}

}  // namespace weft
