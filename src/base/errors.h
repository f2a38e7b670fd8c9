// Error messages for ncclGetLastError: one per communicator and one for the process (the latter
// also holds the newest message of any communicator, which is what NCCL users read with NULL).
// A communicator keeps its own in an ErrorState; comm/comm_error.h records into it by communicator.
#pragma once
#include <atomic>
#include <cstdarg>
#include <mutex>
#include <string>

#include "nccl.h"

namespace weft {

constexpr size_t kErrorMessageBytes = 1024;

// The last error message of a communicator and its asynchronous error code.
class ErrorState {
 public:
  void setMessage(const char* msg);
  // The newest message ("" when none), copied under the lock: another thread may be recording one.
  std::string message() const;
  // The same as a copy owned by the calling thread, valid until its next call: ncclGetLastError's
  // answer, which must outlive this call without the caller freeing anything.
  const char* messageForCaller() const;
  void setAsync(ncclResult_t code) {
    int expected = ncclSuccess;
    async_.compare_exchange_strong(expected, code);
  }
  void forceAsync(ncclResult_t code) { async_.store(code); }
  ncclResult_t async() const { return static_cast<ncclResult_t>(async_.load()); }

  // The failure that ended the communicator, kept apart from the messages of later calls: each
  // refusal quotes the failure itself, never the previous refusal (which would nest them deeper
  // with every call). rememberFailure() takes the current message, the first time only.
  void rememberFailure();
  std::string failure() const;
  // True for the first refusal after the failure only: the later ones are recorded, not logged.
  bool firstRefusal() { return !refused_.exchange(true); }

 private:
  mutable std::mutex mutex_;
  char message_[kErrorMessageBytes] = "";
  char failure_[kErrorMessageBytes] = "";
  std::atomic<bool> refused_{false};
  std::atomic<int> async_{ncclSuccess};
};

// Records a formatted message for `where` (null: the process only) and the process, logs it at
// WARN level, and returns code so call sites can write `return reportError(..., code, ...)`.
ncclResult_t reportError(ErrorState* where, ncclResult_t code, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
ncclResult_t reportErrorV(ErrorState* where, ncclResult_t code, const char* fmt, va_list ap);
// The same without the WARN line, for a message the user was already told.
ncclResult_t recordErrorQuietly(ErrorState* where, ncclResult_t code, const char* msg);
// The newest message of the process ("" when none), as a copy owned by the calling thread: valid
// until this thread's next call, whatever other threads record meanwhile.
const char* globalLastError();
// Text for a result code.
const char* resultString(ncclResult_t code);

}  // namespace weft
