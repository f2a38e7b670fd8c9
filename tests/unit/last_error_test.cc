// ncclGetLastError(NULL)'s process-wide message (base/errors.h): a thread that reads it while other
// threads record errors gets one whole message, never an empty or half-written one. Threaded
// collective tests read it while the other ranks of the process fail too.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

#include "base/errors.h"

namespace weft {
namespace {

TEST(LastError, ReadersSeeWholeMessagesWhileOthersWrite) {
  const std::string a(200, 'a'), b(300, 'b');
  recordErrorQuietly(nullptr, ncclInvalidUsage, a.c_str());
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop.load(std::memory_order_relaxed); ++i)
      recordErrorQuietly(nullptr, ncclInvalidUsage, (i % 2 == 0 ? b : a).c_str());
  });
  int torn = 0;
  std::string seen;
  for (int i = 0; i < 200000 && torn == 0; ++i) {
    seen = globalLastError();
    if (seen != a && seen != b) ++torn;
  }
  stop = true;
  writer.join();
  EXPECT_EQ(torn, 0) << "read a message of " << seen.size() << " bytes: \"" << seen.substr(0, 40) << "...\"";
}

// A communicator's own message (ncclGetLastError(comm)) is read the same way: one thread records
// into the communicator while another asks for its message.
TEST(LastError, CommunicatorReadersSeeWholeMessagesWhileOthersWrite) {
  const std::string a(200, 'a'), b(300, 'b');
  ErrorState state;
  state.setMessage(a.c_str());
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop.load(std::memory_order_relaxed); ++i) state.setMessage((i % 2 == 0 ? b : a).c_str());
  });
  int torn = 0;
  std::string seen;
  for (int i = 0; i < 200000 && torn == 0; ++i) {
    seen = i % 2 == 0 ? state.message() : std::string(state.messageForCaller());
    if (seen != a && seen != b) ++torn;
  }
  stop = true;
  writer.join();
  EXPECT_EQ(torn, 0) << "read a message of " << seen.size() << " bytes: \"" << seen.substr(0, 40) << "...\"";
}

}  // namespace
}  // namespace weft
