// Schedule math for rings, kept apart from data movement so it can be unit-tested on its own.
#pragma once
#include <cstddef>

namespace weft::ring {

// The i-th of `parts` near-equal contiguous pieces of [0, n): pieces differ by at most one element.
struct Range {
  size_t begin, count;
};
inline Range split(size_t n, size_t parts, size_t i) {
  size_t base = n / parts, extra = n % parts;
  size_t begin = i * base + (i < extra ? i : extra);
  return Range{begin, base + (i < extra ? 1 : 0)};
}

inline int mod(long a, int n) { return static_cast<int>(((a % n) + n) % n); }

}  // namespace weft::ring
