// Weft's own extensions (include/weft/weft.h), and RCCL's ncclCommDump (rccl/rccl.h), which gives
// the same state as weftCommDumpState as a map.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>

#include "api/api_support.h"
#include "base/clock.h"
#include "comm/wait_point.h"
#include "rccl/rccl.h"
#include "weft/build_config.h"
#include "weft/weft.h"

using namespace weft;

namespace {
const char* stateName(CommState s) {
  switch (s) {
    case CommState::kInitializing: return "initializing";
    case CommState::kReady: return "ready";
    case CommState::kFinalized: return "finalized";
    case CommState::kRevoked: return "revoked";
    case CommState::kSuspended: return "suspended";
    case CommState::kFailed: return "failed";
  }
  return "?";
}

// Where the communicator's executor waits, if it does: the operation, the step and the peer.
std::string waitReport(const ncclComm* comm) {
  WaitPoint w;
  if (!comm->waits.read(&w)) return "not waiting in an operation";
  const int64_t ms = w.sinceNs > 0 ? (nowNs() - w.sinceNs) / 1000000 : 0;
  return "waiting for " + std::to_string(ms) + " ms: " + describeWait(w);
}
}  // namespace

WEFT_API const char* weftGetVersionString(void) {
  // Host mode exists in every build; a CUDA or HIP build adds its GPU backend.
  static const std::string text = std::string("Weft " WEFT_VERSION_STRING " (NCCL API 2.30.7, backends: host") +
                                  (std::strcmp(WEFT_GPU_BACKEND, "none") == 0 ? "" : ", " WEFT_GPU_BACKEND) + ")";
  return text.c_str();
}

WEFT_API int weftGetVersionCode(void) {
  return WEFT_VERSION_MAJOR * 10000 + WEFT_VERSION_MINOR * 100 + WEFT_VERSION_PATCH;
}

WEFT_API ncclResult_t weftCommIsHostMode(ncclComm_t comm, int* isHostMode) {
  return apiGuard("weftCommIsHostMode", [&] {
    WEFT_CHECK(checkCommHandle("weftCommIsHostMode", comm));
    if (isHostMode == nullptr) return setError(comm, ncclInvalidArgument, "weftCommIsHostMode: isHostMode is NULL");
    *isHostMode = comm->hostMode ? 1 : 0;
    return ncclSuccess;
  });
}

WEFT_API ncclResult_t weftCommGetBackend(ncclComm_t comm, const char** name) {
  return apiGuard("weftCommGetBackend", [&] {
    WEFT_CHECK(checkCommHandle("weftCommGetBackend", comm));
    if (name == nullptr) return setError(comm, ncclInvalidArgument, "weftCommGetBackend: name is NULL");
    *name = comm->hostMode ? "host" : WEFT_GPU_BACKEND;
    return ncclSuccess;
  });
}

WEFT_API ncclResult_t weftCommDumpState(ncclComm_t comm, char* buf, size_t len) {
  return apiGuard("weftCommDumpState", [&] {
    WEFT_CHECK(checkCommHandle("weftCommDumpState", comm));
    if (buf == nullptr || len == 0) return setError(comm, ncclInvalidArgument, "weftCommDumpState: empty buffer");
    const std::string where = waitReport(comm);
    snprintf(buf, len,
             "rank %d/%d state %s ops issued %" PRIu64
             " running %d connections %zu shm owned %zu bytes "
             "(FIFOs) + %zu (rank block) + %zu (direct-access staging) async error %d last error \"%s\"; %s",
             comm->rank, comm->nranks, stateName(comm->getState()), comm->opCount.load(std::memory_order_relaxed),
             comm->activeOps.load(), comm->connections.size(), comm->connections.ownedBytes(),
             rankBlockBytes(comm->nranks), comm->direct.ownedBytes(), static_cast<int>(comm->errors.async()),
             comm->errors.message().c_str(), where.c_str());
    return ncclSuccess;
  });
}

// C++ linkage, as RCCL declares it (so no pncclCommDump twin). RCCL's own fills no entries; Weft
// fills the ones rccl.h lists.
__attribute__((visibility("default"))) ncclResult_t ncclCommDump(ncclComm_t comm,
                                                                 std::unordered_map<std::string, std::string>& map) {
  return apiGuard("ncclCommDump", [&] {
    WEFT_CHECK(checkCommHandle("ncclCommDump", comm));
    char hash[24];
    snprintf(hash, sizeof hash, "0x%016" PRIx64, comm->commHash);
    map["rank"] = std::to_string(comm->rank);
    map["nRanks"] = std::to_string(comm->nranks);
    map["commHash"] = hash;
    map["state"] = stateName(comm->getState());
    map["opCount"] = std::to_string(comm->opCount.load(std::memory_order_relaxed));
    map["activeOps"] = std::to_string(comm->activeOps.load());
    map["connections"] = std::to_string(comm->connections.size());
    map["connectionBytes"] = std::to_string(comm->connections.ownedBytes());
    map["lastError"] = comm->errors.message();
    map["waitingFor"] = waitReport(comm);
    return ncclSuccess;
  });
}
