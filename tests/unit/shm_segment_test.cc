// Shared-memory segments as memfds handed over abstract Unix sockets: fetched in this process and
// in a forked one, names that go once the expected peers have fetched them (and descriptors with
// them), refusals across users, and memory that cannot be had. Real sockets and processes only.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "transports/shm/fd_service.h"
#include "transports/shm/shm_segment.h"

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;

// Names are unique per test process: the abstract namespace is shared by the whole network
// namespace, other test processes included.
std::string uniqueName(const char* what) { return "/weft-test-" + std::to_string(getpid()) + "-" + what; }

// Is "@weft-shm<name>" bound by any socket of this network namespace?
bool socketListed(const std::string& segmentName) {
  std::ifstream f("/proc/net/unix");
  const std::string want = "@" + shmSocketName(segmentName);
  for (std::string line; std::getline(f, line);) {
    const size_t at = line.rfind(' ');
    if (at != std::string::npos && line.compare(at + 1, std::string::npos, want) == 0) return true;
  }
  return false;
}

int openFds() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) n += e.path().filename() != ".";
  return n;
}

// Fetches until the creator answers (bounded); the result of the last try.
ncclResult_t fetch(ShmSegment* seg, const std::string& name, size_t minBytes, bool* notYet, std::string* why) {
  const auto end = Clock::now() + std::chrono::seconds(5);
  ncclResult_t r;
  do {
    r = seg->tryOpen(name, minBytes, notYet, why);
  } while (r == ncclSuccess && *notYet && Clock::now() < end);
  return r;
}

