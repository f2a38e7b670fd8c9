// Monotonic time for deadlines and timing.
#pragma once
#include <cstdint>
#include <ctime>

namespace weft {

inline int64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace weft
