#include "host_executor/host_executor.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "comm/comm.h"
#include "comm/comm_error.h"
#include "base/params.h"
#include "host_executor/direct_exec.h"
#include "math/reduce_host.h"
#include "host_executor/stamp_exchange.h"
#include "host_executor/step_piece.h"
#include "comm/op_stamp.h"
#include "task/task.h"
#include "transports/net/proxy.h"
#include "transports/shm/futex.h"
#include "comm/connect.h"

namespace weft {
namespace {

constexpr int64_t kPureSpinNs = 5000;
// How long a cursor waits idle before the slow-path stamp exchange starts (and its pace): long
// enough that a matched but slow peer costs nothing, short enough to fail well within a second.
constexpr int64_t kStampExchangeNs = 50 * 1000000;
// How often (in executor runs of one thread) a rank looks whether its stamp notes are due to be
// drained: often enough that a busy rank's backlog stays small (at most this many notes per peer).
constexpr uint32_t kDrainCheckRuns = 16;

// A chain of sequences that share connections: they run one after another, in the order the
// application issued their operations (the same order on every rank).
struct Cursor {
  uint32_t pos, end;  // into Executor::order_
  uint32_t step = 0;
  size_t done = 0;    // elements of the current step already moved
  Connection* send = nullptr;
  Connection* recv = nullptr;
  bool finished = false;
  bool multiPeer = false;  // the chain has multi-peer sequences: advanceMulti runs it
  Connection* sends[kMaxSeqPeers] = {};  // multi-peer sequences: by peer index
  Connection* recvs[kMaxSeqPeers] = {};
};

class Executor {
 public:
  ncclResult_t run(const Program& prog);

 private:
  bool advance(Cursor& c);
  bool advanceMulti(Cursor& c);
  bool connectLinks(const Cursor& c, ncclComm* comm, Connection* const* links, int n, bool* moved);
  bool advanceDirect(Cursor& c, const Task& t, const Step& st);
  bool stampMatches(const Task& t, const Connection& from);
  bool pass();
  ncclResult_t fail(ncclComm* comm, ncclResult_t code, const std::string& what);
  // What cursor c waits for; *peer is the first rank it waits on, *peers all of them.
  std::string describe(const Cursor& c, int* peer, std::vector<int>* peers) const;
  ncclResult_t checkHealth(bool deadlinePassed, int64_t idleNs);
  ncclResult_t exchangeStamps();
  ncclResult_t failRemote(ncclComm* comm, const std::string& what);
  ncclResult_t failMismatch(ncclComm* comm, const std::string& text);
  Connection* connectionFor(const Sequence& s, bool sender);
  Connection* connectionTo(const Sequence& s, int peer, bool sender);
  int waitingPeer(const Cursor& c, const Sequence& s, const Step& st, bool* rx) const;

