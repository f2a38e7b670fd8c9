#include "sockets/deadline.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

namespace weft {

Deadline Deadline::immediate() {
  Deadline d;
  d.never_ = false;
  d.at_ = Clock::now();
  return d;
}

Deadline Deadline::afterMs(int64_t ms) {
  Deadline d;
  // Beyond ~30 years the addition could overflow the clock; such a limit is "never" anyway.
  if (ms <= 0 || ms > (int64_t{1} << 40)) return d;
  d.never_ = false;
  d.at_ = Clock::now() + std::chrono::milliseconds(ms);
  return d;
}

bool Deadline::expired() const { return !never_ && Clock::now() >= at_; }

int64_t Deadline::remainingMs() const {
  if (never_) return -1;
  auto left = at_ - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  return std::chrono::ceil<std::chrono::milliseconds>(left).count();
}

int Deadline::pollTimeout(int capMs) const {
  int64_t left = remainingMs();
  if (left < 0) return capMs;  // never: cap or infinite (-1)
  if (capMs >= 0 && left > capMs) left = capMs;
  return static_cast<int>(std::min<int64_t>(left, INT_MAX));
}

Deadline Deadline::earlier(const Deadline& other) const {
  if (never_) return other;
  if (other.never_) return *this;
  return at_ <= other.at_ ? *this : other;
}

ncclResult_t ioStatusResult(IoStatus s) {
  switch (s) {
    case IoStatus::kOk: return ncclSuccess;
    case IoStatus::kError: return ncclSystemError;
    default: return ncclRemoteError;
  }
}

CancelEvent::CancelEvent() { fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

CancelEvent::~CancelEvent() {
  if (fd_ >= 0) ::close(fd_);
}

void CancelEvent::fire() {
  if (fd_ < 0) return;
  uint64_t one = 1;
  // Nobody ever reads the counter, so the descriptor stays readable for all later polls.
  ssize_t r;
  do {
    r = ::write(fd_, &one, sizeof(one));
  } while (r < 0 && errno == EINTR);
}

bool CancelEvent::fired() const {
  if (fd_ < 0) return false;
  pollfd p = {fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}
}  // namespace weft
