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
    // The estimate needs the cost model of the tuner, which Weft does not have yet. The group is
    // left open and untouched so that the caller can still end it normally.
    return setError(nullptr, ncclInvalidUsage,
                    "ncclGroupSimulateEnd: time estimates come with Weft's tuner (cost model), which is not built "
                    "yet; end the group with ncclGroupEnd");
  });
}
