// Communicator entry points: versions and errors, init in all its forms, split and shrink,
// finalize/destroy/abort/revoke, and queries.
#include <cstring>
#include <thread>
#include <vector>

#include "api/api_support.h"
#include "base/log.h"
#include "base/params.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/unique_id.h"
#include "enqueue/group.h"
#include "gpu_executor/device_state.h"
#include "gpu_executor/gpu_executor.h"
#include "lifecycle/comm_lifecycle.h"

using namespace weft;

namespace {

ncclResult_t checkInitArgs(const char* fn, ncclComm_t* out, int nranks, int rank) {
  if (out == nullptr) return setError(nullptr, ncclInvalidArgument, "%s: comm output pointer is NULL", fn);
  *out = nullptr;
  if (nranks < 1) return setError(nullptr, ncclInvalidArgument, "%s: nranks must be at least 1 (got %d)", fn, nranks);
  if (rank < 0 || rank >= nranks)
    return setError(nullptr, ncclInvalidArgument, "%s: rank %d is out of range for nranks %d", fn, rank, nranks);
  if (param::device() != "auto" && param::device() != "host")
    return setError(nullptr, ncclInvalidArgument, "%s: WEFT_DEVICE must be 'auto' or 'host' (got '%s')", fn,
                    param::device().c_str());
  return ncclSuccess;
}

ncclResult_t initRank(const char* fn, ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank,
                      const ncclConfig_t* config) {
  WEFT_CHECK(checkInitArgs(fn, out, nranks, rank));
  CommConfig cfg;
  std::string why;
  ncclResult_t r = parseConfig(config, &cfg, &why);
  if (r != ncclSuccess) return setError(nullptr, r, "%s: %s", fn, why.c_str());
  if (inGroup()) {
    // NCCL semantics: inside a group the init completes at ncclGroupEnd, so one thread may init
    // every rank of a communicator between ncclGroupStart and ncclGroupEnd.
    ncclComm* comm = commAllocate(nranks, rank, cfg);
    *out = comm;
    groupDefer([comm, id] { return commSetup(comm, id); });
    return ncclSuccess;
  }
  return commCreate(out, nranks, id, rank, cfg);
}

}  // namespace

WEFT_ALIAS(ncclResult_t, ncclGetVersion, int*)
WEFT_API ncclResult_t pncclGetVersion(int* version) {
  if (version == nullptr) return setError(nullptr, ncclInvalidArgument, "ncclGetVersion: version pointer is NULL");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

WEFT_ALIAS(const char*, ncclGetErrorString, ncclResult_t)
WEFT_API const char* pncclGetErrorString(ncclResult_t result) { return resultString(result); }

WEFT_ALIAS(const char*, ncclGetLastError, ncclComm_t)
WEFT_API const char* pncclGetLastError(ncclComm_t comm) {
  if (comm != nullptr && isLiveComm(comm)) return comm->errors.messageForCaller();
  return globalLastError();
}

WEFT_ALIAS(void, ncclResetDebugInit)
WEFT_API void pncclResetDebugInit() { logResetForTesting(); }

WEFT_ALIAS(ncclResult_t, ncclGetUniqueId, ncclUniqueId*)
WEFT_API ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId) {
  return apiGuard("ncclGetUniqueId", [&] {
    if (uniqueId == nullptr) return setError(nullptr, ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
    logVersionBanner();
    return bootstrapGetUniqueId(uniqueId);
  });
}

WEFT_ALIAS(ncclResult_t, ncclCommInitRank, ncclComm_t*, int, ncclUniqueId, int)
WEFT_API ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return apiGuard("ncclCommInitRank",
                  [&] { return initRank("ncclCommInitRank", comm, nranks, commId, rank, nullptr); });
}

WEFT_ALIAS(ncclResult_t, ncclCommInitRankConfig, ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*)
WEFT_API ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                              ncclConfig_t* config) {
  return apiGuard("ncclCommInitRankConfig",
                  [&] { return initRank("ncclCommInitRankConfig", comm, nranks, commId, rank, config); });
}

