// The nccl<Coll>Config entry points (NCCL 2.31): each checks its ncclCollConfig_t and runs the plain
// collective with the call's settings (call_settings.h). A NULL config is the plain call.
//
// What the settings do in Weft (docs/api.md): algSelection narrows the algorithms and protocols
// this call may use (tuning/call_selection.h, NCCL's grammar), unless NCCL_ALGO / NCCL_PROTO
// narrowed the collective, which then wins as in NCCL; minCTAs / maxCTAs bound its channels;
// userProfilerTag goes with its trace events. nvlsCTAs, cgaClusterSize and CTAPolicy steer GPU
// kernels and change nothing here; ext lists vendor options, of which Weft has none.
#include <cstddef>

#include "api/api_support.h"
#include "api/call_settings.h"

using namespace weft;

namespace weft {
namespace {

thread_local const CallSettings* tCallSettings = nullptr;

// The first struct that had the calls (2.31) ends where launchCompletionEvent begins.
constexpr size_t kMinConfigBytes = offsetof(ncclCollConfig_t, launchCompletionEvent);

bool setInt(int v) { return v != NCCL_CONFIG_UNDEF_INT; }

// NCCL's checks, in its order, then Weft's own; *out gets the settings for the plain call.
ncclResult_t readConfig(const char* fn, ncclComm* comm, const ncclCollConfig_t* config, CallSettings* out) {
  ncclComm* errComm = isLiveComm(comm) ? comm : nullptr;
  if (config->size < kMinConfigBytes)
    return setError(errComm, ncclInvalidArgument,
                    "%s: config->size is %zu, smaller than any ncclCollConfig_t (%zu bytes); start from "
                    "NCCL_COLLCONFIG_INITIALIZER",
                    fn, config->size, kMinConfigBytes);
  if (config->magic != NCCL_API_MAGIC)
    return setError(errComm, ncclInvalidArgument,
                    "%s: config->magic is 0x%x, not 0x%x: the config was not started from "
                    "NCCL_COLLCONFIG_INITIALIZER",
                    fn, config->magic, static_cast<unsigned>(NCCL_API_MAGIC));
  if (config->forceAlgSelection != 0 && config->forceAlgSelection != 1)
    return setError(errComm, ncclInvalidArgument, "%s: config->forceAlgSelection is %d; it must be 0 or 1", fn,
                    config->forceAlgSelection);
  const int allPolicies = NCCL_CTA_POLICY_DEFAULT | NCCL_CTA_POLICY_EFFICIENCY | NCCL_CTA_POLICY_ZERO;
  if (setInt(config->CTAPolicy) && (config->CTAPolicy < 0 || config->CTAPolicy > allPolicies))
    return setError(errComm, ncclInvalidArgument, "%s: config->CTAPolicy is %d; it must be unset or 0..%d", fn,
                    config->CTAPolicy, allPolicies);
  for (const auto& [value, name] : {std::pair{config->minCTAs, "minCTAs"}, std::pair{config->maxCTAs, "maxCTAs"}})
    if (setInt(value) && value < 1)
      return setError(errComm, ncclInvalidArgument, "%s: config->%s is %d; it must be unset or at least 1", fn, name,
                      value);
  if (setInt(config->minCTAs) && setInt(config->maxCTAs) && config->minCTAs > config->maxCTAs)
    return setError(errComm, ncclInvalidArgument, "%s: config->minCTAs (%d) is larger than config->maxCTAs (%d)", fn,
                    config->minCTAs, config->maxCTAs);
  // A 2.31 caller's struct ends before the event; only a longer one carries it.
  if (config->size >= sizeof(ncclCollConfig_t) && config->launchCompletionEvent != nullptr)
    return setError(errComm, ncclInvalidUsage, "%s: config->launchCompletionEvent is set, but %s; pass NULL", fn,
                    errComm != nullptr && errComm->hostMode
                        ? "a host-mode communicator launches no kernel whose launch an event could mark"
                        : "Weft does not record launch-completion events on GPU communicators yet");
  out->fn = fn;
  out->algSelection = config->algSelection;
  out->forceAlgSelection = config->forceAlgSelection == 1;
  out->minChannels = setInt(config->minCTAs) ? config->minCTAs : 0;
  out->maxChannels = setInt(config->maxCTAs) ? config->maxCTAs : 0;
  out->userProfilerTag = config->userProfilerTag;
  return ncclSuccess;
}

// Runs `plain` (the plain entry point, with the call's arguments bound) with config's settings.
template <typename Plain>
ncclResult_t runConfigured(const char* fn, ncclComm* comm, const ncclCollConfig_t* config, Plain&& plain) {
  if (config == nullptr) return plain();
  return apiGuard(fn, [&] {
    CallSettings settings;
    WEFT_CHECK(readConfig(fn, comm, config, &settings));
    CallSettingsScope scope(&settings);
    return plain();
  });
}

}  // namespace

const CallSettings* currentCallSettings() { return tCallSettings; }

CallSettingsScope::CallSettingsScope(const CallSettings* s) : previous_(tCallSettings) { tCallSettings = s; }
CallSettingsScope::~CallSettingsScope() { tCallSettings = previous_; }

}  // namespace weft