  const Program* progp_ = nullptr;
  std::vector<uint32_t> order_;
  std::vector<Cursor> cursors_;
  std::vector<ncclComm*> comms_;
  ncclResult_t error_ = ncclSuccess;
  // A connection is still being set up over the network: nobody rings our doorbell when its
  // handshake moves on, so the executor naps briefly instead of sleeping long.
  bool setupPending_ = false;
  bool progressed_ = false;  // a pass made progress that moved no cursor (a barrier arrival)
  StampExchange exchange_;   // the slow path of mismatch detection (stamp_exchange.h)
  ncclComm* mismatchComm_ = nullptr;  // this rank found a mismatch there: tell the other ranks
  uint32_t runsSinceDrainCheck_ = 0;  // this thread's runs since it last looked at the clock for it
};

Connection* Executor::connectionFor(const Sequence& s, bool sender) {
  ncclComm* comm = s.task->comm;
  return getConnection(comm, s.lane, s.channel, sender ? s.sendPeer : s.recvPeer, sender, comm->laneSlots(s.lane));
}

// Every link a step uses progresses its setup in the same pass: over the network, the peer's side
// of our receive link may be waiting for our send link's handshake. True once all are connected
// (null entries are skipped); false while one is pending (the executor then naps briefly) or
// after a failure (recorded).
bool Executor::connectLinks(const Cursor& c, ncclComm* comm, Connection* const* links, int n, bool* moved) {
  bool pending = false;
  std::string why;
  for (int k = 0; k < n; ++k) {
    Connection* conn = links[k];
    if (conn == nullptr || conn->connected()) continue;
    bool ready = false;
    ncclResult_t r = conn->tryConnect(&ready, &why);
    if (r != ncclSuccess) {
      // The link's own text names the ranks and the link; add the operation that needed it.
      int peer = -1;
      std::vector<int> peers;
      fail(comm, r, why + " while " + describe(c, &peer, &peers));
      return false;
    }
    pending |= !ready;
    *moved |= ready;
  }
  if (pending) setupPending_ = true;
  return !pending;
}

// Moves as many pieces of cursor c as the FIFOs allow. Returns true if anything moved.
bool Executor::advance(Cursor& c) {
  bool moved = false;
  while (!c.finished && error_ == ncclSuccess) {
    const Sequence& s = progp_->sequences[order_[c.pos]];
    if (c.step >= s.nSteps) {
      c.step = 0;
      c.done = 0;
      c.send = c.recv = nullptr;
      if (++c.pos == c.end) c.finished = true;
      moved = true;
      continue;
    }
    const Step& st = progp_->steps[s.firstStep + c.step];
    const Task& t = *s.task;
    ncclComm* comm = t.comm;
    if (s.lane == Lane::kDirect) {
      if (!advanceDirect(c, t, st)) return moved;
      moved = true;
      continue;
    }
    if (c.recv == nullptr && s.recvPeer >= 0) {
      // The receiving side creates its FIFO as soon as the sequence starts, whatever the first
      // step is: its sender may be blocked on exactly this FIFO before it can receive anything.
      c.recv = connectionFor(s, false);
      bool created = false;
      std::string err;
      ncclResult_t r = c.recv->tryConnect(&created, &err);
      if (r != ncclSuccess) {
        fail(comm, r, err);
        return moved;
      }
    }
    const size_t es = dataTypeSize(t.dtype);
    const bool rx = stepReceives(st.op), tx = stepSends(st.op);
    if (st.count == 0) {
      ++c.step;
      continue;
    }
    std::string why;
    if (rx && c.recv == nullptr) c.recv = connectionFor(s, false);
    if (tx && c.send == nullptr) c.send = connectionFor(s, true);
    Connection* links[2] = {rx ? c.recv : nullptr, tx ? c.send : nullptr};
    if (!connectLinks(c, comm, links, 2, &moved)) return moved;
    if (rx && !c.recv->canRecv()) return moved;
    if (tx && !c.send->canSend()) return moved;

    const size_t pieceElems = comm->slotBytes / es;
    const size_t n = std::min(st.count - c.done, pieceElems);
    const size_t bytes = n * es;
    const void* in = nullptr;
    if (rx) {
      size_t got = 0;
      in = c.recv->recvBuffer(&got);
      if (!stampMatches(t, *c.recv)) return moved;
      if (got != bytes) {
        fail(comm, ncclInvalidUsage,
             "rank " + std::to_string(comm->rank) + " expected a message of " + std::to_string(bytes) +
                 " bytes from rank " + std::to_string(c.recv->peer()) + " in " + collName(t.kind) + " #" +
                 std::to_string(t.seq) + " but got " + std::to_string(got) +
                 " (do the counts and datatypes of matching calls agree?)");
        return moved;
      }
    }
    runStepPiece(t, st, comm->nranks, c.done, n, in, tx ? c.send->sendBuffer(bytes) : nullptr);
    if (tx) c.send->publish(bytes, t.stamp);
    if (rx) c.recv->release();
    moved = true;
    c.done += n;
    if (c.done == st.count) {
      ++c.step;
      c.done = 0;
    }
  }
  return moved;
}

// The message at the head of `from` must belong to the call this rank is making (op_stamp.h); the
// stamp is checked before the byte count, since a size difference is only a symptom of it.
bool Executor::stampMatches(const Task& t, const Connection& from) {
  ncclComm* comm = t.comm;
  const OpStamp& theirs = from.recvStamp();
  if (!comm->agreed.mismatchCheck || stampsAgree(t.stamp, theirs, comm->rank, from.peer())) return true;
  failMismatch(comm, mismatchText(comm->commHash, comm->rank, t.stamp, from.peer(), theirs));
  return false;
}

ncclResult_t Executor::failMismatch(ncclComm* comm, const std::string& text) {
  if (error_ == ncclSuccess) mismatchComm_ = comm;
  return fail(comm, ncclInvalidUsage, text);
}

// ---- Multi-peer sequences (the tree lane) ----
// The connection to one given peer of a multi-peer sequence: the single-peer lookup with that peer.
Connection* Executor::connectionTo(const Sequence& s, int peer, bool sender) {
  Sequence one = s;
  (sender ? one.sendPeer : one.recvPeer) = peer;
  return connectionFor(one, sender);
}

// The same protocol as advance, over every peer a step names: a piece moves only when each of its
// receive peers has a message and each of its send peers has room, so a piece is never half done.
// Kept apart from advance so that the single-peer path (ring, p2p) pays nothing for it.
bool Executor::advanceMulti(Cursor& c) {
  bool moved = false;
  while (!c.finished && error_ == ncclSuccess) {
    const Sequence& s = progp_->sequences[order_[c.pos]];
    if (c.step >= s.nSteps) {
      c.step = 0;
      c.done = 0;
      for (int i = 0; i < kMaxSeqPeers; ++i) c.sends[i] = c.recvs[i] = nullptr;
      if (++c.pos == c.end) c.finished = true;
      moved = true;
      continue;
    }
    const Step& st = progp_->steps[s.firstStep + c.step];
    const Task& t = *s.task;
    ncclComm* comm = t.comm;
    std::string why;
    if (s.nRecvPeers > 0 && c.recvs[0] == nullptr) {
      // As in advance: every receive FIFO exists from the start of the sequence, since a sender
      // may be blocked on it before this rank receives anything.
      for (int i = 0; i < s.nRecvPeers; ++i) {
        c.recvs[i] = connectionTo(s, s.recvPeers[i], false);
        bool created = false;
        ncclResult_t r = c.recvs[i]->tryConnect(&created, &why);
        if (r != ncclSuccess) {
          fail(comm, r, why);
          return moved;
        }
      }
    }
    if (st.count == 0) {
      ++c.step;
      continue;
    }
    const unsigned rmask = stepReceives(st.op) ? st.recvMask : 0u, smask = stepSends(st.op) ? st.sendMask : 0u;
    Connection* rx[kMaxSeqPeers];
    Connection* tx[kMaxSeqPeers];
    int nIn = 0, nOut = 0;
    for (int i = 0; i < s.nRecvPeers; ++i)
      if (rmask & (1u << i)) rx[nIn++] = c.recvs[i];
    for (int i = 0; i < s.nSendPeers; ++i)
      if (smask & (1u << i)) {
        if (c.sends[i] == nullptr) c.sends[i] = connectionTo(s, s.sendPeers[i], true);
        tx[nOut++] = c.sends[i];
      }
    Connection* links[2 * kMaxSeqPeers];
    for (int k = 0; k < nIn + nOut; ++k) links[k] = k < nIn ? rx[k] : tx[k - nIn];
    if (!connectLinks(c, comm, links, nIn + nOut, &moved)) return moved;
    for (int k = 0; k < nIn; ++k)
      if (!rx[k]->canRecv()) return moved;
    for (int k = 0; k < nOut; ++k)
      if (!tx[k]->canSend()) return moved;

    const size_t es = dataTypeSize(t.dtype);
    const size_t n = std::min(st.count - c.done, size_t(comm->slotBytes / es));
    const size_t bytes = n * es;
    const void* in[kMaxSeqPeers];
    void* out[kMaxSeqPeers];
    for (int k = 0; k < nIn; ++k) {
      size_t got = 0;
      in[k] = rx[k]->recvBuffer(&got);
      if (!stampMatches(t, *rx[k])) return moved;
      if (got != bytes) {
        fail(comm, ncclInvalidUsage,
             "rank " + std::to_string(comm->rank) + " expected a message of " + std::to_string(bytes) +
                 " bytes from rank " + std::to_string(rx[k]->peer()) + " in " + collName(t.kind) + " #" +
                 std::to_string(t.seq) + " (" + laneName(s.lane) + " lane) but got " + std::to_string(got) +
                 " (do the counts and datatypes of matching calls agree?)");
        return moved;
      }
    }
    for (int k = 0; k < nOut; ++k) out[k] = tx[k]->sendBuffer(bytes);
    runMultiPeerPiece(t, st, c.done, n, in, nIn, out, nOut);
    for (int k = 0; k < nOut; ++k) tx[k]->publish(bytes, t.stamp);
    for (int k = 0; k < nIn; ++k) rx[k]->release();
    moved = true;
    c.done += n;
    if (c.done == st.count) {
      ++c.step;
      c.done = 0;
    }
  }
  return moved;
}

// The peer a stuck cursor waits for: the first receive peer without a message, else the first
// send peer without room (for single-peer sequences, the receive peer if the step receives and
// has nothing yet, else the send peer).
int Executor::waitingPeer(const Cursor& c, const Sequence& s, const Step& st, bool* rx) const {
  if (!c.multiPeer) {
    *rx = stepReceives(st.op) && (c.recv == nullptr || !c.recv->connected() || !c.recv->canRecv());
    return *rx ? s.recvPeer : s.sendPeer;
  }
  for (int i = 0; i < s.nRecvPeers; ++i)
    if (stepReceives(st.op) && (st.recvMask & (1u << i)) &&
        (c.recvs[i] == nullptr || !c.recvs[i]->connected() || !c.recvs[i]->canRecv())) {
      *rx = true;
      return s.recvPeers[i];
    }
  *rx = false;
  for (int i = 0; i < s.nSendPeers; ++i)
    if (stepSends(st.op) && (st.sendMask & (1u << i)) &&
        (c.sends[i] == nullptr || !c.sends[i]->connected() || !c.sends[i]->canSend()))
      return s.sendPeers[i];
  return s.sendPeer;
}

// A direct-lane step (no connection): true when it completed, so the cursor moves on. A barrier
// arrival counts as progress too (the idle clock restarts), but the cursor stays on the step.
bool Executor::advanceDirect(Cursor& c, const Task& t, const Step& st) {
  std::string why;
  switch (advanceDirectStep(t, st, &c.done, &why)) {
    case DirectProgress::kDone:
      ++c.step;
      c.done = 0;
      return true;
    case DirectProgress::kArrived: progressed_ = true; return false;
    case DirectProgress::kWaiting: return false;
    case DirectProgress::kFailed: fail(t.comm, ncclSystemError, why); return false;
    case DirectProgress::kMismatch: failMismatch(t.comm, why); return false;
  }
  return false;
}

bool Executor::pass() {
  bool moved = false;
  progressed_ = false;
  for (Cursor& c : cursors_)
    if (!c.finished) moved |= c.multiPeer ? advanceMulti(c) : advance(c);
  return moved || progressed_;
}

ncclResult_t Executor::fail(ncclComm* comm, ncclResult_t code, const std::string& what) {
  if (error_ != ncclSuccess) return error_;
  error_ = code;
  setError(comm, code, "%s", what.c_str());
  return code;
}

std::string Executor::describe(const Cursor& c, int* peer, std::vector<int>* peers) const {
  const Sequence& s = progp_->sequences[order_[c.pos]];
  const Task& t = *s.task;
  const Step& st = progp_->steps[s.firstStep + std::min(c.step, s.nSteps - 1)];
  char buf[512];
  if (s.lane == Lane::kDirect) {
    std::string what = describeDirectWait(t, st, c.done, peers);
    *peer = peers->empty() ? -1 : peers->front();
    snprintf(buf, sizeof buf, "rank %d is waiting %s in %s #%" PRIu64 " (%zu x %s, direct lane, step %u of %u: %s)",
             t.comm->rank, what.c_str(), collName(t.kind), t.seq, t.count, dataTypeName(t.dtype), c.step + 1,
             s.nSteps, stepName(st.op));
    return buf;
  }
  bool rx = false;
  *peer = waitingPeer(c, s, st, &rx);
  peers->push_back(*peer);
  snprintf(buf, sizeof buf,
           "rank %d is waiting %s rank %d in %s #%" PRIu64 " (%zu x %s, %s lane, channel %d, step %u of %u: %s, %zu of %zu elements done)",
           t.comm->rank, rx ? "to receive from" : "for room to send to", *peer, collName(t.kind), t.seq, t.count,
           dataTypeName(t.dtype), laneName(s.lane), s.channel, c.step + 1, s.nSteps,
           stepName(st.op), c.done, st.count);
  return buf;
}

// Called while idle: turns an abort, a dead or failed peer, or a passed deadline into an error.
ncclResult_t Executor::checkHealth(bool deadlinePassed, int64_t idleNs) {
  for (ncclComm* comm : comms_)
    if (comm->abortFlag.load(std::memory_order_acquire))
      return fail(comm, ncclInvalidUsage,
                  "rank " + std::to_string(comm->rank) + ": communicator aborted (ncclCommAbort) during an operation");
  for (const Cursor& c : cursors_) {
    if (c.finished) continue;
    int peer = -1;
    std::vector<int> peers;
    std::string where = describe(c, &peer, &peers);
    ncclComm* comm = progp_->sequences[order_[c.pos]].task->comm;
    for (int p : peers) {
      if (p < 0) continue;
      std::string failure = comm->peers.peerFailure(p);
      // A peer that found a mismatch published both calls: pass them on as the same usage error.
      if (!failure.empty() && isMismatchText(failure)) return fail(comm, ncclInvalidUsage, failure);
      if (!failure.empty()) return failRemote(comm, failure + " while " + where);
    }
    // A network link reports its own failure (the peer's process or host is gone, a link is down).
    const Connection* links[2 + 2 * kMaxSeqPeers] = {c.recv, c.send};
    for (int i = 0; i < kMaxSeqPeers; ++i) {
      links[2 + i] = c.recvs[i];
      links[2 + kMaxSeqPeers + i] = c.sends[i];
    }
    for (const Connection* conn : links) {
      std::string failure = conn != nullptr ? conn->backend().failure() : std::string();
      if (!failure.empty()) return failRemote(comm, failure + " while " + where);
    }
    if (deadlinePassed)
      return fail(comm, ncclRemoteError,
                  where + "; no progress for " + std::to_string(idleNs / 1000000) + " ms (WEFT_TIMEOUT_MS=" +
                      std::to_string(param::timeoutMs()) + ")");
  }
  return ncclSuccess;
}

// A peer or link failed. If the peer failed because it found a mismatch, its report (sent before
// it closed its links) names both calls: that is the error to return, not the closed link.
ncclResult_t Executor::failRemote(ncclComm* comm, const std::string& what) {
  std::string why;
  bool reported = false;
  if (comm->agreed.mismatchCheck && exchange_.poll(comm, {}, &why, &reported))
    return reported ? fail(comm, ncclInvalidUsage, why) : failMismatch(comm, why);
  return fail(comm, ncclRemoteError, what);
}

// Idle for a while: tell the peers each stuck cursor waits on what this rank called, and compare
// what they told us (stamp_exchange.h). Slow path only; bounded by the bootstrap's own timeouts.
ncclResult_t Executor::exchangeStamps() {
  std::vector<StampWait> current;
  for (const Cursor& c : cursors_) {
    if (c.finished) continue;
    StampWait w{progp_->sequences[order_[c.pos]].task, {}};
    if (!w.task->comm->agreed.mismatchCheck) continue;
    int peer = -1;
    (void)describe(c, &peer, &w.peers);
    exchange_.offer(w);
    current.push_back(std::move(w));
  }
  std::string why;
  bool reported = false;
  for (ncclComm* comm : comms_) {
    if (!comm->agreed.mismatchCheck || !exchange_.poll(comm, current, &why, &reported)) continue;
    // Another rank's report is passed on as it is; a mismatch found here is told to every rank.
    return reported ? fail(comm, ncclInvalidUsage, why) : failMismatch(comm, why);
  }
  return ncclSuccess;
}

ncclResult_t Executor::run(const Program& prog) {
  progp_ = &prog;
  cursors_.clear();
  comms_.clear();
  error_ = ncclSuccess;
  const size_t nseq = progp_->sequences.size();
  order_.resize(nseq);
  for (uint32_t i = 0; i < nseq; ++i) order_[i] = i;
  sortIntoChains(*progp_, &order_);
  for (uint32_t i = 0; i < nseq;) {
    uint32_t j = i + 1;
    while (j < nseq && chainOf(progp_->sequences[order_[j]]) == chainOf(progp_->sequences[order_[i]])) ++j;
    cursors_.push_back(Cursor{i, j});
    for (uint32_t k = i; k < j; ++k) cursors_.back().multiPeer |= progp_->sequences[order_[k]].multiPeer();
    ncclComm* comm = progp_->sequences[order_[i]].task->comm;
    if (std::find(comms_.begin(), comms_.end(), comm) == comms_.end()) comms_.push_back(comm);
    i = j;
  }

  const int64_t spinNs = param::spinUs() * 1000;
  const int64_t timeoutNs = param::timeoutMs() * 1000000;
  const int64_t livenessNs = std::max<int64_t>(1, param::livenessMs()) * 1000000;
  static const long nCpus = sysconf(_SC_NPROCESSORS_ONLN);
  // More ranks than cores on this host: spinning would only steal the core a peer needs.
  bool oversubscribed = false;
  for (ncclComm* comm : comms_) oversubscribed |= comm->peers.nLocal() > nCpus;
  RankBlock* bell = comms_.empty() ? nullptr : comms_[0]->peers.self();
  net::Proxy* proxy = nullptr;
  for (ncclComm* comm : comms_)
    if (comm->network != nullptr) {
      proxy = &net::Proxy::instance();
      proxy->kick();
      break;
    }

  // The stamp exchange starts this soon into a wait and repeats at this pace while it lasts.
  const int64_t exchangeNs = std::min<int64_t>(livenessNs, kStampExchangeNs);
  bool checkAny = false;
  for (ncclComm* comm : comms_) checkAny |= comm->agreed.mismatchCheck;
  // Every kDrainCheckRuns runs only: a clock read per run would cost small operations several
  // percent (stamp_exchange.h: drainStampNotesIfDue).
  if (checkAny && ++runsSinceDrainCheck_ >= kDrainCheckRuns) {
    runsSinceDrainCheck_ = 0;
    const int64_t now = nowNs();
    for (ncclComm* comm : comms_)
      if (comm->agreed.mismatchCheck) drainStampNotesIfDue(comm, now);
  }
  exchange_.reset();
  mismatchComm_ = nullptr;
  int64_t idleSince = 0, lastCheck = 0, lastExchange = 0;
  unsigned spins = 0;
  while (error_ == ncclSuccess) {
    setupPending_ = false;
    bool moved = pass();
    bool allDone = std::all_of(cursors_.begin(), cursors_.end(), [](const Cursor& c) { return c.finished; });
    if (allDone || error_ != ncclSuccess) break;
    // Waiting on the network: move its messages from this thread rather than wait for the proxy.
    if (!moved && proxy != nullptr) moved = proxy->tryProgress();
    if (moved) {
      idleSince = 0;
      spins = 0;
      continue;
    }
    // The first idle passes only pause once between looks: a peer on another core answers within
    // a cache-line transfer, and a pause costs tens of cycles (more on some CPUs), so looking again
    // soon is what keeps small-message latency low. The clock is read every 16 passes only.
    if (!oversubscribed && idleSince != 0 && (++spins & 15) != 0) {
      cpuRelax();
      continue;
    }
    int64_t now = nowNs();
    if (idleSince == 0) idleSince = lastCheck = now;
    if (now - idleSince < spinNs) {
      // A few microseconds of pure spinning catch a peer that is running on another core; after
      // that, yield, so a peer that shares our core (or a busy machine) gets to run.
      if (oversubscribed || now - idleSince > kPureSpinNs) sched_yield();
      continue;
    }
    if (now - lastCheck >= livenessNs || now - idleSince >= timeoutNs) {
      lastCheck = now;
      if (checkHealth(now - idleSince >= timeoutNs, now - idleSince) != ncclSuccess) break;
    }
    if (checkAny && now - idleSince >= exchangeNs && now - lastExchange >= exchangeNs) {
      lastExchange = now;
      if (exchangeStamps() != ncclSuccess) break;
    }
    // Sleep until a peer rings. Announce the sleep, then look once more, so a peer that published
    // just before it saw the flag is not missed (see ringIfSleeping).
    uint32_t seen = bell->doorbell.load(std::memory_order_acquire);
    for (ncclComm* comm : comms_) comm->peers.self()->sleeping.store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!pass() && error_ == ncclSuccess) {
      // One thread driving several communicators hears only the first one's doorbell: cap the
      // sleep so the others are polled often.
      int64_t cap = comms_.size() > 1 || setupPending_ ? 1000000 : livenessNs;
      // Stamps and reports arrive over the bootstrap, which rings no doorbell: poll for them.
      if (checkAny) cap = std::min(cap, exchangeNs);
      int64_t left = timeoutNs - (nowNs() - idleSince);
      futexWait(&bell->doorbell, seen, std::max<int64_t>(1000, std::min(cap, left)));
    } else {
      idleSince = 0;
    }
    for (ncclComm* comm : comms_) comm->peers.self()->sleeping.store(0, std::memory_order_relaxed);
  }
  if (error_ != ncclSuccess) {
    for (ncclComm* comm : comms_) {
      comm->errors.setAsync(error_);
      comm->setState(CommState::kFailed);
      comm->peers.announceFailure(comm->errors.message());
      // The report goes out before the links close, so a network peer that sees them close
      // finds the report too (failRemote) and names both calls rather than a lost link.
      if (comm == mismatchComm_) reportMismatch(comm, comm->errors.message());
      comm->connections.shutdownAll();
    }
  }
  return error_;
}

}  // namespace

const char* stepName(StepOp op) {
  switch (op) {
    case StepOp::kSend: return "send";
    case StepOp::kRecv: return "recv";
    case StepOp::kRecvReduceSend: return "recvReduceSend";
    case StepOp::kRecvReduceCopy: return "recvReduceCopy";
    case StepOp::kRecvReduceCopySend: return "recvReduceCopySend";
    case StepOp::kRecvCopySend: return "recvCopySend";
    case StepOp::kCopySend: return "copySend";
    case StepOp::kCopy: return "copy";
    case StepOp::kReduceScratch: return "reduceScratch";
    case StepOp::kDirectStage: return "directStage";
    case StepOp::kDirectBarrier: return "directBarrier";
    case StepOp::kDirectReduce: return "directReduce";
    case StepOp::kDirectCopy: return "directCopy";
    case StepOp::kLowpQuantize: return "lowpQuantize";
    case StepOp::kLowpReduce: return "lowpReduce";
    case StepOp::kLowpDequant: return "lowpDequant";
  }
  return "?";
}

ncclResult_t executeOnHost(const Program& prog) {
  if (prog.sequences.empty()) return ncclSuccess;
  thread_local Executor executor;
  return executor.run(prog);
}

}  // namespace weft