WEFT_ALIAS(ncclResult_t, ncclCommInitRankScalable, ncclComm_t*, int, int, int, ncclUniqueId*, ncclConfig_t*)
WEFT_API ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                                ncclUniqueId* commIds, ncclConfig_t* config) {
  return apiGuard("ncclCommInitRankScalable", [&] {
    const char* fn = "ncclCommInitRankScalable";
    if (nId < 1 || commIds == nullptr)
      return setError(nullptr, ncclInvalidArgument, "%s: needs at least one unique id (nId=%d, commIds=%p)", fn, nId,
                      static_cast<void*>(commIds));
    // Every rank passes the same ids; one root serves a host-mode rendezvous, so the first is used.
    return initRank(fn, newcomm, nranks, commIds[0], myrank, config);
  });
}

WEFT_ALIAS(ncclResult_t, ncclCommInitAll, ncclComm_t*, int, const int*)
WEFT_API ncclResult_t pncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  return apiGuard("ncclCommInitAll", [&] {
    const char* fn = "ncclCommInitAll";
    if (comms == nullptr) return setError(nullptr, ncclInvalidArgument, "%s: comms is NULL", fn);
    if (ndev < 1) return setError(nullptr, ncclInvalidArgument, "%s: ndev must be at least 1 (got %d)", fn, ndev);
    if (devlist != nullptr)
      for (int i = 0; i < ndev; ++i)
        if (devlist[i] < 0) return setError(nullptr, ncclInvalidArgument, "%s: devlist[%d] is %d", fn, i, devlist[i]);
    ncclUniqueId id;
    WEFT_CHECK(bootstrapGetLocalUniqueId(&id));
    // Each rank's init joins the rendezvous and waits for the others, so they run side by side.
    std::vector<ncclResult_t> results(ndev, ncclSuccess);
    std::vector<std::thread> threads;
    for (int i = 0; i < ndev; ++i)
      threads.emplace_back([&, i] { results[i] = initRank(fn, &comms[i], ndev, id, i, nullptr); });
    for (auto& t : threads) t.join();
    for (int i = 0; i < ndev; ++i)
      if (results[i] != ncclSuccess) {
        for (int j = 0; j < ndev; ++j)
          if (comms[j] != nullptr) {
            commFree(comms[j]);
            comms[j] = nullptr;
          }
        return results[i];
      }
    return ncclSuccess;
  });
}

WEFT_ALIAS(ncclResult_t, ncclCommFinalize, ncclComm_t)
WEFT_API ncclResult_t pncclCommFinalize(ncclComm_t comm) {
  return apiGuard("ncclCommFinalize", [&] {
    WEFT_CHECK(checkCommHandle("ncclCommFinalize", comm));
    commJoinInit(comm);
    CommState s = comm->getState();
    if (s == CommState::kRevoked)
      return setError(comm, ncclInvalidUsage, "ncclCommFinalize: a revoked communicator can only be destroyed");
    if (s == CommState::kReady) comm->setState(CommState::kFinalized);
    // Host-mode operations are complete when their call returns: there is nothing left to flush.
    return ncclSuccess;
  });
}

WEFT_ALIAS(ncclResult_t, ncclCommDestroy, ncclComm_t)
WEFT_API ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  return apiGuard("ncclCommDestroy", [&] {
    if (comm == nullptr) return ncclSuccess;  // NCCL accepts destroying a NULL communicator
    WEFT_CHECK(checkCommHandle("ncclCommDestroy", comm));
    commFree(comm);
    return ncclSuccess;
  });
}

WEFT_ALIAS(ncclResult_t, ncclCommAbort, ncclComm_t)
WEFT_API ncclResult_t pncclCommAbort(ncclComm_t comm) {
  return apiGuard("ncclCommAbort", [&] {
    if (comm == nullptr) return ncclSuccess;
    WEFT_CHECK(checkCommHandle("ncclCommAbort", comm));
    commAbort(comm);
    return ncclSuccess;
  });
}

WEFT_ALIAS(ncclResult_t, ncclCommRevoke, ncclComm_t, int)
WEFT_API ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  return apiGuard("ncclCommRevoke", [&] {
    WEFT_CHECK(checkCommHandle("ncclCommRevoke", comm));
    if (revokeFlags != NCCL_REVOKE_DEFAULT)
      return setError(comm, ncclInvalidArgument, "ncclCommRevoke: revokeFlags must be NCCL_REVOKE_DEFAULT (0), got %d",
                      revokeFlags);
    commJoinInit(comm);
    comm->setState(CommState::kRevoked);
    comm->abortFlag.store(true);  // an operation running on another thread stops
    return ncclSuccess;
  });
}

