// The host executor's stepping core: the protocol by which chains of sequences move pieces through
// their links, written once for every shape of sequence and every kind of link.
//
// start() turns a program into chains (program.h: sortIntoChains), one cursor each; pass() tries
// every unfinished chain once, and each moves as many pieces as its links allow, never blocking.
// A piece moves only when every link its step names can take it (each receive link has a message,
// each send link room), so a piece is never half done. Links are set up on first use, and every
// pass also moves on every handshake still under way, not only those of the steps at hand.
// Waiting, sleeping, liveness and timeouts are the caller's business (host_executor.cc), as is
// stepping several ranks' runners from one thread (the unit tests), which is what makes a
// deadlock there deterministic.
#pragma once
#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "base/clock.h"
#include "comm/comm.h"
#include "comm/comm_error.h"
#include "comm/wait_point.h"
#include "host_executor/cursor.h"
#include "host_executor/stamp_check.h"
#include "host_executor/step_link.h"
#include "host_executor/step_piece.h"
#include "host_executor/step_trace.h"
#include "program/program.h"
#include "task/task.h"
#include "trace/trace.h"

namespace weft {

template <StepFabric Fabric>
class ChainRunner {
 public:
  using Link = typename Fabric::Link;
  using Cur = Cursor<Link>;

  explicit ChainRunner(Fabric& fabric) : fabric_(fabric) {}

  // Forgets the last run; one cursor per chain of prog, whose sequences' tasks index `tasks`.
  void start(const Program& prog, std::span<const Task> tasks);
  // One attempt at every unfinished chain. True when anything moved (a barrier arrival counts).
  bool pass() {
    progressed_ = false;
    bool moved = handshaking_ && progressHandshakes();
    for (Cur& c : cursors_)
      if (!c.finished) moved |= c.multiPeer ? advance<TreePeers>(c) : advance<OnePeer>(c);
    return moved || progressed_;
  }
  bool finished() const { return unfinished_ == 0; }

  ncclResult_t error() const { return error_; }
  const std::string& errorText() const { return errorText_; }
  // Records the run's first failure (on comm too: ncclGetLastError); later ones are dropped.
  ncclResult_t fail(ncclComm* comm, ncclResult_t code, const std::string& what);
  // The same for a mismatch this rank found, which it must then tell the other ranks.
  ncclResult_t failMismatch(ncclComm* comm, const std::string& text) {
    if (error_ == ncclSuccess) mismatchComm_ = comm;
    return fail(comm, ncclInvalidUsage, text);
  }
  ncclComm* mismatchComm() const { return mismatchComm_; }
  // Replaces a failed link as the run's cause with the mismatch another rank reported: that rank
  // closed the link because of the mismatch, which is what every rank must return.
  void replaceWithReportedMismatch(ncclComm* comm, const std::string& report) {
    error_ = ncclSuccess;
    fail(comm, ncclInvalidUsage, report);
  }
  // A link's setup is still under way over the network since the last reset: nothing rings the
  // doorbell when a handshake moves on, so the caller naps briefly rather than sleeping long.
  bool setupPending() const { return setupPending_; }
  void resetSetupPending() { setupPending_ = false; }

  const std::vector<Cur>& cursors() const { return cursors_; }
  // The communicators of the program's tasks, in the order their chains first appear.
  const std::vector<ncclComm*>& comms() const { return comms_; }
  const Sequence& sequenceOf(const Cur& c) const { return prog_->sequences[order_[c.pos]]; }
  uint32_t sequenceIndexOf(const Cur& c) const { return order_[c.pos]; }
  const Task& taskOf(const Cur& c) const { return tasks_[sequenceOf(c).task]; }
  // Where an unfinished cursor waits: its step and the first peer it waits on; *peers receives
  // every rank it waits on and *directWhat, on the direct lane, what for.
  WaitPoint waitOf(const Cur& c, std::vector<int>* peers, std::string* directWhat) const;
  std::string describe(const Cur& c) const {
    std::vector<int> peers;
    std::string what;
    const WaitPoint w = waitOf(c, &peers, &what);
    return describeWait(w, what);
  }

