// NCCL 2.30's one-sided operations on windows: ncclPutSignal, ncclSignal and ncclWaitSignal.
//
// Host mode (src/rma/one_sided.h): between the ranks of one host the origin writes the target's
// window itself and then bumps the target's signal counter; ranks reached over the network get
// puts through the proxies. The target takes no part until it waits. GPU communicators are
// refused with ncclInvalidUsage saying so. As in NCCL 2.30, the context and the signal index must
// be 0 and the flags 0.
//
// Outside a group each call completes before it returns. Inside one, the group's one-sided calls
// run at ncclGroupEnd after its other operations: first every put and signal in the order issued,
// then every wait, so that two ranks that each put and wait in one group cannot wait on each other.
#include <functional>
#include <map>
#include <memory>

#include "api/api_support.h"
#include "enqueue/group.h"
#include "rma/one_sided.h"

using namespace weft;

namespace {

ncclResult_t checkSignalTarget(const char* fn, ncclComm* comm, int peer, int sigIdx, int ctx, unsigned flags) {
  WEFT_CHECK(checkCommUsable(fn, comm));
  WEFT_CHECK(checkRank(fn, comm, peer, "peer"));
  if (sigIdx != 0 || ctx != 0)
    return setError(comm, ncclInvalidArgument, "%s: sigIdx %d and ctx %d must be 0 (the only ones NCCL 2.30 defines)",
                    fn, sigIdx, ctx);
  if (flags != 0) return setError(comm, ncclInvalidArgument, "%s: flags must be 0 (got 0x%x)", fn, flags);
  return ncclSuccess;
}

// What every one-sided call needs: host mode, and a window registered on the communicator (the
// first registration connects the links to peers reached over the network; requiring it for every
// peer keeps a program's behaviour the same whichever transport reaches a peer).
ncclResult_t checkReady(const char* fn, ncclComm* comm) {
  if (!comm->hostMode)
    return setError(comm, ncclInvalidUsage,
                    "%s: one-sided operations are not implemented on GPU communicators yet; host mode has them", fn);
  std::lock_guard<std::mutex> lock(comm->windows->mutex);
  if (comm->windows->registrations == 0)
    return setError(comm, ncclInvalidUsage,
                    "%s: no window is registered on this communicator yet; one-sided operations start with a "
                    "(collective) ncclCommWindowRegister",
                    fn);
  return ncclSuccess;
}

// The one-sided calls of the current group, collected until ncclGroupEnd runs them.
struct Batch {
  std::vector<std::function<ncclResult_t()>> moves;  // puts and signals
  std::vector<std::function<ncclResult_t()>> waits;
};
// Weak: the group holds the batch (in its ncclGroupEnd job), so a group that ends, or fails
// before its jobs run, drops it, and the next group starts a new one.
thread_local std::weak_ptr<Batch> tBatch;

ncclResult_t runOrDefer(bool isWait, std::function<ncclResult_t()> job) {
  if (!inGroup()) return job();
  std::shared_ptr<Batch> batch = tBatch.lock();
  if (batch == nullptr) {
    batch = std::make_shared<Batch>();
    tBatch = batch;
    groupAfter([batch] {
      for (auto& move : batch->moves) WEFT_CHECK(move());
      for (auto& wait : batch->waits) WEFT_CHECK(wait());
      return ncclSuccess;
    });
  }
  (isWait ? batch->waits : batch->moves).push_back(std::move(job));
  return ncclSuccess;
}

ncclResult_t putAndSignal(const char* fn, ncclComm* comm, int peer, const ncclWindow_vidmem* win, size_t offset,
                          const void* src, size_t bytes, bool signal) {
  std::string why;
  const ncclResult_t r = putToWindow(comm, peer, *win, offset, src, bytes, signal, &why);
  return r == ncclSuccess ? r : setError(comm, r, "%s: %s", fn, why.c_str());
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
    WEFT_CHECK(checkCount(fn, comm, count, datatype, 1));
    WEFT_CHECK(checkBuffer(fn, comm, localbuff, count, "localbuff"));
    WEFT_CHECK(checkWindow(fn, comm, peerWin, "peerWin"));
    WEFT_CHECK(checkReady(fn, comm));
    if (peerWin->spans.empty())
      return setError(comm, ncclInvalidUsage,
                      "%s: the window's registration has not completed (it was registered inside a group that has "
                      "not ended)",
                      fn);
    const WindowSpan target = peerWin->spans[peer];
    const size_t bytes = count * dataTypeSize(datatype);
    if (peerWinOffset > target.size || bytes > target.size - peerWinOffset)
      return setError(comm, ncclInvalidArgument,
                      "%s: %zu bytes at offset %zu do not fit rank %d's window of %llu bytes", fn, bytes, peerWinOffset,
                      peer, static_cast<unsigned long long>(target.size));
    return runOrDefer(false, [fn, comm, peer, peerWin, peerWinOffset, localbuff, bytes] {
      return putAndSignal(fn, comm, peer, peerWin, peerWinOffset, localbuff, bytes, true);
    });
  });
}