WEFT_ALIAS(ncclResult_t, ncclCommSplit, ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*)
WEFT_API ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  return apiGuard("ncclCommSplit", [&] {
    const char* fn = "ncclCommSplit";
    WEFT_CHECK(checkCommHandle(fn, comm));
    if (newcomm == nullptr) return setError(comm, ncclInvalidArgument, "%s: newcomm is NULL", fn);
    *newcomm = nullptr;
    CommState s = comm->getState();
    if (s != CommState::kReady && s != CommState::kRevoked) WEFT_CHECK(checkCommUsable(fn, comm));
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
      return setError(comm, ncclInvalidArgument, "%s: color must be >= 0 or NCCL_SPLIT_NOCOLOR (got %d)", fn, color);
    CommConfig cfg = comm->config;
    std::string why;
    if (config != nullptr && parseConfig(config, &cfg, &why) != ncclSuccess)
      return setError(comm, ncclInvalidArgument, "%s: %s", fn, why.c_str());
    if (inGroup()) {
      // Completes at ncclGroupEnd, side by side with the other ranks' splits issued in the group.
      groupDefer([comm, color, key, newcomm, cfg] { return commSplit(comm, color, key, newcomm, cfg); });
      return ncclSuccess;
    }
    return commSplit(comm, color, key, newcomm, cfg);
  });
}

WEFT_ALIAS(ncclResult_t, ncclCommShrink, ncclComm_t, int*, int, ncclComm_t*, ncclConfig_t*, int)
WEFT_API ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                      ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  return apiGuard("ncclCommShrink", [&] {
    const char* fn = "ncclCommShrink";
    WEFT_CHECK(checkCommHandle(fn, comm));
    if (newcomm == nullptr) return setError(comm, ncclInvalidArgument, "%s: newcomm is NULL", fn);
    *newcomm = nullptr;
    if (shrinkFlags != NCCL_SHRINK_DEFAULT && shrinkFlags != NCCL_SHRINK_ABORT)
      return setError(comm, ncclInvalidArgument, "%s: unknown shrinkFlags %d", fn, shrinkFlags);
    if (excludeRanksCount < 0 || (excludeRanksCount > 0 && excludeRanksList == nullptr))
      return setError(comm, ncclInvalidArgument, "%s: bad exclude list (count %d, list %p)", fn, excludeRanksCount,
                      static_cast<void*>(excludeRanksList));
    std::vector<bool> seen(comm->nranks, false);
    for (int i = 0; i < excludeRanksCount; ++i) {
      int r = excludeRanksList[i];
      if (r < 0 || r >= comm->nranks || seen[r])
        return setError(comm, ncclInvalidArgument, "%s: exclude list entry %d is invalid or repeated", fn, r);
      if (r == comm->rank)
        return setError(comm, ncclInvalidArgument, "%s: rank %d is in the exclude list and must not call it", fn, r);
      seen[r] = true;
    }
    CommConfig cfg = comm->config;
    std::string why;
    if (config != nullptr && parseConfig(config, &cfg, &why) != ncclSuccess)
      return setError(comm, ncclInvalidArgument, "%s: %s", fn, why.c_str());
    if (inGroup()) {
      std::vector<int> exclude(excludeRanksList, excludeRanksList + excludeRanksCount);
      groupDefer([comm, exclude, newcomm, cfg] {
        return commShrink(comm, exclude.data(), static_cast<int>(exclude.size()), newcomm, cfg);
      });
      return ncclSuccess;
    }
    return commShrink(comm, excludeRanksList, excludeRanksCount, newcomm, cfg);
  });
}

WEFT_ALIAS(ncclResult_t, ncclCommGetUniqueId, ncclComm_t, ncclUniqueId*)
WEFT_API ncclResult_t pncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId) {
  return apiGuard("ncclCommGetUniqueId", [&] {
    const char* fn = "ncclCommGetUniqueId";
    WEFT_CHECK(checkCommUsable(fn, comm));
    if (uniqueId == nullptr) return setError(comm, ncclInvalidArgument, "%s: uniqueId is NULL", fn);
    return commGrowId(comm, uniqueId);
  });
}