WEFT_ALIAS(ncclResult_t, ncclAllReduceConfig, const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
           cudaStream_t, const ncclCollConfig_t*)
WEFT_API ncclResult_t pncclAllReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
                                           const ncclCollConfig_t* config) {
  return runConfigured("ncclAllReduceConfig", comm, config,
                       [&] { return pncclAllReduce(sendbuff, recvbuff, count, datatype, op, comm, stream); });
}

WEFT_ALIAS(ncclResult_t, ncclBroadcastConfig, const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t,
           const ncclCollConfig_t*)
WEFT_API ncclResult_t pncclBroadcastConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                           int root, ncclComm_t comm, cudaStream_t stream,
                                           const ncclCollConfig_t* config) {
  return runConfigured("ncclBroadcastConfig", comm, config,
                       [&] { return pncclBroadcast(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}

WEFT_ALIAS(ncclResult_t, ncclReduceConfig, const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
           cudaStream_t, const ncclCollConfig_t*)
WEFT_API ncclResult_t pncclReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
                                        const ncclCollConfig_t* config) {
  return runConfigured("ncclReduceConfig", comm, config,
                       [&] { return pncclReduce(sendbuff, recvbuff, count, datatype, op, root, comm, stream); });
}

WEFT_ALIAS(ncclResult_t, ncclAllGatherConfig, const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t,
           const ncclCollConfig_t*)
WEFT_API ncclResult_t pncclAllGatherConfig(const void* sendbuff, void* recvbuff, size_t sendcount,
                                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
                                           const ncclCollConfig_t* config) {
  return runConfigured("ncclAllGatherConfig", comm, config,
                       [&] { return pncclAllGather(sendbuff, recvbuff, sendcount, datatype, comm, stream); });
}

WEFT_ALIAS(ncclResult_t, ncclReduceScatterConfig, const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
           cudaStream_t, const ncclCollConfig_t*)
WEFT_API ncclResult_t pncclReduceScatterConfig(const void* sendbuff, void* recvbuff, size_t recvcount,
                                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                               cudaStream_t stream, const ncclCollConfig_t* config) {
  return runConfigured("ncclReduceScatterConfig", comm, config,
                       [&] { return pncclReduceScatter(sendbuff, recvbuff, recvcount, datatype, op, comm, stream); });
}

WEFT_ALIAS(ncclResult_t, ncclAlltoAllConfig, const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t,
           const ncclCollConfig_t*)
WEFT_API ncclResult_t pncclAlltoAllConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                          ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) {
  return runConfigured("ncclAlltoAllConfig", comm, config,
                       [&] { return pncclAlltoAll(sendbuff, recvbuff, count, datatype, comm, stream); });
}

WEFT_ALIAS(ncclResult_t, ncclGatherConfig, const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t,
           const ncclCollConfig_t*)
WEFT_API ncclResult_t pncclGatherConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                        int root, ncclComm_t comm, cudaStream_t stream,
                                        const ncclCollConfig_t* config) {
  return runConfigured("ncclGatherConfig", comm, config,
                       [&] { return pncclGather(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}

WEFT_ALIAS(ncclResult_t, ncclScatterConfig, const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t,
           const ncclCollConfig_t*)
WEFT_API ncclResult_t pncclScatterConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                         int root, ncclComm_t comm, cudaStream_t stream,
                                         const ncclCollConfig_t* config) {
  return runConfigured("ncclScatterConfig", comm, config,
                       [&] { return pncclScatter(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}
