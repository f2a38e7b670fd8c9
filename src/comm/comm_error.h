// Errors of a communicator: the message goes to the communicator's ErrorState (ncclGetLastError
// with that communicator) and to the process's (ncclGetLastError(NULL)).
#pragma once
#include <cstdarg>

#include "base/errors.h"
#include "nccl.h"

struct ncclComm;

namespace weft {

// Records a formatted message for comm (may be null) and the process, logs it at WARN level,
// and returns code so call sites can write `return setError(comm, ncclInvalidArgument, ...)`.
ncclResult_t setError(ncclComm* comm, ncclResult_t code, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
ncclResult_t setErrorV(ncclComm* comm, ncclResult_t code, const char* fmt, va_list ap);

}  // namespace weft