// Waits (bounded) until the service has let go of the name.
bool nameGone(const std::string& name) {
  const auto end = Clock::now() + std::chrono::seconds(2);
  while (socketListed(name) && Clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return !socketListed(name);
}

TEST(ShmSegment, FetchedInThisProcessThenTheNameGoes) {
  const std::string name = uniqueName("same");
  ShmSegment mine, theirs;
  std::string why;
  ASSERT_EQ(mine.create(name, 1 << 16, 1, &why), ncclSuccess) << why;
  EXPECT_TRUE(socketListed(name));
  memset(mine.data(), 0x5a, 1 << 16);
  bool notYet = true;
  ASSERT_EQ(fetch(&theirs, name, 1 << 16, &notYet, &why), ncclSuccess) << why;
  ASSERT_FALSE(notYet) << "nobody answered for " << name;
  ASSERT_EQ(theirs.size(), size_t{1} << 16);
  EXPECT_EQ(static_cast<unsigned char*>(theirs.data())[12345], 0x5a);
  static_cast<unsigned char*>(theirs.data())[7] = 1;
  EXPECT_EQ(static_cast<unsigned char*>(mine.data())[7], 1) << "the two mappings are not the same memory";
  EXPECT_TRUE(nameGone(name)) << "the name outlived its only expected fetch";
  EXPECT_EQ(offeredSegmentCount(), 0u);
}

TEST(ShmSegment, FetchedByAForkedProcess) {
  const std::string name = uniqueName("fork");
  ShmSegment mine;
  std::string why;
  ASSERT_EQ(mine.create(name, 8192, 1, &why), ncclSuccess) << why;
  auto* bytes = static_cast<volatile unsigned char*>(mine.data());
  bytes[0] = 42;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child must not keep the parent's name alive, and fetches it like any other process.
    ShmSegment seg;
    bool notYet = true;
    std::string err;
    if (fetch(&seg, name, 8192, &notYet, &err) != ncclSuccess || notYet) _exit(2);
    auto* p = static_cast<volatile unsigned char*>(seg.data());
    if (p[0] != 42) _exit(3);
    p[1] = 43;
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: no fetch, 3: wrong contents";
  EXPECT_EQ(bytes[1], 43) << "the child's write is not in the parent's mapping";
  EXPECT_TRUE(nameGone(name));
}

TEST(ShmSegment, UnlinkWithdrawsTheNameAtOnce) {
  const std::string name = uniqueName("unlink");
  ShmSegment mine;
  std::string why;
  ASSERT_EQ(mine.create(name, 4096, 3, &why), ncclSuccess) << why;
  mine.unlink();
  mine.unlink();  // twice is fine
  EXPECT_FALSE(socketListed(name));
  ShmSegment theirs;
  bool notYet = false;
  EXPECT_EQ(theirs.tryOpen(name, 4096, &notYet, &why), ncclSuccess) << why;
  EXPECT_TRUE(notYet) << "a withdrawn name must read as not there (yet)";
  static_cast<char*>(mine.data())[4095] = 1;  // still mapped
}

TEST(ShmSegment, NoPeersMeansNoName) {
  const std::string name = uniqueName("alone");
  ShmSegment mine;
  std::string why;
  ASSERT_EQ(mine.create(name, 4096, 0, &why), ncclSuccess) << why;
  EXPECT_FALSE(socketListed(name));
  EXPECT_EQ(offeredSegmentCount(), 0u);
}

TEST(ShmSegment, DescriptorsDoNotGrow) {
  const std::string name = uniqueName("fds");
  std::string why;
  {  // the service's own descriptors (epoll, wake-up) exist from the first offer on
    ShmSegment warm;
    ASSERT_EQ(warm.create(name, 4096, 1, &why), ncclSuccess) << why;
  }
  const int base = openFds();
  for (int i = 0; i < 50; ++i) {
    ShmSegment mine, theirs, never;
    ASSERT_EQ(mine.create(name, 4096, 1, &why), ncclSuccess) << why;
    ASSERT_EQ(never.create(name + "-never", 4096, 2, &why), ncclSuccess) << why;  // nobody fetches it
    bool notYet = true;
    ASSERT_EQ(fetch(&theirs, name, 4096, &notYet, &why), ncclSuccess) << why;
    ASSERT_FALSE(notYet);
    ASSERT_TRUE(nameGone(name));
  }
  EXPECT_EQ(openFds(), base) << "descriptors grew over 50 segments";
  EXPECT_EQ(offeredSegmentCount(), 0u);
  EXPECT_FALSE(socketListed(name + "-never")) << "a destroyed segment left its name";
}

TEST(ShmSegment, SmallerThanExpectedIsAnError) {
  const std::string name = uniqueName("small");
  ShmSegment mine, theirs;
  std::string why;
  ASSERT_EQ(mine.create(name, 4096, 1, &why), ncclSuccess) << why;
  bool notYet = true;
  EXPECT_EQ(fetch(&theirs, name, 8192, &notYet, &why), ncclSystemError);
  EXPECT_NE(why.find("4096"), std::string::npos) << why;
  EXPECT_NE(why.find(name), std::string::npos) << why;
}

TEST(ShmSegment, ANameOfferedTwiceIsAnError) {
  const std::string name = uniqueName("twice");
  ShmSegment a, b;
  std::string why;
  ASSERT_EQ(a.create(name, 4096, 1, &why), ncclSuccess) << why;
  EXPECT_EQ(b.create(name, 4096, 1, &why), ncclSystemError);
  EXPECT_NE(why.find("already offers"), std::string::npos) << why;
}

// More than the machine has: refused up front (no OOM kill), naming the bytes and the segment.
TEST(ShmSegment, MemoryThatCannotBeHadFailsWithBytesAndName) {
  const std::string name = uniqueName("absurd");
  const size_t bytes = size_t{1} << 50;  // 1 PiB
  ShmSegment seg;
  std::string why;
  EXPECT_EQ(seg.create(name, bytes, 1, &why), ncclSystemError);
  EXPECT_NE(why.find(std::to_string(bytes)), std::string::npos) << why;
  EXPECT_NE(why.find(name), std::string::npos) << why;
  EXPECT_NE(why.find("available"), std::string::npos) << why;
  EXPECT_EQ(seg.data(), nullptr);
  EXPECT_FALSE(socketListed(name));
}

// Runs `body` in a child that became user nobody; its exit status, or -1 when it died.
int asNobody(const std::function<int()>& body) {
  const pid_t child = fork();
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(90);
    _exit(body());
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST(ShmSegment, AnotherUserIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run a peer as another user";
  const std::string name = uniqueName("uid");
  ShmSegment mine;
  std::string why;
  ASSERT_EQ(mine.create(name, 4096, 1, &why), ncclSuccess) << why;
  const int rc = asNobody([&] {
    // Weft's own fetch refuses a creator of another user before the creator can answer.
    ShmSegment seg;
    bool notYet = true;
    std::string err;
    const ncclResult_t r = fetch(&seg, name, 4096, &notYet, &err);
    if (r == ncclSuccess) return notYet ? 2 : 3;
    if (err.find("uid 0") == std::string::npos) return 4;
    // A client that skips that check still gets no descriptor: the creator refuses it.
    sockaddr_un addr;
    socklen_t len = 0;
    const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (!shmSocketAddress(name, &addr, &len, &err) || connect(s, reinterpret_cast<sockaddr*>(&addr), len) != 0)
      return 5;
    FdOffer answer;
    iovec iov{&answer, sizeof answer};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    timeval tv{5, 0};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (recvmsg(s, &msg, 0) != static_cast<ssize_t>(sizeof answer)) return 6;
    if (answer.status != FdOffer::kRefusedUid) return 7;
    return CMSG_FIRSTHDR(&msg) == nullptr ? 0 : 8;
  });
  EXPECT_EQ(rc, 0) << "2: never answered, 3: mapped another user's memory, 4: wrong message, 5: no connection, "
                      "6: no answer, 7: not refused, 8: a descriptor came along, 90: setuid failed";
  // The refusal did not use up the one fetch this segment was made for.
  ShmSegment theirs;
  bool notYet = true;
  EXPECT_EQ(fetch(&theirs, name, 4096, &notYet, &why), ncclSuccess) << why;
  EXPECT_FALSE(notYet);
}

// Anyone may bind an abstract name first: a segment offered by another user is never mapped.
TEST(ShmSegment, AnotherUsersOfferIsNotMapped) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run a creator as another user";
  const std::string name = uniqueName("squat");
  int ready[2], done[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(done), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char ok = 0;
    ShmSegment seg;
    std::string err;
    if (setgid(65534) == 0 && setuid(65534) == 0) ok = seg.create(name, 4096, 1, &err) == ncclSuccess ? 1 : 2;
    (void)!write(ready[1], &ok, 1);
    char c;
    (void)!read(done[0], &c, 1);  // keep offering until the parent has tried
    _exit(0);
  }
  char ok = 0;
  ASSERT_EQ(read(ready[0], &ok, 1), 1);
  EXPECT_EQ(ok, 1) << "0: setuid failed, 2: the child could not create its segment";
  ShmSegment theirs;
  bool notYet = true;
  std::string why;
  EXPECT_EQ(fetch(&theirs, name, 4096, &notYet, &why), ncclSystemError);
  EXPECT_NE(why.find("uid 65534"), std::string::npos) << why;
  EXPECT_EQ(theirs.data(), nullptr);
  (void)!write(done[1], "x", 1);
  int status = 0;
  EXPECT_EQ(waitpid(child, &status, 0), child);
  for (int fd : {ready[0], ready[1], done[0], done[1]}) close(fd);
}

}  // namespace
}  // namespace weft
