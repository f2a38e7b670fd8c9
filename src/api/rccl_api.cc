// RCCL's extras outside NCCL's API.
//
// The MSCCL entry points: RCCL removed MSCCL and keeps these as calls that do nothing and succeed,
// so that programs written for it still link and run; Weft does the same, and says so in a warning
// each time, as RCCL does.
//
// rcclGetAlgoInfo, rcclGetAlgoName and rcclGetProtocolName: no installed header declares them;
// rccl-tests looks them up with dlsym to print what each size runs with. Weft answers from its own
// selection (src/enqueue/algo_info.h). As in RCCL, they have no pnccl-style twins.
#include <string>

#include "api/api_support.h"
#include "base/log.h"
#include "enqueue/algo_info.h"
#include "rccl/rccl.h"

using namespace weft;

namespace {
ncclResult_t removed(const char* fn) {
  WEFT_WARN("%s: MSCCL is not part of Weft (RCCL removed it too); the call does nothing", fn);
  return ncclSuccess;
}
}  // namespace

extern "C" __attribute__((visibility("default"), weak, alias("pmscclLoadAlgo"))) ncclResult_t mscclLoadAlgo(
    const char*, mscclAlgoHandle_t*, int);
WEFT_API ncclResult_t pmscclLoadAlgo(const char* mscclAlgoFilePath, mscclAlgoHandle_t* mscclAlgoHandle, int rank) {
  (void)mscclAlgoFilePath, (void)mscclAlgoHandle, (void)rank;
  return apiGuard("mscclLoadAlgo", [] { return removed("mscclLoadAlgo"); });
}

extern "C" __attribute__((visibility("default"), weak, alias("pmscclRunAlgo"))) ncclResult_t mscclRunAlgo(
    const void*, const size_t[], const size_t[], void*, const size_t[], const size_t[], size_t, ncclDataType_t, int,
    int, ncclRedOp_t, mscclAlgoHandle_t, ncclComm_t, cudaStream_t);
WEFT_API ncclResult_t pmscclRunAlgo(const void* sendBuff, const size_t sendCounts[], const size_t sDisPls[],
                                    void* recvBuff, const size_t recvCounts[], const size_t rDisPls[], size_t count,
                                    ncclDataType_t dataType, int root, int peer, ncclRedOp_t op,
                                    mscclAlgoHandle_t mscclAlgoHandle, ncclComm_t comm, cudaStream_t stream) {
  (void)sendBuff, (void)sendCounts, (void)sDisPls, (void)recvBuff, (void)recvCounts, (void)rDisPls, (void)count;
  (void)root, (void)peer, (void)mscclAlgoHandle, (void)comm, (void)stream;
  keepEnumArgInRange(&dataType);
  keepEnumArgInRange(&op);
  return apiGuard("mscclRunAlgo", [] { return removed("mscclRunAlgo"); });
}

extern "C" __attribute__((visibility("default"), weak, alias("pmscclUnloadAlgo")))
ncclResult_t mscclUnloadAlgo(mscclAlgoHandle_t);
WEFT_API ncclResult_t pmscclUnloadAlgo(mscclAlgoHandle_t mscclAlgoHandle) {
  (void)mscclAlgoHandle;
  return apiGuard("mscclUnloadAlgo", [] { return removed("mscclUnloadAlgo"); });
}

// int for RCCL's internal ncclFunc_t: an enum of the same size, passed the same way.
WEFT_API ncclResult_t rcclGetAlgoInfo(ncclComm_t comm, int coll, uint64_t count, ncclDataType_t dataType,
                                      int collNetSupport, int nvlsSupport, int numPipeOps, int* algo, int* protocol,
                                      int* maxChannels) {
  keepEnumArgInRange(&dataType);
  (void)collNetSupport, (void)nvlsSupport, (void)numPipeOps;  // Weft has no CollNet or NVLS
  return apiGuard("rcclGetAlgoInfo", [&] {
    const char* fn = "rcclGetAlgoInfo";
    WEFT_CHECK(checkCommUsable(fn, comm));
    WEFT_CHECK(checkDtype(fn, comm, dataType));
    if (algo == nullptr || protocol == nullptr || maxChannels == nullptr)
      return setError(comm, ncclInvalidArgument, "%s: algo, protocol or maxChannels is NULL", fn);
    std::string why;
    const ncclResult_t r = describeChoice(comm, coll, count, dataType, algo, protocol, maxChannels, &why);
    return r == ncclSuccess ? r : setError(comm, r, "%s: %s", fn, why.c_str());
  });
}

WEFT_API ncclResult_t rcclGetAlgoName(int algo, const char** algoName) {
  return apiGuard("rcclGetAlgoName", [&] {
    if (algoName == nullptr) return setError(nullptr, ncclInvalidArgument, "rcclGetAlgoName: algoName is NULL");
    *algoName = choiceAlgorithmName(algo);
    if (*algoName == nullptr)
      return setError(nullptr, ncclInvalidArgument, "rcclGetAlgoName: no algorithm has id %d", algo);
    return ncclSuccess;
  });
}

WEFT_API ncclResult_t rcclGetProtocolName(int protocol, const char** protocolName) {
  return apiGuard("rcclGetProtocolName", [&] {
    if (protocolName == nullptr)
      return setError(nullptr, ncclInvalidArgument, "rcclGetProtocolName: protocolName is NULL");
    *protocolName = choiceProtocolName(protocol);
    if (*protocolName == nullptr)
      return setError(nullptr, ncclInvalidArgument, "rcclGetProtocolName: no protocol has id %d", protocol);
    return ncclSuccess;
  });
}
