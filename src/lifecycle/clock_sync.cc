#include "lifecycle/clock_sync.h"

#include <sched.h>
#include <unistd.h>

#include <limits>

#include "base/clock.h"

namespace weft {
namespace {

// "TRC" and the round: apart from every other tag sent over the bootstrap (stamp notes use "MSM").
constexpr uint64_t kPingTag = uint64_t(0x545243) << 40;
constexpr uint64_t kPongTag = kPingTag | (1u << 20);
// Rounds per rank: the first often meets rank 0 busy with another rank; a few more find it idle.
// With more ranks than cores a round can still be slowed by a peer that took the core, so more
// rounds follow (up to kMaxRounds) until one took under kGoodRttNs.
constexpr int kRounds = 5;
constexpr int kMaxRounds = 16;
constexpr int64_t kGoodRttNs = 100 * 1000;
// A wait yields this long, then sleeps between looks: the ranks waiting for their turn must not
// take the cores that rank 0 and the rank it is measuring need.
constexpr int64_t kYieldNs = 1000 * 1000;

ncclResult_t receive(Bootstrap* b, int peer, uint64_t tag, int64_t* value, int64_t deadlineNs, std::string* why) {
  bool got = false;
  const int64_t start = nowNs();
  for (;;) {
    ncclResult_t r = b->tryRecv(peer, tag, value, sizeof *value, &got, why);
    if (r != ncclSuccess || got) return r;
    if (nowNs() > deadlineNs) {
      *why = "rank " + std::to_string(b->rank()) + " timed out waiting for rank " + std::to_string(peer) +
             "'s clock reading";
      return ncclRemoteError;
    }
    // Yield rather than sleep at first: the time a reply waits unseen counts in the round trip.
    if (nowNs() - start < kYieldNs)
      sched_yield();
    else
      usleep(100);
  }
}

}  // namespace

ncclResult_t measureClockOffset(Bootstrap* b, int64_t timeoutMs, double* offsetUs, double* uncertaintyUs,
                                std::string* why) {
  *offsetUs = 0;
  *uncertaintyUs = 0;
  const int64_t deadline = nowNs() + timeoutMs * 1000000;
  if (b->rank() == 0) {
    // A ping of -1 says the peer has what it needs.
    for (int peer = 1; peer < b->nranks(); ++peer)
      for (int k = 0; k <= kMaxRounds; ++k) {
        int64_t ping = 0;
        ncclResult_t r = receive(b, peer, kPingTag | k, &ping, deadline, why);
        if (r != ncclSuccess) return r;
        if (ping < 0) break;
        const int64_t now = nowNs();
        if ((r = b->send(peer, kPongTag | k, &now, sizeof now, why)) != ncclSuccess) return r;
      }
    return ncclSuccess;
  }
  int64_t bestRtt = std::numeric_limits<int64_t>::max();
  int k = 0;
  for (; k < kMaxRounds && (k < kRounds || bestRtt > kGoodRttNs); ++k) {
    const int64_t sent = nowNs();
    int64_t rootTime = 0;
    ncclResult_t r = b->send(0, kPingTag | k, &sent, sizeof sent, why);
    if (r == ncclSuccess) r = receive(b, 0, kPongTag | k, &rootTime, deadline, why);
    if (r != ncclSuccess) return r;
    const int64_t back = nowNs();
    if (back - sent < bestRtt) {
      bestRtt = back - sent;
      // Rank 0 read its clock about halfway through the round trip.
      *offsetUs = (static_cast<double>(rootTime) - (static_cast<double>(sent) + static_cast<double>(back)) / 2) /
                  1000.0;
      *uncertaintyUs = static_cast<double>(bestRtt) / 2000.0;
    }
  }
  const int64_t done = -1;
  return b->send(0, kPingTag | k, &done, sizeof done, why);
}

}  // namespace weft
