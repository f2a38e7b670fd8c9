// The element types of Weft's complex datatypes (weftComplex64, weftComplex128 in weft/weft.h): a
// pair of float or double in the layout of C's float _Complex and C++'s std::complex<float>. Not
// std::complex itself, whose operators are host-only under nvcc and whose multiplication follows
// C Annex G (infinity recovery, and FMA where the library chooses): Weft defines every operation
// down to the bit in reduce_ops.h instead, so that every rank and every compiler agrees.
#pragma once
#include <type_traits>

#include "math/port.h"

namespace weft {

template <typename T>
struct Complex {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "complex of float or double only");
  using Part = T;
  T re;
  T im;
};

static_assert(sizeof(Complex<float>) == 8 && alignof(Complex<float>) == alignof(float), "complex64 layout");
static_assert(sizeof(Complex<double>) == 16 && alignof(Complex<double>) == alignof(double), "complex128 layout");

template <typename T>
inline constexpr bool kIsComplex = false;
template <typename T>
inline constexpr bool kIsComplex<Complex<T>> = true;

}  // namespace weft
