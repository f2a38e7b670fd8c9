// What every C entry point shares: export and aliasing, turning exceptions into result codes, and
// the argument checks. Each check records a message naming the function and the cause.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>

#include "api/device_args.h"
#include "base/clock.h"
#include "base/errors.h"
#include "base/result.h"
#include "comm/comm.h"
#include "comm/comm_error.h"
#include "comm/comm_registry.h"
#include "math/reduce_host.h"
#include "nccl.h"
#include "trace/trace.h"

// Defines the real symbol pnccl<Name>; nccl<Name> is a weak alias of it, so a profiler can define
// its own nccl<Name> and still reach Weft through pnccl<Name> (the PMPI idiom, as NCCL does).
#define WEFT_API extern "C" __attribute__((visibility("default")))
#define WEFT_ALIAS(ret, name, ...) \
  extern "C" __attribute__((visibility("default"), weak, alias("p" #name))) ret name(__VA_ARGS__);

namespace weft {

// Runs an entry point's body, turning any exception into a result code and a message: no
// exception ever crosses the C boundary.
template <typename F>
ncclResult_t runGuarded(const char* fn, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return setError(nullptr, ncclSystemError, "%s: out of host memory", fn);
  } catch (const std::exception& e) {
    return setError(nullptr, ncclInternalError, "%s: %s", fn, e.what());
  } catch (...) {
    return setError(nullptr, ncclInternalError, "%s: unknown exception", fn);
  }
}

// Every entry point runs through here: guarded, and timed on the trace when one is written
// (trace/trace.h; when none is, this costs a load and a branch).
template <typename F>
ncclResult_t apiGuard(const char* fn, F&& body) {
  if (!trace::on()) return runGuarded(fn, body);
  const int64_t start = nowNs();
  const ncclResult_t r = runGuarded(fn, body);
  trace::record(trace::Cat::kApi, -1, fn, start, nowNs(), trace::Args().str("result", resultString(r)).take());
  return r;
}

// The communicator is live (created by this process and not yet destroyed).
inline ncclResult_t checkCommHandle(const char* fn, const ncclComm* comm) {
  if (comm == nullptr) return setError(nullptr, ncclInvalidArgument, "%s: comm is NULL", fn);
  if (!isLiveComm(comm))
    return setError(nullptr, ncclInvalidArgument,
                    "%s: comm %p is not a live communicator (never created, or already destroyed or aborted)", fn,
                    static_cast<const void*>(comm));
  return ncclSuccess;
}

// The communicator may start a new operation.
inline ncclResult_t checkCommUsable(const char* fn, ncclComm* comm) {
  ncclResult_t r = checkCommHandle(fn, comm);
  if (r != ncclSuccess) return r;
  switch (comm->getState()) {
    case CommState::kReady: return ncclSuccess;
    case CommState::kInitializing:
      return setError(comm, ncclInvalidUsage,
                      "%s: communicator is still initializing (poll ncclCommGetAsyncError until it is ncclSuccess)",
                      fn);
    case CommState::kFinalized: return setError(comm, ncclInvalidUsage, "%s: communicator was finalized", fn);
    case CommState::kRevoked: return setError(comm, ncclInvalidUsage, "%s: communicator was revoked", fn);
    case CommState::kSuspended:
      return setError(comm, ncclInvalidUsage,
                      "%s: communicator is suspended (ncclCommSuspend); call ncclCommResume first", fn);
    case CommState::kFailed: {
      // Quotes the failure itself; said (logged) once, recorded for every call.
      const std::string msg = std::string(fn) + ": communicator failed earlier (" + comm->errors.failure() +
                              "); destroy or abort it";
      if (comm->errors.firstRefusal()) return setError(comm, ncclInvalidUsage, "%s", msg.c_str());
      return recordErrorQuietly(&comm->errors, ncclInvalidUsage, msg.c_str());
    }
  }
  return ncclSuccess;
}

inline ncclResult_t checkStream(const char* fn, ncclComm* comm, const void* stream) {
  if (!comm->hostMode) return checkDeviceStream(comm, fn, stream);
  if (stream != nullptr)
    return setError(comm, ncclInvalidArgument,
                    "%s: rank %d is in host mode (no GPU), so the stream argument must be NULL; the call runs to "
                    "completion before it returns",
                    fn, comm->rank);
  return ncclSuccess;
}

// An enum argument as the caller passed it. The C ABI lets a program pass any 32-bit value (C
// converts -1 to the enum freely), but in C++ an ncclDataType_t or ncclRedOp_t holds only
// 0..0x7fffffff (nccl.h widens both that far) and loading a negative one is undefined behaviour.
// Entry points call this first: it reads the argument as bytes and replaces a negative value with
// 0x7fffffff, which the checks below refuse like any other unknown value.
// enumArgBits reads such an argument's value without loading it as the enum, for an enum that has
// no room for an invalid value (ncclScalarResidence_t holds only 0 and 1).
template <class E>
inline int32_t enumArgBits(const E& arg) {
  static_assert(sizeof(E) == sizeof(int32_t), "the NCCL enums are 4 bytes");
  int32_t v = 0;
  memcpy(&v, &arg, sizeof v);
  return v;
}
template <class E>
inline void keepEnumArgInRange(E* arg) {
  int32_t v = enumArgBits(*arg);
  if (v >= 0) return;
  v = INT32_MAX;
  memcpy(arg, &v, sizeof v);
}

// NCCL's datatypes and Weft's complex ones (weftComplex64/128); any other value is refused.
inline ncclResult_t checkDtype(const char* fn, ncclComm* comm, ncclDataType_t dtype) {
  if (!isValidDataType(dtype))
    return setError(comm, ncclInvalidArgument, "%s: invalid datatype %d", fn, static_cast<int>(dtype));
  return ncclSuccess;
}

inline ncclResult_t checkOp(const char* fn, ncclComm* comm, ncclRedOp_t op, ncclDataType_t dtype) {
  if (static_cast<int>(op) >= 0 && op < ncclNumOps) {
    if (!opDefinedFor(op, dtype))
      return setError(comm, ncclInvalidArgument, "%s: %s is not defined on %s (complex numbers have no order)", fn,
                      op == ncclMax ? "ncclMax" : "ncclMin", dataTypeName(dtype));
    return ncclSuccess;
  }
  UserRedOp u;
  if (static_cast<int>(op) < 0 || !comm->redOps.lookup(op, &u))
    return setError(comm, ncclInvalidArgument,
                    "%s: invalid reduction op %d (not built in, not created on this communicator)", fn,
                    static_cast<int>(op));
  if (u.dtype != dtype)
    return setError(comm, ncclInvalidArgument, "%s: reduction op %d was created for %s but the call uses %s", fn,
                    static_cast<int>(op), dataTypeName(u.dtype), dataTypeName(dtype));
  return ncclSuccess;
}

inline ncclResult_t checkRank(const char* fn, ncclComm* comm, int rank, const char* what) {
  if (rank < 0 || rank >= comm->nranks)
    return setError(comm, ncclInvalidArgument, "%s: invalid %s %d (communicator has %d ranks)", fn, what, rank,
                    comm->nranks);
  return ncclSuccess;
}

// count elements of dtype, times `multiple` (e.g. nranks for gathered buffers), must fit in size_t.
inline ncclResult_t checkCount(const char* fn, ncclComm* comm, size_t count, ncclDataType_t dtype, size_t multiple) {
  size_t es = dataTypeSize(dtype), total;
  if (__builtin_mul_overflow(count, es, &total) || __builtin_mul_overflow(total, multiple, &total) ||
      total > (SIZE_MAX >> 1))
    return setError(comm, ncclInvalidArgument, "%s: count %zu of %s overflows the address space", fn, count,
                    dataTypeName(dtype));
  return ncclSuccess;
}

// A window handle must be one of comm's live windows; checked before it is dereferenced, so that a
// stale or foreign handle is an error rather than a crash.
inline ncclResult_t checkWindow(const char* fn, ncclComm* comm, ncclWindow_t win, const char* what) {
  if (win == nullptr) return setError(comm, ncclInvalidArgument, "%s: %s is NULL", fn, what);
  std::lock_guard<std::mutex> lock(comm->regMutex);
  for (const auto& w : comm->windowHandles)
    if (w.get() == win) return ncclSuccess;
  return setError(comm, ncclInvalidArgument,
                  "%s: %s %p is not a window of this communicator (registered on another one, or deregistered)", fn,
                  what, static_cast<void*>(win));
}

inline ncclResult_t checkBuffer(const char* fn, ncclComm* comm, const void* p, size_t count, const char* what) {
  if (p == nullptr && count > 0)
    return setError(comm, ncclInvalidArgument, "%s: %s is NULL but count is %zu", fn, what, count);
  if (!comm->hostMode && p != nullptr && count > 0) return checkDeviceBuffer(comm, fn, p, what);
  return ncclSuccess;
}

}  // namespace weft
