// Internal error vocabulary. Functions return ncclResult_t; a failing hop logs a breadcrumb at
// TRACE level and passes the code up. Messages for users go through setError (src/base/errors.h).
#pragma once
#include "base/log.h"
#include "nccl.h"

// Propagates a failure, leaving a breadcrumb (visible with NCCL_DEBUG=TRACE).
#define WEFT_CHECK(expr)                                                           \
  do {                                                                             \
    ncclResult_t weft_res_ = (expr);                                               \
    if (weft_res_ != ncclSuccess && weft_res_ != ncclInProgress) {                 \
      WEFT_TRACE(::weft::kLogAll, "%s -> %d", #expr, static_cast<int>(weft_res_)); \
      return weft_res_;                                                            \
    }                                                                              \
  } while (0)
