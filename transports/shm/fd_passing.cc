#include "transports/shm/fd_passing.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "sockets/deadline.h"

namespace weft {

std::string shmSocketName(const std::string& segmentName) { return "weft-shm" + segmentName; }

bool shmSocketAddress(const std::string& segmentName, sockaddr_un* addr, socklen_t* len, std::string* why) {
  const std::string name = shmSocketName(segmentName);
  memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  // An abstract address starts with a NUL byte and is exactly `len` bytes long: no terminator.
  if (name.size() + 1 > sizeof addr->sun_path) {
    *why = "shared memory segment name " + segmentName + " is too long for a socket address";
    return false;
  }
  memcpy(addr->sun_path + 1, name.data(), name.size());
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return true;
}

void FdFetch::reset() {
  if (sock_ >= 0) close(sock_);
  sock_ = -1;
}

FdFetch::State FdFetch::step(const std::string& name, int waitMs, int* fd, uint64_t* bytes, std::string* why) {
  *fd = -1;
  if (sock_ < 0) {
    sockaddr_un addr;
    socklen_t len = 0;
    if (!shmSocketAddress(name, &addr, &len, why)) return State::kFailed;
    const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) {
      *why = "cannot make a socket to fetch shared memory segment " + name + ": " + strerror(errno);
      return State::kFailed;
    }
    if (connect(s, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
      const int e = errno;
      close(s);
      // Nobody listens yet (the same answer as a name that does not exist), or its queue is full.
      if (e == ECONNREFUSED || e == ENOENT || e == EAGAIN) return State::kNotYet;
      *why = "cannot connect to shared memory segment " + name + ": " + strerror(e);
      return State::kFailed;
    }
    // Only a process of our own user may hand us memory: anyone in the network namespace can bind
    // an abstract name, so the name alone proves nothing.
    ucred cred{};
    socklen_t credLen = sizeof cred;
    if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &credLen) != 0 || cred.uid != geteuid()) {
      close(s);
      *why = "shared memory segment " + name + " is offered by pid " + std::to_string(cred.pid) + " of uid " +
             std::to_string(cred.uid) + ", not by this user (uid " + std::to_string(geteuid()) + "): not mapped";
      return State::kFailed;
    }
    sock_ = s;
  }
  // The creator's service thread answers within microseconds; waitMs only bounds a stalled one.
  const Deadline deadline = waitMs > 0 ? Deadline::afterMs(waitMs) : Deadline::immediate();
  for (;;) {
    pollfd p{sock_, POLLIN, 0};
    const int rc = poll(&p, 1, deadline.pollTimeout());
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) {
      *why = "waiting for shared memory segment " + name + ": poll failed: " + strerror(errno);
      reset();
      return State::kFailed;
    }
    if (rc == 0) return State::kNotYet;  // keep the connection: the answer comes on a later call
    return receive(name, fd, bytes, why);
  }
}

FdFetch::State FdFetch::receive(const std::string& name, int* fd, uint64_t* bytes, std::string* why) {
  FdOffer offer;
  iovec iov{&offer, sizeof offer};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const ssize_t n = recvmsg(sock_, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  const int e = n < 0 ? errno : 0;
  if (n < 0 && (e == EAGAIN || e == EINTR)) return State::kNotYet;
  int got = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); n > 0 && c != nullptr; c = CMSG_NXTHDR(&msg, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
      memcpy(&got, CMSG_DATA(c), sizeof got);
  reset();
  if (n == 0 || (n < 0 && e == ECONNRESET)) {
    // The creator withdrew the name before answering (it left, or it served every peer it expected):
    // as if it did not exist. The caller's deadline and liveness checks decide what that means.
    return State::kNotYet;
  }
  if (n < 0) {
    *why = "receiving shared memory segment " + name + " failed: " + strerror(e);
    return State::kFailed;
  }
  if (static_cast<size_t>(n) != sizeof offer || offer.magic != FdOffer::kMagic) {
    if (got >= 0) close(got);
    *why = "shared memory segment " + name + ": the creator sent a malformed answer";
    return State::kFailed;
  }
  if (offer.status == FdOffer::kRefusedUid) {
    *why = "shared memory segment " + name + ": its creator refused this process (uid " + std::to_string(geteuid()) +
           "): only processes of the creator's own user may map it";
    return State::kFailed;
  }
  if (got < 0 || (msg.msg_flags & MSG_CTRUNC) != 0) {
    if (got >= 0) close(got);
    *why = "shared memory segment " + name + ": the answer carried no descriptor";
    return State::kFailed;
  }
  *fd = got;
  *bytes = offer.bytes;
  return State::kGot;
}

}  // namespace weft
