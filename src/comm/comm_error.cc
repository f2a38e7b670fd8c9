#include "comm/comm_error.h"

#include "comm/comm.h"

namespace weft {

ncclResult_t setErrorV(ncclComm* comm, ncclResult_t code, const char* fmt, va_list ap) {
  return reportErrorV(comm != nullptr ? &comm->errors : nullptr, code, fmt, ap);
}

ncclResult_t setError(ncclComm* comm, ncclResult_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ncclResult_t r = setErrorV(comm, code, fmt, ap);
  va_end(ap);
  return r;
}

}  // namespace weft
