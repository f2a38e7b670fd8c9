// NCCL 2.30's one-sided operations on windows: ncclPutSignal, ncclSignal and ncclWaitSignal.
//
// Not implemented yet. Windows in Weft are registered locally (memory_api.cc): no rank knows a
// peer's window, and nothing on the target side applies a put while its owner is not in a call.
// Each entry point checks its arguments, so a wrong call still gets ncclInvalidArgument, and then
// answers ncclInvalidUsage saying that the operation is not available, rather than doing nothing.
#include "api/api_support.h"

using namespace weft;

namespace {

constexpr const char* kNotYet =
    "one-sided operations on windows are not implemented in this version of Weft (docs/api.md); use "
    "ncclSend/ncclRecv";

ncclResult_t checkSignalTarget(const char* fn, ncclComm* comm, int peer, int sigIdx, int ctx, unsigned flags) {
  WEFT_CHECK(checkCommUsable(fn, comm));
  WEFT_CHECK(checkRank(fn, comm, peer, "peer"));
  if (sigIdx < 0 || ctx < 0)
    return setError(comm, ncclInvalidArgument, "%s: sigIdx %d and ctx %d must not be negative", fn, sigIdx, ctx);
  if (flags != 0) return setError(comm, ncclInvalidArgument, "%s: flags must be 0 (got 0x%x)", fn, flags);
  return ncclSuccess;
}

}  // namespace

WEFT_ALIAS(ncclResult_t, ncclPutSignal, const void*, size_t, ncclDataType_t, int, ncclWindow_t, size_t, int, int,
           unsigned int, ncclComm_t, WEFT_STREAM_T)
WEFT_API ncclResult_t pncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
                                     ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx,
                                     unsigned int flags, ncclComm_t comm, WEFT_STREAM_T stream) {
  keepEnumArgInRange(&datatype);
  return apiGuard("ncclPutSignal", [&] {
    const char* fn = "ncclPutSignal";
    WEFT_CHECK(checkSignalTarget(fn, comm, peer, sigIdx, ctx, flags));
    WEFT_CHECK(checkStream(fn, comm, stream));
    WEFT_CHECK(checkDtype(fn, comm, datatype));
    if (peerWin == nullptr) return setError(comm, ncclInvalidArgument, "%s: peerWin is NULL", fn);
    if (count > 0) WEFT_CHECK(checkBuffer(fn, comm, localbuff, count, "localbuff"));
    (void)peerWinOffset;
    return setError(comm, ncclInvalidUsage, "%s: %s", fn, kNotYet);
  });
}

WEFT_ALIAS(ncclResult_t, ncclSignal, int, int, int, unsigned int, ncclComm_t, WEFT_STREAM_T)
WEFT_API ncclResult_t pncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                                  WEFT_STREAM_T stream) {
  return apiGuard("ncclSignal", [&] {
    const char* fn = "ncclSignal";
    WEFT_CHECK(checkSignalTarget(fn, comm, peer, sigIdx, ctx, flags));
    WEFT_CHECK(checkStream(fn, comm, stream));
    return setError(comm, ncclInvalidUsage, "%s: %s", fn, kNotYet);
  });
}

WEFT_ALIAS(ncclResult_t, ncclWaitSignal, int, ncclWaitSignalDesc_t*, ncclComm_t, WEFT_STREAM_T)
WEFT_API ncclResult_t pncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
                                      WEFT_STREAM_T stream) {
  return apiGuard("ncclWaitSignal", [&] {
    const char* fn = "ncclWaitSignal";
    WEFT_CHECK(checkCommUsable(fn, comm));
    WEFT_CHECK(checkStream(fn, comm, stream));
    if (nDesc < 0 || (nDesc > 0 && signalDescs == nullptr))
      return setError(comm, ncclInvalidArgument, "%s: %d descriptors at %p", fn, nDesc,
                      static_cast<void*>(signalDescs));
    for (int i = 0; i < nDesc; ++i) {
      const ncclWaitSignalDesc_t& d = signalDescs[i];
      WEFT_CHECK(checkRank(fn, comm, d.peer, "signalDescs[].peer"));
      if (d.opCnt < 0 || d.sigIdx < 0 || d.ctx < 0)
        return setError(comm, ncclInvalidArgument, "%s: signalDescs[%d] has opCnt %d, sigIdx %d, ctx %d", fn, i,
                        d.opCnt, d.sigIdx, d.ctx);
    }
    return setError(comm, ncclInvalidUsage, "%s: %s", fn, kNotYet);
  });
}
