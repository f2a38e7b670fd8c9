// The layout of an uneven collective (AllGatherv, ReduceScatterv): rank r's block has counts[r]
// elements at displs[r] of the gathered (AllGatherv) or reduced (ReduceScatterv) vector. The
// arrays are equal on every rank (the API requires it and the op stamp checks it), so anything
// derived from them here is the same on every rank: builders may skip empty pieces and choose from
// it without two ranks ever disagreeing on who sends what.
#pragma once
#include <algorithm>
#include <cstddef>

#include "task/task.h"

namespace weft {

struct VLayout {
  const size_t* counts;
  const size_t* displs;
  int nranks;

  size_t maxCount() const { return nranks > 0 ? *std::max_element(counts, counts + nranks) : 0; }
  // Where block b starts when the blocks are packed in rank order (the sum of the counts before it).
  size_t packedBegin(int b) const {
    size_t s = 0;
    for (int q = 0; q < b; ++q) s += counts[q];
    return s;
  }
};

inline VLayout vlayoutOf(const Task& t, int nranks) {
  return VLayout{t.vcounts.data(), t.vcounts.data() + nranks, nranks};
}

}  // namespace weft