WEFT_ALIAS(ncclResult_t, ncclCommGrow, ncclComm_t, int, const ncclUniqueId*, int, ncclComm_t*, ncclConfig_t*)
WEFT_API ncclResult_t pncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
                                    ncclComm_t* newcomm, ncclConfig_t* config) {
  return apiGuard("ncclCommGrow", [&] {
    const char* fn = "ncclCommGrow";
    if (newcomm == nullptr) return setError(comm, ncclInvalidArgument, "%s: newcomm is NULL", fn);
    *newcomm = nullptr;
    CommConfig cfg;
    if (comm != nullptr) {
      WEFT_CHECK(checkCommUsable(fn, comm));
      cfg = comm->config;
      if (rank != -1)
        return setError(comm, ncclInvalidArgument,
                        "%s: a rank of the existing communicator passes rank -1 (it keeps rank %d), got %d", fn,
                        comm->rank, rank);
      if (nRanks < comm->nranks)
        return setError(comm, ncclInvalidArgument, "%s: nRanks %d is fewer than the communicator's %d ranks", fn,
                        nRanks, comm->nranks);
    } else {
      if (uniqueId == nullptr)
        return setError(nullptr, ncclInvalidArgument, "%s: a joining rank (comm NULL) must pass the id", fn);
      if (nRanks < 1 || rank < 0 || rank >= nRanks)
        return setError(nullptr, ncclInvalidArgument,
                        "%s: rank %d is not within the %d ranks of the grown communicator", fn, rank, nRanks);
    }
    // A joining rank without a config starts from the defaults and the environment, as an init does;
    // an existing rank from its communicator's settings, as a split does.
    std::string why;
    if ((config != nullptr || comm == nullptr) && parseConfig(config, &cfg, &why) != ncclSuccess)
      return setError(comm, ncclInvalidArgument, "%s: %s", fn, why.c_str());
    const bool hasId = uniqueId != nullptr;
    const ncclUniqueId id = hasId ? *uniqueId : ncclUniqueId{};
    if (inGroup()) {
      groupDefer([comm, nRanks, hasId, id, rank, newcomm, cfg] {
        return commGrow(comm, nRanks, hasId ? &id : nullptr, rank, newcomm, cfg);
      });
      return ncclSuccess;
    }
    return commGrow(comm, nRanks, hasId ? &id : nullptr, rank, newcomm, cfg);
  });
}

WEFT_ALIAS(ncclResult_t, ncclCommGetAsyncError, ncclComm_t, ncclResult_t*)
WEFT_API ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  return apiGuard("ncclCommGetAsyncError", [&] {
    WEFT_CHECK(checkCommHandle("ncclCommGetAsyncError", comm));
    if (asyncError == nullptr)
      return setError(comm, ncclInvalidArgument, "ncclCommGetAsyncError: asyncError pointer is NULL");
    gpu::pollDeviceError(comm);  // a kernel's failure surfaces here, as NCCL reports its async errors
    *asyncError = comm->errors.async();
    if (*asyncError != ncclInProgress) commJoinInit(comm);
    return ncclSuccess;
  });
}

WEFT_ALIAS(ncclResult_t, ncclCommCount, const ncclComm_t, int*)
WEFT_API ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) {
  return apiGuard("ncclCommCount", [&] {
    WEFT_CHECK(checkCommHandle("ncclCommCount", comm));
    if (count == nullptr) return setError(comm, ncclInvalidArgument, "ncclCommCount: count pointer is NULL");
    *count = comm->nranks;
    return ncclSuccess;
  });
}

WEFT_ALIAS(ncclResult_t, ncclCommCuDevice, const ncclComm_t, int*)
WEFT_API ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) {
  return apiGuard("ncclCommCuDevice", [&] {
    WEFT_CHECK(checkCommHandle("ncclCommCuDevice", comm));
    if (device == nullptr) return setError(comm, ncclInvalidArgument, "ncclCommCuDevice: device pointer is NULL");
    *device = comm->hostMode ? -1 : comm->gpu->device();  // host mode has no device; -1 says so without being an error
    return ncclSuccess;
  });
}

WEFT_ALIAS(ncclResult_t, ncclCommUserRank, const ncclComm_t, int*)
WEFT_API ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  return apiGuard("ncclCommUserRank", [&] {
    WEFT_CHECK(checkCommHandle("ncclCommUserRank", comm));
    if (rank == nullptr) return setError(comm, ncclInvalidArgument, "ncclCommUserRank: rank pointer is NULL");
    *rank = comm->rank;
    return ncclSuccess;
  });
}
