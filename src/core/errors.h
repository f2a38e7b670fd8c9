// Error messages for ncclGetLastError: one per communicator and one for the process (the latter
// also holds the newest message of any communicator, which is what NCCL users read with NULL).
#pragma once
#include <cstdarg>

#include "nccl.h"

struct ncclComm;

namespace weft {

// Records a formatted message for comm (may be null) and the process, logs it at WARN level,
// and returns code so call sites can write `return setError(comm, ncclInvalidArgument, ...)`.
ncclResult_t setError(ncclComm* comm, ncclResult_t code, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
ncclResult_t setErrorV(ncclComm* comm, ncclResult_t code, const char* fmt, va_list ap);
// The newest message of the process ("" when none).
const char* globalLastError();
// Text for a result code.
const char* resultString(ncclResult_t code);

}  // namespace weft
