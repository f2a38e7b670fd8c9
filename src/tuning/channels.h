// How many ring channels an operation uses. In host mode one thread per rank interleaves the
// channels, so extra channels add independent pipelines (a slow step on one channel does not stall
// the others) but cost per-piece overhead: a channel is worth it only when it carries many slots.
#pragma once
#include <algorithm>
#include <cstddef>

#include "core/comm.h"

namespace weft {

inline int ringChannels(const ncclComm* comm, size_t bytesPerRank) {
  const size_t perChannel = size_t(comm->nranks) * comm->slotBytes * 4;
  size_t want = perChannel == 0 ? 1 : bytesPerRank / perChannel;
  int n = static_cast<int>(std::clamp<size_t>(want, 1, size_t(comm->nChannels)));
  return std::max(n, std::min(comm->config.minCTAs, comm->nChannels));
}

}  // namespace weft