 private:
  template <class Peers>
  bool advance(Cur& c);
  bool movesData(const Sequence& s) const;
  template <class Peers>
  bool openReceives(Cur& c, const Sequence& s, ncclComm* comm);
  template <class Peers>
  bool receivesFrom(const Sequence& s, int i) const;
  void noteHandshake(ncclComm* comm, Link* link);
  bool progressHandshakes();
  std::string userOf(ncclComm* comm, const Link* link) const;
  bool connect(const Cur& c, ncclComm* comm, Link* const* rx, int nIn, Link* const* tx, int nOut, bool* moved);
  bool advanceDirect(Cur& c, const Task& t, const Step& st);
  template <class Peers>
  int waitingPeer(const Cur& c, const Sequence& s, const Step& st, bool* rx) const;
  void traceStepDone(Cur& c, const Step& st) {
    traceStep(taskOf(c), sequenceOf(c), sequenceIndexOf(c), c.step, st, c.stepStartNs);
    c.stepStartNs = 0;
  }
  void nextSequence(Cur& c) {
    c.step = 0;
    c.done = 0;
    for (int i = 0; i < kMaxSeqPeers; ++i) c.sends[i] = c.recvs[i] = nullptr;
    if (++c.pos == c.end) {
      c.finished = true;
      --unfinished_;
    }
  }

