#include "host_executor/direct_exec.h"

#include <mutex>
#include <string>

#include "base/log.h"
#include "base/tsan.h"
#include "comm/comm.h"
#include "comm/op_stamp.h"
#include "host_executor/direct_step.h"

namespace weft {

namespace {
// Everyone is at the barrier: did they all come from this rank's call? (The barrier is where the
// direct lane's ranks meet, so it is where their stamps meet too; no data is read before it.)
bool barrierStampsAgree(const Task& t, const DirectView& v, std::string* why) {
  ncclComm* comm = t.comm;
  if (!comm->agreed.mismatchCheck) return true;
  OpStamp theirs{};
  const int peer = directStampMismatch(v, t.stamp, &theirs);
  if (peer < 0) return true;
  *why = mismatchText(comm->commHash, comm->rank, t.stamp, peer, theirs);
  return false;
}

// A window reference a peer published (program/step.h kPublishedWindow): where this process mapped
// that peer's buffer of the window, plus the offset.
const unsigned char* resolveWindowRef(void* ctx, int rank, uint64_t word) {
  ncclComm* comm = static_cast<ncclComm*>(ctx);
  std::lock_guard<std::mutex> lock(comm->regMutex);
  for (const auto& w : comm->windowHandles)
    if (w->id == publishedWindowId(word) && size_t(rank) < w->mapped.size() && w->mapped[rank] != nullptr)
      return w->mapped[rank] + publishedWindowOffset(word);
  return nullptr;
}

// A peer asleep in its own barrier wait must see this rank's arrival.
void ringLocalPeers(ncclComm* comm) {
  for (int p = 0; p < comm->nranks; ++p)
    if (p != comm->rank) ringIfSleeping(comm->peers.block(p));
}
}  // namespace

DirectProgress advanceDirectStep(const Task& t, const Step& st, size_t* phase, std::string* why) {
  ncclComm* comm = t.comm;
  if (!comm->direct.connected()) {
    bool ready = false;
    const bool created = comm->direct.ownedBytes() != 0;
    ncclResult_t r = comm->direct.tryConnect(comm->commHash, comm->rank, comm->nranks, &ready, why);
    if (r != ncclSuccess) return DirectProgress::kFailed;
    // Peers asleep waiting for this rank's area learn at once that it exists.
    if (!created && comm->direct.ownedBytes() != 0) {
      comm->peers.ringAll();
      WEFT_INFO(kLogShm, "comm %p rank %d: direct-access staging area of %zu bytes for %s #%llu",
                static_cast<void*>(comm), comm->rank, comm->direct.dataBytes(), collName(t.kind),
                static_cast<unsigned long long>(t.seq));
    }
    if (!ready) return DirectProgress::kWaiting;
  }
  DirectView v = comm->direct.view();
  v.resolveWindowRef = resolveWindowRef;
  v.resolveCtx = comm;
  return stepDirect(t, st, v, phase, why, ringLocalPeers);
}

DirectProgress stepDirect(const Task& t, const Step& st, const DirectView& v, size_t* phase, std::string* why,
                          void (*wakePeers)(ncclComm*)) {
  if (st.op != StepOp::kDirectBarrier) {
    // A peer published its input in a window this rank cannot read (it deregistered the window
    // here, which it must do on every rank alike): the peer staged nothing, so fail, never fold
    // stale staging data. The ranks disagree about the window, as in a mismatch, which every rank
    // then reports.
    const int lost = (st.flags & kStepInput) ? directUnresolved(v) : -1;
    if (lost >= 0) {
      *why = "rank " + std::to_string(t.comm->rank) + " cannot read the input rank " + std::to_string(lost) +
             " published in a window for " + collName(t.kind) + " #" + std::to_string(t.seq) +
             ": the window is not registered here (deregister windows on every rank alike)";
      return DirectProgress::kMismatch;
    }
    runDirectData(t, st, v);
    return DirectProgress::kDone;
  }
  if (*phase == 0) {
    // The barrier that ends a fold of published inputs is needed only if a rank published; all
    // ranks read the same slots, so they all skip it or all meet at it.
    if ((st.flags & kStepIfShared) && !directAnyPublished(v)) return DirectProgress::kDone;
    // What this rank wrote into its input comes before its peers' reads (base/tsan.h).
    if (st.flags & kStepPublish) tsanRelease(reinterpret_cast<const void*>(t.directInput));
    directArrive(v, &t.stamp, (st.flags & kStepPublish) ? t.directInput : 0);
    *phase = 1;
    wakePeers(t.comm);
    if (!directAllArrived(v)) return DirectProgress::kArrived;
  } else if (!directAllArrived(v)) {
    return DirectProgress::kWaiting;
  }
  // Every peer's reads of this rank's input before this barrier come before what this rank writes
  // there next (base/tsan.h).
  if (t.directInput != 0 && !isPublishedWindowRef(t.directInput))
    tsanAcquire(reinterpret_cast<const void*>(t.directInput));
  return barrierStampsAgree(t, v, why) ? DirectProgress::kDone : DirectProgress::kMismatch;
}

std::string describeDirectWait(const Task& t, const Step& st, size_t phase, std::vector<int>* waitingOn) {
  ncclComm* comm = t.comm;
  if (comm->direct.connected()) return describeDirectBarrier(comm->direct.view(), waitingOn);
  *waitingOn = comm->direct.unmapped();
  std::string what = "for the direct-access staging areas of ranks ";
  for (size_t i = 0; i < waitingOn->size(); ++i) what += (i ? ", " : "") + std::to_string((*waitingOn)[i]);
  return what + " (not created yet)";
}

std::string describeDirectBarrier(const DirectView& v, std::vector<int>* waitingOn) {
  directAllArrived(v, waitingOn);
  std::string what = "at a direct-access barrier for ranks ";
  for (size_t i = 0; i < waitingOn->size(); ++i) what += (i ? ", " : "") + std::to_string((*waitingOn)[i]);
  return what + " (not arrived yet)";
}

}  // namespace weft
