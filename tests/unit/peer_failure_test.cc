// How a survivor describes a local peer that failed: from two reads of the peer's state, in an order
// that can never lose the cause the peer published before it exited (that cause names the rank that
// really failed; a bare "has exited" would blame the messenger).
#include <gtest/gtest.h>

#include <string>

#include "comm/local_peers.h"

namespace weft {
namespace {

// A peer that, between the survivor's first and second read, publishes its cause and exits: the
// first read sees it alive with no cause, the second sees it dead with its cause.
struct RacingPeer {
  int reads = 0;
  bool alive() { return reads++ == 0; }
  std::string cause() { return reads++ == 0 ? "" : "rank 3 (pid 42) has exited while receiving from it"; }
};

TEST(PeerFailure, APeerThatFailsAndExitsBetweenTheReadsIsReportedByItsCause) {
  RacingPeer peer;
  const std::string what = describePeerFailure(
      1, 1234, /*countAborted=*/true, [&] { return peer.alive(); }, [&] { return peer.cause(); });
  EXPECT_EQ(what, "rank 1 stopped (rank 3 (pid 42) has exited while receiving from it)");
}

TEST(PeerFailure, EachStateIsDescribed) {
  auto describe = [](bool alive, const std::string& cause, bool countAborted) {
    return describePeerFailure(
        2, 77, countAborted, [&] { return alive; }, [&] { return cause; });
  };
  EXPECT_EQ(describe(true, "", true), "");
  EXPECT_EQ(describe(false, "", true), "rank 2 (pid 77) has exited");
  EXPECT_EQ(describe(true, "aborted", true), "rank 2 stopped (aborted)");
  // Only the process going away counts without countAborted, but its cause is still given.
  EXPECT_EQ(describe(true, "aborted", false), "");
  EXPECT_EQ(describe(false, "a timeout", false), "rank 2 stopped (a timeout)");
}

}  // namespace
}  // namespace weft
