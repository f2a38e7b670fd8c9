// Group entry points.
#include "api/api_support.h"
#include "enqueue/group.h"

using namespace weft;

WEFT_ALIAS(ncclResult_t, ncclGroupStart)
WEFT_API ncclResult_t pncclGroupStart() {
  return apiGuard("ncclGroupStart", [] { return groupStart(); });
}

WEFT_ALIAS(ncclResult_t, ncclGroupEnd)
WEFT_API ncclResult_t pncclGroupEnd() {
  return apiGuard("ncclGroupEnd", [] { return groupEnd(); });
}

WEFT_ALIAS(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t*)
WEFT_API ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  return apiGuard("ncclGroupSimulateEnd", [&] {
    // Checked before the group is touched, so a caller with a bad struct can still end it.
    if (simInfo == nullptr) return setError(nullptr, ncclInvalidArgument, "ncclGroupSimulateEnd: simInfo is NULL");
    if (simInfo->magic != 0x74685283u || simInfo->size < sizeof(ncclSimInfo_t))
      return setError(nullptr, ncclInvalidArgument,
                      "ncclGroupSimulateEnd: simInfo (magic 0x%x, size %zu) was not set from NCCL_SIM_INFO_INITIALIZER",
                      simInfo->magic, simInfo->size);
    return groupSimulateEnd(&simInfo->estimatedTime);
  });
}
