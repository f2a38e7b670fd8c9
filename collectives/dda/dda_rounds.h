// How a direct-lane collective cuts its data into rounds that fit half a staging area, and which
// half each round uses (see dda_programs.cc for why halves alternate). Shared by the DDA and the
// low-precision builders, which use the same staging areas and the same round counter.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "task/task.h"
#include "transports/shm/direct_area.h"

namespace weft::dda {

// Round element counts are multiples of this many bytes, so staged pieces start on cache lines.
constexpr size_t kAlignBytes = 64;

// Elements of one slice when len elements are cut into n slices of cache-line multiples (the last
// slices may be shorter or empty).
inline size_t sliceElems(size_t len, int n, size_t elemBytes) {
  const size_t unit = kAlignBytes / elemBytes;
  const size_t s = (len + size_t(n) - 1) / size_t(n);
  return (s + unit - 1) / unit * unit;
}

struct Rounds {
  // DDA geometry: staging units are elements of the task's datatype. total: elements per block;
  // blocks: how many blocks share one half (1, or nranks for ReduceScatter and AlltoAll).
  Rounds(DirectAreas& direct, const Task& t, size_t total, int blocks) {
    const size_t es = dataTypeSize(t.dtype);
    halfUnits = direct.dataBytes() / 2 / es;
    perBlock = std::max<size_t>(kAlignBytes / es, halfUnits / size_t(blocks) / (kAlignBytes / es) * (kAlignBytes / es));
    count = total == 0 ? 0 : (total + perBlock - 1) / perBlock;
    first = direct.takeRounds(count);
  }
  // A raw geometry: halfUnits staging units per half, perBlock elements per block and round.
  Rounds(DirectAreas& direct, size_t total, size_t halfUnitsIn, size_t perBlockIn)
      : halfUnits(halfUnitsIn), perBlock(perBlockIn) {
    count = total == 0 ? 0 : (total + perBlock - 1) / perBlock;
    first = direct.takeRounds(count);
  }
  size_t offset(uint64_t j) const { return size_t(j) * perBlock; }
  size_t length(uint64_t j, size_t total) const { return std::min(perBlock, total - offset(j)); }
  // Staging units where round j's half starts.
  size_t base(uint64_t j) const { return ((first + j) % 2) * halfUnits; }

  size_t halfUnits = 0;
  size_t perBlock = 0;
  uint64_t count = 0;
  uint64_t first = 0;
};

}  // namespace weft::dda
