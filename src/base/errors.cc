#include "base/errors.h"

#include <cstdio>
#include <cstring>
#include <mutex>

#include "base/log.h"

namespace weft {
namespace {
// The process-wide message is read by ncclGetLastError(NULL) from any thread while other threads
// record theirs. A reader gets its own copy, taken under the mutex: reading the shared buffer
// itself would race with the next writer (snprintf clears its first byte before it writes, so a
// reader could see an empty message, or half of one).
std::mutex gMutex;
char gLastError[kErrorMessageBytes] = "";
}  // namespace

ncclResult_t recordErrorQuietly(ErrorState* where, ncclResult_t code, const char* msg) {
  {
    std::lock_guard<std::mutex> lock(gMutex);
    snprintf(gLastError, sizeof gLastError, "%s", msg);
  }
  if (where != nullptr) where->setMessage(msg);
  return code;
}

ncclResult_t reportErrorV(ErrorState* where, ncclResult_t code, const char* fmt, va_list ap) {
  char msg[kErrorMessageBytes];
  vsnprintf(msg, sizeof msg, fmt, ap);
  recordErrorQuietly(where, code, msg);
  WEFT_WARN("%s (%s)", msg, resultString(code));
  return code;
}

ncclResult_t reportError(ErrorState* where, ncclResult_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ncclResult_t r = reportErrorV(where, code, fmt, ap);
  va_end(ap);
  return r;
}

const char* globalLastError() {
  thread_local char copy[kErrorMessageBytes];
  std::lock_guard<std::mutex> lock(gMutex);
  memcpy(copy, gLastError, sizeof copy);
  return copy;
}

const char* resultString(ncclResult_t code) {
  switch (code) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled GPU runtime error (a CUDA or HIP call failed)";
    case ncclSystemError: return "unhandled system error (a system call, socket or shared memory failed)";
    case ncclInternalError: return "internal error (a bug in Weft; please report it)";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage (the API was used in a way it does not allow)";
    case ncclRemoteError: return "remote process exited or a network error occurred";
    case ncclInProgress: return "operation in progress";
    case ncclTimeout: return "timeout (a wait ran out of time)";
    default: return "unknown result code";
  }
}

void ErrorState::setMessage(const char* msg) {
  std::lock_guard<std::mutex> lock(mutex_);
  snprintf(message_, sizeof message_, "%s", msg);
}

std::string ErrorState::message() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return message_;
}

const char* ErrorState::messageForCaller() const {
  thread_local char copy[kErrorMessageBytes];
  std::lock_guard<std::mutex> lock(mutex_);
  memcpy(copy, message_, sizeof copy);
  return copy;
}

}  // namespace weft

namespace weft {

void ErrorState::rememberFailure() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failure_[0] == 0) snprintf(failure_, sizeof failure_, "%s", message_[0] ? message_ : "no message recorded");
}

std::string ErrorState::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

}  // namespace weft
