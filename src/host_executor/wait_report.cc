#include "host_executor/wait_report.h"

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/params.h"
#include "comm/op_stamp.h"
#include "transports/shm/fd_passing.h"

namespace weft {
namespace {

// How long a rank whose link or peer failed looks for a mismatch report before it blames the link.
// The peer sent its report before it closed its links, so the report is already on the way: this
// only covers reading it in (it may arrive in pieces), and a real failure is reported this much later.
constexpr int64_t kReportGraceNs = 300 * 1000000LL;

bool awaitReport(ncclComm* comm, StampExchange& exchange, std::string* why, bool* reported) {
  if (!comm->agreed.mismatchCheck) return false;
  const int64_t until = nowNs() + kReportGraceNs;
  for (;;) {
    if (exchange.poll(comm, {}, why, reported)) return true;
    if (nowNs() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// A peer or link failed. If the peer failed because it found a mismatch, its report (sent before
// it closed its links) names both calls: that is the error to return, not the closed link.
ncclResult_t failRemote(HostRunner& run, StampExchange& exchange, ncclComm* comm, const std::string& what) {
  // (A report still on its way is waited for once the run has ended: preferReportedMismatch.)
  std::string why;
  bool reported = false;
  if (comm->agreed.mismatchCheck && exchange.poll(comm, {}, &why, &reported))
    return reported ? run.fail(comm, ncclInvalidUsage, why) : run.failMismatch(comm, why);
  return run.fail(comm, ncclRemoteError, what);
}

// A wait that times out before its shared memory was ever reached may be one that never can be:
// the segments' names exist only in their creator's network namespace.
std::string reachHint(const HostRunner::Cur& c, const WaitPoint& w, const ncclComm* comm) {
  bool unreached = w.lane == Lane::kDirect && !comm->direct.connected();
  for (int i = 0; i < kMaxSeqPeers; ++i)
    for (const Connection* conn : {c.recvs[i], c.sends[i]})
      unreached |= conn != nullptr && !conn->connected() && strcmp(conn->backend().transportName(), "shm") == 0;
  return unreached ? std::string("; ") + kShmReachHint : std::string();
}

}  // namespace

void publishWaits(const HostRunner& run, int64_t sinceNs) {
  for (ncclComm* comm : run.comms()) {
    bool found = false;
    for (const HostRunner::Cur& c : run.cursors()) {
      if (c.finished || run.taskOf(c).comm != comm) continue;
      std::vector<int> peers;
      std::string what;
      WaitPoint w = run.waitOf(c, &peers, &what);
      w.sinceNs = sinceNs;
      comm->waits.publish(w);
      found = true;
      break;
    }
    if (!found) comm->waits.clear();  // its part of the group is done; others still wait
  }
}

void clearWaits(const HostRunner& run) {
  for (ncclComm* comm : run.comms()) comm->waits.clear();
}

ncclResult_t checkHealth(HostRunner& run, StampExchange& exchange, bool deadlinePassed, int64_t idleNs) {
  for (ncclComm* comm : run.comms())
    if (comm->abortFlag.load(std::memory_order_acquire))
      return run.fail(comm, ncclInvalidUsage,
                      "rank " + std::to_string(comm->rank) +
                          ": communicator aborted (ncclCommAbort) during an operation");
  for (const HostRunner::Cur& c : run.cursors()) {
    if (c.finished) continue;
    std::vector<int> peers;
    std::string what;
    const WaitPoint w = run.waitOf(c, &peers, &what);
    const std::string where = describeWait(w, what);
    ncclComm* comm = run.taskOf(c).comm;
    for (int p : peers) {
      if (p < 0) continue;
      std::string failure = comm->peers.peerFailure(p);
      // A peer that found a mismatch published both calls: pass them on as the same usage error.
      if (!failure.empty() && isMismatchText(failure)) return run.fail(comm, ncclInvalidUsage, failure);
      if (!failure.empty()) return failRemote(run, exchange, comm, failure + " while " + where);
    }
    // A network link reports its own failure (the peer's process or host is gone, a link is down).
    for (int i = 0; i < kMaxSeqPeers; ++i)
      for (const Connection* conn : {c.recvs[i], c.sends[i]}) {
        std::string failure = conn != nullptr ? conn->backend().failure() : std::string();
        if (!failure.empty()) return failRemote(run, exchange, comm, failure + " while " + where);
      }
    if (deadlinePassed)
      return run.fail(comm, ncclRemoteError,
                      where + "; no progress for " + std::to_string(idleNs / 1000000) +
                          " ms (WEFT_TIMEOUT_MS=" + std::to_string(param::timeoutMs()) + ")" + reachHint(c, w, comm));
  }
  return ncclSuccess;
}

ncclResult_t exchangeStamps(HostRunner& run, StampExchange& exchange) {
  std::vector<StampWait> current;
  for (const HostRunner::Cur& c : run.cursors()) {
    if (c.finished) continue;
    StampWait w{&run.taskOf(c), {}};
    if (!w.task->comm->agreed.mismatchCheck) continue;
    std::string what;
    (void)run.waitOf(c, &w.peers, &what);
    exchange.offer(w);
    current.push_back(std::move(w));
  }
  std::string why;
  bool reported = false;
  for (ncclComm* comm : run.comms()) {
    if (!comm->agreed.mismatchCheck || !exchange.poll(comm, current, &why, &reported)) continue;
    // Another rank's report is passed on as it is; a mismatch found here is told to every rank.
    return reported ? run.fail(comm, ncclInvalidUsage, why) : run.failMismatch(comm, why);
  }
  return ncclSuccess;
}

void preferReportedMismatch(HostRunner& run, StampExchange& exchange) {
  if (run.error() != ncclRemoteError && run.error() != ncclSystemError) return;
  for (ncclComm* comm : run.comms()) {
    std::string why;
    bool reported = false;
    if (awaitReport(comm, exchange, &why, &reported) && reported) {
      run.replaceWithReportedMismatch(comm, why);
      return;
    }
  }
}

void finishFailedRun(const HostRunner& run) {
  for (ncclComm* comm : run.comms()) {
    comm->errors.setAsync(run.error());
    comm->setState(CommState::kFailed);
    comm->peers.announceFailure(comm->errors.message().c_str());
    // The report goes out before the links close, so a network peer that sees them close
    // finds the report too (failRemote) and names both calls rather than a lost link.
    if (comm == run.mismatchComm()) reportMismatch(comm, comm->errors.message());
    comm->connections.shutdownAll();
  }
}

}  // namespace weft
