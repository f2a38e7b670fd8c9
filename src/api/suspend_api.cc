// NCCL 2.30's ncclCommSuspend, ncclCommResume and ncclCommMemStats (lifecycle/comm_suspend.cc).
#include "api/api_support.h"
#include "enqueue/group.h"
#include "lifecycle/comm_lifecycle.h"

using namespace weft;

WEFT_ALIAS(ncclResult_t, ncclCommSuspend, ncclComm_t, int)
WEFT_API ncclResult_t pncclCommSuspend(ncclComm_t comm, int flags) {
  return apiGuard("ncclCommSuspend", [&] {
    const char* fn = "ncclCommSuspend";
    WEFT_CHECK(checkCommUsable(fn, comm));
    if (inGroup())
      return setError(comm, ncclInvalidUsage, "%s: call it outside a group (every rank calls it on its own)", fn);
    return commSuspend(comm, flags);
  });
}

WEFT_ALIAS(ncclResult_t, ncclCommResume, ncclComm_t)
WEFT_API ncclResult_t pncclCommResume(ncclComm_t comm) {
  return apiGuard("ncclCommResume", [&] {
    const char* fn = "ncclCommResume";
    WEFT_CHECK(checkCommHandle(fn, comm));
    if (inGroup())
      return setError(comm, ncclInvalidUsage, "%s: call it outside a group (every rank calls it on its own)", fn);
    return commResume(comm);
  });
}

WEFT_ALIAS(ncclResult_t, ncclCommMemStats, ncclComm_t, ncclCommMemStat_t, uint64_t*)
WEFT_API ncclResult_t pncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value) {
  keepEnumArgInRange(&stat);
  return apiGuard("ncclCommMemStats", [&] {
    const char* fn = "ncclCommMemStats";
    WEFT_CHECK(checkCommHandle(fn, comm));
    if (value == nullptr) return setError(comm, ncclInvalidArgument, "%s: value is NULL", fn);
    return commMemStat(comm, stat, value);
  });
}