  Fabric& fabric_;
  const Program* prog_ = nullptr;
  uint64_t startedId_ = 0;  // prog_'s sealed identity when it started (0: not sealed)
  std::span<const Task> tasks_;
  std::vector<uint32_t> order_;
  std::vector<Cur> cursors_;
  std::vector<ncclComm*> comms_;
  size_t unfinished_ = 0;
  ncclResult_t error_ = ncclSuccess;
  std::string errorText_;
  ncclComm* mismatchComm_ = nullptr;
  bool setupPending_ = false;
  bool handshaking_ = false;  // some comm of the run has a link in fabric_.handshakes(comm)
  bool progressed_ = false;   // a pass made progress that moved no cursor (a barrier arrival)
};

template <StepFabric Fabric>
void ChainRunner<Fabric>::start(const Program& prog, std::span<const Task> tasks) {
  // A repeat of the sealed program this runner last started (the same call again, program.h
  // seal()) keeps its chains: only the cursors go back to their first sequence. Sorting and
  // building them again cost about 80 of the 1,900 instructions of a 1-rank 8 B AllReduce.
  const bool again = prog.sealedId() != 0 && prog.sealedId() == startedId_ && prog_ == &prog;
  startedId_ = prog.sealedId();
  prog_ = &prog;
  tasks_ = tasks;
  comms_.clear();
  error_ = ncclSuccess;
  errorText_.clear();
  mismatchComm_ = nullptr;
  setupPending_ = false;
  auto noteComm = [&](const Cur& c) {
    ncclComm* comm = tasks_[prog.sequences[order_[c.first]].task].comm;
    if (std::find(comms_.begin(), comms_.end(), comm) == comms_.end()) comms_.push_back(comm);
  };
  if (again) {
    for (Cur& c : cursors_) {
      const bool multiPeer = c.multiPeer;
      c = Cur{c.first, c.end, c.first};
      c.multiPeer = multiPeer;
      noteComm(c);
    }
  } else {
    cursors_.clear();
    const size_t nseq = prog.sequences.size();
    order_.resize(nseq);
    for (uint32_t i = 0; i < nseq; ++i) order_[i] = i;
    sortIntoChains(prog, &order_);
    for (uint32_t i = 0; i < nseq;) {
      uint32_t j = i + 1;
      while (j < nseq && chainOf(prog.sequences[order_[j]]) == chainOf(prog.sequences[order_[i]])) ++j;
      cursors_.push_back(Cur{i, j, i});
      for (uint32_t k = i; k < j; ++k) cursors_.back().multiPeer |= prog.sequences[order_[k]].multiPeer();
      noteComm(cursors_.back());
      i = j;
    }
  }
  unfinished_ = cursors_.size();
  handshaking_ = false;
  for (ncclComm* comm : comms_) handshaking_ |= !fabric_.handshakes(comm).empty();
}

template <StepFabric Fabric>
ncclResult_t ChainRunner<Fabric>::fail(ncclComm* comm, ncclResult_t code, const std::string& what) {
  if (error_ != ncclSuccess) return error_;
  error_ = code;
  errorText_ = what;
  setError(comm, code, "%s", what.c_str());
  return code;
}

// Moves as many pieces of cursor c as its links allow. Returns true if anything moved.
template <StepFabric Fabric>
template <class Peers>
bool ChainRunner<Fabric>::advance(Cur& c) {
  bool moved = false;
  while (!c.finished && error_ == ncclSuccess) {
    const Sequence& s = prog_->sequences[order_[c.pos]];
    if (c.step >= s.nSteps) {
      nextSequence(c);
      moved = true;
      continue;
    }
    const Step& st = prog_->steps[s.firstStep + c.step];
    const Task& t = tasks_[s.task];
    ncclComm* comm = t.comm;
    if (s.lane == Lane::kDirect) {
      if (!advanceDirect(c, t, st)) return moved;
      moved = true;
      continue;
    }
    const int nRecv = Peers::count(s, false);
    // A sequence that moves no data (zero counts) opens no link: its peer's matching sequence moves
    // nothing either, so the peer never connects and may leave before this rank would.
    if (nRecv > 0 && c.recvs[0] == nullptr && movesData(s) && !openReceives<Peers>(c, s, comm)) return moved;
    if (st.count == 0) {
      ++c.step;
      continue;
    }
    Link* rx[Peers::kMax];
    Link* tx[Peers::kMax];
    int nIn = 0, nOut = 0;
    if (stepReceives(st.op)) {
      const unsigned mask = Peers::mask(st, false);
      for (int i = 0; i < Peers::kMax && i < nRecv; ++i)
        if (mask & (1u << i)) rx[nIn++] = c.recvs[i];
    }
    if (stepSends(st.op)) {
      const unsigned mask = Peers::mask(st, true);
      const int nSend = Peers::count(s, true);
      for (int i = 0; i < Peers::kMax && i < nSend; ++i)
        if (mask & (1u << i)) {
          if (c.sends[i] == nullptr) c.sends[i] = fabric_.link(comm, s, Peers::peer(s, true, i), true);
          tx[nOut++] = c.sends[i];
        }
    }
    if (!connect(c, comm, rx, nIn, tx, nOut, &moved)) return moved;
    const size_t es = dataTypeSize(t.dtype);
    // Element sizes are powers of two (never 0: the call's dtype was checked), so a shift does
    // what a division by es would, without a division's tens of cycles on every piece.
    const size_t n = std::min(st.count - c.done, size_t(comm->slotBytes) >> __builtin_ctzll(es));
    const size_t bytes = n * es;
    for (int k = 0; k < nIn; ++k)
      if (!rx[k]->canRecv()) return moved;
    for (int k = 0; k < nOut; ++k)
      if (!tx[k]->canSend(bytes)) return moved;
    const void* in[Peers::kMax];
    void* out[Peers::kMax];
    for (int k = 0; k < nIn; ++k) {
      size_t got = 0;
      in[k] = rx[k]->recvBuffer(&got);
      if (!stampMatches(t, rx[k]->peer(), rx[k]->recvStamp())) {
        failMismatch(comm, stampMismatchText(t, rx[k]->peer(), rx[k]->recvStamp()));
        return moved;
      }
      if (got != bytes) {
        // Tree messages name their lane: a node talks to several peers there.
        const std::string lane = Peers::kMax > 1 ? std::string(" (") + laneName(s.lane) + " lane)" : std::string();
        fail(comm, ncclInvalidUsage, messageSizeText(t, lane.c_str(), rx[k]->peer(), bytes, got));
        return moved;
      }
    }
    for (int k = 0; k < nOut; ++k) out[k] = tx[k]->sendBuffer(bytes);
    if (c.done == 0 && trace::on()) c.stepStartNs = nowNs();
    runPiece(t, st, c.done, n, in, nIn, out, nOut);
    for (int k = 0; k < nOut; ++k) tx[k]->publish(bytes, t.stamp);
    for (int k = 0; k < nIn; ++k) rx[k]->release();
    moved = true;
    c.done += n;
    if (c.done == st.count) {
      if (c.stepStartNs != 0) traceStepDone(c, st);
      ++c.step;
      c.done = 0;
    }
  }
  return moved;
}

template <StepFabric Fabric>
bool ChainRunner<Fabric>::movesData(const Sequence& s) const {
  for (uint32_t i = 0; i < s.nSteps; ++i)
    if (prog_->steps[s.firstStep + i].count > 0) return true;
  return false;
}

// The receiving side creates its FIFOs as soon as the sequence starts, whatever the first step
// is: its sender may be blocked on exactly such a FIFO before this rank receives anything. A link
// the sequence will receive on joins the handshakes every pass moves on: over some networks the
// sender's connect completes only once this side accepts, while this rank's own steps may send
// for a while first (a ring's first step). One it will not receive on is left as it is: its
// sender does not connect in this operation.
template <StepFabric Fabric>
template <class Peers>
bool ChainRunner<Fabric>::openReceives(Cur& c, const Sequence& s, ncclComm* comm) {
  for (int i = 0; i < Peers::kMax && i < Peers::count(s, false); ++i) {
    c.recvs[i] = fabric_.link(comm, s, Peers::peer(s, false, i), false);
    bool created = false;
    std::string why;
    ncclResult_t r = c.recvs[i]->tryConnect(&created, &why);
    if (r != ncclSuccess) {
      fail(comm, r, why);
      return false;
    }
    if (!created && receivesFrom<Peers>(s, i)) noteHandshake(comm, c.recvs[i]);
  }
  return true;
}

// Whether some step of s that moves data receives from its i-th receive peer.
template <StepFabric Fabric>
template <class Peers>
bool ChainRunner<Fabric>::receivesFrom(const Sequence& s, int i) const {
  for (uint32_t k = 0; k < s.nSteps; ++k) {
    const Step& st = prog_->steps[s.firstStep + k];
    if (st.count > 0 && stepReceives(st.op) && (Peers::mask(st, false) & (1u << i))) return true;
  }
  return false;
}

template <StepFabric Fabric>
void ChainRunner<Fabric>::noteHandshake(ncclComm* comm, Link* link) {
  std::vector<Link*>& pending = fabric_.handshakes(comm);
  if (std::find(pending.begin(), pending.end(), link) == pending.end()) pending.push_back(link);
  handshaking_ = true;
}

// One attempt at every handshake of the run's communicators still under way, whichever step needs
// it: NCCL drives all of a setup's connects and accepts side by side, and a network whose connect
// waits for the peer's accept (aws-ofi-nccl) deadlocks when each rank only drives the link its
// current step sends on. Costs nothing once every link is up (handshaking_ is false). True when a
// link came up.
template <StepFabric Fabric>
bool ChainRunner<Fabric>::progressHandshakes() {
  bool moved = false, left = false;
  for (ncclComm* comm : comms_) {
    std::vector<Link*>& pending = fabric_.handshakes(comm);
    for (size_t i = 0; i < pending.size();) {
      Link* link = pending[i];
      bool ready = link->connected();
      if (!ready) {
        std::string why;
        ncclResult_t r = link->tryConnect(&ready, &why);
        if (r != ncclSuccess) {
          fail(comm, r, why + " while " + userOf(comm, link));
          return moved;
        }
        moved |= ready;
      }
      if (ready) {
        pending[i] = pending.back();
        pending.pop_back();
      } else {
        ++i;
      }
    }
    left |= !pending.empty();
  }
  handshaking_ = left;
  setupPending_ |= left;
  return moved;
}

// What the run does with a link whose handshake failed, for the error: the cursor that holds it,
// else the communicator's first unfinished one.
template <StepFabric Fabric>
std::string ChainRunner<Fabric>::userOf(ncclComm* comm, const Link* link) const {
  const Cur* first = nullptr;
  for (const Cur& c : cursors_) {
    if (c.finished || taskOf(c).comm != comm) continue;
    for (int i = 0; i < kMaxSeqPeers; ++i)
      if (c.sends[i] == link || c.recvs[i] == link) return describe(c);
    if (first == nullptr) first = &c;
  }
  return first != nullptr ? describe(*first) : "rank " + std::to_string(comm->rank) + " runs an operation";
}

// Every link a step uses progresses its setup in the same pass: over the network, the peer's side
// of our receive link may be waiting for our send link's handshake. True once all are connected;
// false while one is pending (setupPending) or after a failure (recorded).
template <StepFabric Fabric>
bool ChainRunner<Fabric>::connect(const Cur& c, ncclComm* comm, Link* const* rx, int nIn, Link* const* tx, int nOut,
                                  bool* moved) {
  bool pending = false;
  for (int k = 0; k < nIn + nOut; ++k) {
    Link* link = k < nIn ? rx[k] : tx[k - nIn];
    if (link->connected()) continue;
    bool ready = false;
    std::string why;
    ncclResult_t r = link->tryConnect(&ready, &why);
    if (r != ncclSuccess) {
      // The link's own text names the ranks and the link; add the operation that needed it.
      fail(comm, r, why + " while " + describe(c));
      return false;
    }
    if (!ready) noteHandshake(comm, link);
    pending |= !ready;
    *moved |= ready;
  }
  if (pending) setupPending_ = true;
  return !pending;
}

// A direct-lane step (no link): true when it completed, so the cursor moves on. A barrier arrival
// counts as progress too (the idle clock restarts), but the cursor stays on the step.
template <StepFabric Fabric>
bool ChainRunner<Fabric>::advanceDirect(Cur& c, const Task& t, const Step& st) {
  std::string why;
  if (c.stepStartNs == 0 && trace::on()) c.stepStartNs = nowNs();
  switch (fabric_.direct(t, st, &c.done, &why)) {
    case DirectProgress::kDone:
      if (c.stepStartNs != 0) traceStepDone(c, st);
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

// The peer a stuck cursor waits for: the first receive peer of the step without a message, else
// the first send peer without room, else the sequence's first send peer.
template <StepFabric Fabric>
template <class Peers>
int ChainRunner<Fabric>::waitingPeer(const Cur& c, const Sequence& s, const Step& st, bool* rx) const {
  auto stuck = [](Link* l, bool send) {
    return l == nullptr || !l->connected() || !(send ? l->canSend() : l->canRecv());
  };
  *rx = false;
  if (stepReceives(st.op))
    for (int i = 0; i < Peers::kMax && i < Peers::count(s, false); ++i)
      if ((Peers::mask(st, false) & (1u << i)) && stuck(c.recvs[i], false)) {
        *rx = true;
        return Peers::peer(s, false, i);
      }
  if (stepSends(st.op))
    for (int i = 0; i < Peers::kMax && i < Peers::count(s, true); ++i)
      if ((Peers::mask(st, true) & (1u << i)) && stuck(c.sends[i], true)) return Peers::peer(s, true, i);
  return s.sendPeer;
}

template <StepFabric Fabric>
WaitPoint ChainRunner<Fabric>::waitOf(const Cur& c, std::vector<int>* peers, std::string* directWhat) const {
  const Sequence& s = sequenceOf(c);
  const Task& t = tasks_[s.task];
  const uint32_t at = std::min(c.step, s.nSteps - 1);
  const Step& st = prog_->steps[s.firstStep + at];
  WaitPoint w;
  w.opSeq = t.seq;
  w.count = t.count;
  w.done = c.done;
  w.stepCount = st.count;
  w.rank = t.comm->rank;
  w.channel = s.channel;
  w.dtype = static_cast<int32_t>(t.dtype);
  w.step = c.step;
  w.nSteps = s.nSteps;
  w.kind = t.kind;
  w.op = st.op;
  w.lane = s.lane;
  if (s.lane == Lane::kDirect) {
    *directWhat = fabric_.describeDirect(t, st, c.done, peers);
    w.peer = peers->empty() ? -1 : peers->front();
    return w;
  }
  bool rx = false;
  w.peer = c.multiPeer ? waitingPeer<TreePeers>(c, s, st, &rx) : waitingPeer<OnePeer>(c, s, st, &rx);
  w.receiving = rx;
  peers->push_back(w.peer);
  return w;
}

}  // namespace weft