WEFT_ALIAS(ncclResult_t, ncclSignal, int, int, int, unsigned int, ncclComm_t, WEFT_STREAM_T)
WEFT_API ncclResult_t pncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                                  WEFT_STREAM_T stream) {
  return apiGuard("ncclSignal", [&] {
    const char* fn = "ncclSignal";
    WEFT_CHECK(checkSignalTarget(fn, comm, peer, sigIdx, ctx, flags));
    WEFT_CHECK(checkStream(fn, comm, stream));
    WEFT_CHECK(checkReady(fn, comm));
    return runOrDefer(false, [fn, comm, peer] {
      std::string why;
      const ncclResult_t r = signalPeer(comm, peer, &why);
      return r == ncclSuccess ? r : setError(comm, r, "%s: %s", fn, why.c_str());
    });
  });
}

WEFT_ALIAS(ncclResult_t, ncclWaitSignal, int, ncclWaitSignalDesc_t*, ncclComm_t, WEFT_STREAM_T)
WEFT_API ncclResult_t pncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
                                      WEFT_STREAM_T stream) {
  return apiGuard("ncclWaitSignal", [&] {
    const char* fn = "ncclWaitSignal";
    WEFT_CHECK(checkCommUsable(fn, comm));
    WEFT_CHECK(checkStream(fn, comm, stream));
    if (nDesc <= 0 || signalDescs == nullptr)
      return setError(comm, ncclInvalidArgument, "%s: %d descriptors at %p (at least one is needed)", fn, nDesc,
                      static_cast<void*>(signalDescs));
    std::map<int, uint64_t> perPeer;  // descriptors naming one peer add up
    for (int i = 0; i < nDesc; ++i) {
      const ncclWaitSignalDesc_t& d = signalDescs[i];
      WEFT_CHECK(checkRank(fn, comm, d.peer, "signalDescs[].peer"));
      if (d.opCnt <= 0 || d.sigIdx != 0 || d.ctx != 0)
        return setError(
            comm, ncclInvalidArgument,
            "%s: signalDescs[%d] has opCnt %d, sigIdx %d, ctx %d (opCnt must be positive, sigIdx and ctx 0)", fn, i,
            d.opCnt, d.sigIdx, d.ctx);
      perPeer[d.peer] += static_cast<uint64_t>(d.opCnt);
    }
    WEFT_CHECK(checkReady(fn, comm));
    return runOrDefer(true, [fn, comm, perPeer] {
      if (comm->signalsWaited.empty()) comm->signalsWaited.assign(comm->nranks, 0);
      std::vector<SignalWait> waits;
      for (const auto& [peer, n] : perPeer) waits.push_back(SignalWait{peer, comm->signalsWaited[peer] + n});
      std::string why;
      const ncclResult_t r = waitSignals(comm, waits, &why);
      if (r != ncclSuccess) return setError(comm, r, "%s: %s", fn, why.c_str());
      for (const SignalWait& w : waits) comm->signalsWaited[w.peer] = w.total;
      return ncclSuccess;
    });
  });
}
