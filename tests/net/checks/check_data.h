// What net_check sends and what it expects back. Every rank derives any rank's input from (seed,
// rank, element) alone, so each rank can verify its own results without talking to the others.
// Inputs are small integers, so sums, products, minima and maxima are exact in float32 too and the
// checks compare bit for bit. The one exception is ncclAvg on a floating type: each input is
// multiplied by 1/nranks before the sum, which rounds, so that case allows a tiny tolerance.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "nccl.h"

namespace netcheck {

template <typename T>
struct TypeInfo;
template <>
struct TypeInfo<float> {
  static constexpr ncclDataType_t kType = ncclFloat32;
  static constexpr const char* kName = "float32";
};
template <>
struct TypeInfo<int32_t> {
  static constexpr ncclDataType_t kType = ncclInt32;
  static constexpr const char* kName = "int32";
};

inline const char* opName(ncclRedOp_t op) {
  switch (op) {
    case ncclSum: return "sum";
    case ncclProd: return "prod";
    case ncclMax: return "max";
    case ncclMin: return "min";
    case ncclAvg: return "avg";
    default: return "?";
  }
}

// A well-mixed 32-bit value of (seed, rank, element); splitmix64's finaliser.
inline uint32_t mix(uint32_t seed, int rank, size_t i) {
  uint64_t z = (uint64_t(seed) << 40) ^ (uint64_t(uint32_t(rank)) << 32) ^ uint64_t(i) ^ 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return uint32_t(z ^ (z >> 31));
}

// Rank `rank`'s element i for a reduction with op over nranks ranks. Products use factors of
// magnitude 1 or 2 so they stay exact for any rank count a test uses; a floating average's inputs
// are multiples of nranks so that the pre-multiplied terms are (nearly) integers.
template <typename T>
T input(ncclRedOp_t op, int nranks, uint32_t seed, int rank, size_t i) {
  const uint32_t h = mix(seed, rank, i);
  switch (op) {
    case ncclProd: {
      static constexpr int kFactors[6] = {1, -1, 2, 1, -2, 1};
      return T(kFactors[h % 6]);
    }
    case ncclMax:
    case ncclMin: return T(int(h % 2001) - 1000);
    case ncclAvg: {
      const int k = int(h % 33) - 16;
      return std::is_floating_point_v<T> ? T(k * nranks) : T(k);
    }
    default: return T(int(h % 33) - 16);
  }
}

// The reduction over all ranks of their element i, as the library must compute it.
template <typename T>
T reduced(ncclRedOp_t op, int nranks, uint32_t seed, size_t i) {
  T acc = input<T>(op, nranks, seed, 0, i);
  for (int r = 1; r < nranks; ++r) {
    const T x = input<T>(op, nranks, seed, r, i);
    switch (op) {
      case ncclProd: acc = T(acc * x); break;
      case ncclMax: acc = x > acc ? x : acc; break;
      case ncclMin: acc = x < acc ? x : acc; break;
      default: acc = T(acc + x); break;
    }
  }
  // Integers: the sum divided by nranks, truncated toward zero. Floats: the inputs are multiples
  // of nranks, so the division is exact.
  return op == ncclAvg ? T(acc / T(nranks)) : acc;
}

template <typename T>
bool sameValue(ncclRedOp_t op, T got, T want) {
  if constexpr (std::is_floating_point_v<T>)
    if (op == ncclAvg) return std::fabs(double(got) - double(want)) <= 1e-4;
  return got == want;
}

}  // namespace netcheck
