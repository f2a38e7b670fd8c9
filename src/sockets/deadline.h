// Bounded, cancellable waits: every wait of the socket layer ends by a deadline or when the
// caller's cancel descriptor fires (ncclCommAbort), and says how it ended.
#pragma once
#include <chrono>
#include <cstdint>

#include "nccl.h"

namespace weft {

// An absolute point in time after which a wait gives up; never() does not expire.
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  static Deadline never() { return Deadline(); }
  // Already expired: a wait with it only looks, never blocks.
  static Deadline immediate();
  // ms <= 0 means no limit: Weft treats a zero or negative timeout as "wait forever".
  static Deadline afterMs(int64_t ms);
  bool isNever() const { return never_; }
  bool expired() const;
  // Milliseconds left, rounded up, at least 0; -1 for never.
  int64_t remainingMs() const;
  // A poll() timeout: the time left, capped at capMs when capMs >= 0.
  int pollTimeout(int capMs = -1) const;
  Deadline earlier(const Deadline& other) const;

 private:
  bool never_ = true;
  Clock::time_point at_{};
};

// How an I/O wait ended. kClosed covers EOF, ECONNRESET and EPIPE: the peer is gone, which callers
// report as a remote failure rather than a local system error.
enum class IoStatus { kOk, kTimeout, kClosed, kAborted, kError };
// kError -> ncclSystemError; kTimeout, kClosed, kAborted -> ncclRemoteError.
ncclResult_t ioStatusResult(IoStatus s);

// A descriptor that becomes readable, and stays so, once fire() is called. Every wait in this layer
// takes such a descriptor (or -1) in its poll set, so one fire() wakes all blocked calls at once.
class CancelEvent {
 public:
  CancelEvent();
  ~CancelEvent();
  CancelEvent(const CancelEvent&) = delete;
  CancelEvent& operator=(const CancelEvent&) = delete;
  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void fire();
  bool fired() const;

 private:
  int fd_ = -1;
};

}  // namespace weft
