// A deterministic, single-threaded interpreter for the Programs of all ranks of a communicator, so
// that algorithm tests check what the ring and p2p builders emit without shared memory, threads or
// timing. It interprets steps the way src/host_executor/host_executor.cc does:
//  - sequences of one rank with equal chainKeyOf (src/program/program.h) form one chain and run in
//    issue order under one cursor, as in the executor (the comm is per rank here);
//  - a step moves pieces of min(remaining, slotBytes / elemSize) elements, one message per piece;
//  - src offsets are from task.sendbuff, dst offsets from task.recvbuff, with the same reduceCopy
//    calls, pre/post flags and the same two skips (kCopySend does not copy onto itself, kCopy onto
//    itself without flags does nothing);
//  - every (lane, channel, sender, receiver) link is a FIFO of nSlots messages, so a step can only
//    run ahead of its receiver by nSlots pieces;
//  - a step of a multi-peer sequence (the tree lane) moves a piece only when every receive peer of
//    its recvMask has a message and every send peer of its sendMask has room, and moves the data
//    with the executor's runMultiPeerPiece.
// Rounds visit every rank's cursors in turn, each advancing as far as it can. A bounded FIFO network
// of deterministic processes gives the same result and the same deadlocks under any fair schedule,
// so one round-robin order stands for all of the executor's thread interleavings, except where two
// chains of one rank share a FIFO: then the order of their messages is a race, which the simulator
// reports as an error rather than picking one outcome.
//
// Beyond the executor, the simulator checks what the executor trusts: that every piece a step reads
// or writes lies inside the buffer extents the test declared, that sources and destinations do not
// partially overlap (reduceCopy's contract), that each message has the size its receiver expects,
// and that no message is left over once every cursor has finished.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "collectives/p2p/p2p.h"
#include "collectives/ring/ring.h"
#include "comm/comm_algorithms.h"
#include "comm/comm.h"
#include "program/program.h"
#include "host_executor/step_piece.h"
#include "math/reduce_host.h"
#include "task/task.h"

namespace weft::sim {

// What init would agree on for every rank of the communicator.
struct Geometry {
  int nranks = 2;
  uint32_t slotBytes = 4096;
  uint32_t nSlots = 8;
  int nChannels = 1;
};

struct Outcome {
  bool ok = true;
  bool deadlock = false;
  std::string error;     // why it failed; for a deadlock, a dump of every stuck cursor
  uint64_t rounds = 0;   // passes over all cursors
  uint64_t messages = 0; // pieces that travelled through FIFOs
};

inline bool isRingKind(CollKind k) {
  return k == CollKind::kAllReduce || k == CollKind::kBroadcast || k == CollKind::kReduce ||
         k == CollKind::kAllGather || k == CollKind::kReduceScatter;
}

inline bool reducesKind(CollKind k) {
  return k == CollKind::kAllReduce || k == CollKind::kReduce || k == CollKind::kReduceScatter;
}

// The ops that read task.sendbuff and the ones that write task.recvbuff (before the executor's
// same-memory skips, which only ever drop a write).
// One link's FIFO: nSlots slots of slotBytes, each holding one message and its size. Messages are
// written in place like the shared-memory FIFO's sendBuffer/publish, so reduceCopy writes straight
// into the slot.
class Fifo {
 public:
  Fifo(uint32_t nSlots, uint32_t slotBytes)
      : nSlots_(nSlots), slotBytes_(slotBytes), data_(size_t(nSlots) * slotBytes), sizes_(nSlots) {}
  bool empty() const { return head_ == tail_; }
  bool full() const { return tail_ - head_ >= nSlots_; }
  uint64_t used() const { return tail_ - head_; }
  void* sendBuffer() { return slot(tail_); }
  void publish(size_t bytes) {
    sizes_[tail_ % nSlots_] = bytes;
    ++tail_;
  }
  const void* front(size_t* bytes) {
    *bytes = sizes_[head_ % nSlots_];
    return slot(head_);
  }
  void release() { ++head_; }

 private:
  unsigned char* slot(uint64_t i) { return data_.data() + (i % nSlots_) * slotBytes_; }
  uint64_t nSlots_, slotBytes_;
  std::vector<unsigned char> data_;
  std::vector<size_t> sizes_;
  uint64_t head_ = 0, tail_ = 0;
};

class Simulator {
 public:
  using Builder = std::function<void(const Task&, Program*)>;

  explicit Simulator(const Geometry& g) : geo_(g), tasks_(g.nranks), progs_(g.nranks) {
    for (int r = 0; r < g.nranks; ++r) {
      auto c = std::make_unique<ncclComm>();
      c->rank = r;
      c->nranks = g.nranks;
      c->commHash = 0x51u;
      c->slotBytes = g.slotBytes;
      c->nSlots = g.nSlots;
      c->nChannels = g.nChannels;
      comms_.push_back(std::move(c));
    }
  }

  // Lets chains of one rank share a FIFO instead of refusing the program, to see what the
  // executor's cursor order (chains sorted by key) would make of it.
  void allowSharedLinks(bool on) { allowShared_ = on; }

  int nranks() const { return geo_.nranks; }
  const Geometry& geometry() const { return geo_; }
  ncclComm* comm(int r) { return comms_[r].get(); }
  Program& program(int r) { return progs_[r]; }

  // Records an operation of rank r, in issue order (several make a group). The task's comm and seq
  // are filled in; sendElems and recvElems are how many elements from sendbuff and recvbuff the
  // algorithm may touch, so that a step reaching outside them is reported instead of corrupting
  // the heap. Reductions need t.spec resolved by the caller (see resolveSpec).
  Task& add(int r, Task t, size_t sendElems, size_t recvElems) {
    t.comm = comms_[r].get();
    t.seq = tasks_[r].size();
    tasks_[r].push_back(Rec{std::move(t), sendElems, recvElems});
    return tasks_[r].back().task;
  }

  // Builds every rank's program the way group.cc does, but with a fixed ring channel count (the
  // tests choose it instead of the size heuristic, to cover every channel count at every size).
  void build(int ringChannels) {
    build([ringChannels](const Task& t, Program* p) {
      if (isRingKind(t.kind))
        buildRingProgram(commShape(t.comm), t, ringChannels, p);
      else
        buildP2pProgram(commShape(t.comm), t, p);
    });
  }
  void build(const Builder& b) {
    for (int r = 0; r < geo_.nranks; ++r) {
      progs_[r].clear();
      for (const Rec& rec : tasks_[r]) b(rec.task, &progs_[r]);
    }
  }

  Outcome run() {
    Outcome out;
    cursors_.clear();
    fifos_.clear();
    extents_.clear();
    for (int r = 0; r < geo_.nranks; ++r)
      for (const Rec& rec : tasks_[r]) extents_[&rec.task] = &rec;
    if (!makeCursors(&out)) return out;
    while (true) {
      bool progress = false;
      for (Cursor& c : cursors_)
        if (!c.finished) {
          progress |= advance(c, &out);
          if (!out.ok) return out;
        }
      ++out.rounds;
      if (std::all_of(cursors_.begin(), cursors_.end(), [](const Cursor& c) { return c.finished; })) break;
      if (!progress) {
        out.ok = false;
        out.deadlock = true;
        out.error = "DEADLOCK after " + std::to_string(out.rounds) + " rounds; stuck cursors:\n" + dump();
        return out;
      }
    }
    // Every message sent must have been received: a leftover means sender and receiver disagree on
    // how much flows over a link, which the real executor would only notice in a later operation.
    for (auto& [key, fifo] : fifos_)
      if (!fifo->empty()) {
        out.ok = false;
        out.error += std::to_string(fifo->used()) + " message(s) left unreceived on " + linkName(key) + "\n";
      }
    return out;
  }

 private:
  struct Rec {
    Task task;
    size_t sendElems, recvElems;
  };
  using LinkKey = std::tuple<int, int, int, int>;  // lane, channel, sender, receiver
  struct Cursor {
    int rank;
    std::vector<uint32_t> seqs;  // indices into the rank's program, in issue order
    size_t pos = 0;
    uint32_t step = 0;
    size_t done = 0;  // elements of the current step already moved
    bool finished = false;
    const char* waiting = "";  // what blocked it last, for the deadlock dump
  };

  static std::string laneName(int lane) { return weft::laneName(static_cast<Lane>(lane)); }
  static std::string linkName(const LinkKey& k) {
    return laneName(std::get<0>(k)) + " ch " + std::to_string(std::get<1>(k)) + " " +
           std::to_string(std::get<2>(k)) + "->" + std::to_string(std::get<3>(k));
  }

  Fifo* fifo(const LinkKey& k) {
    auto it = fifos_.find(k);
    if (it == fifos_.end()) it = fifos_.emplace(k, std::make_unique<Fifo>(geo_.nSlots, geo_.slotBytes)).first;
    return it->second.get();
  }

  // Groups each rank's sequences into chains, in the executor's order (a stable sort on the chain
  // key), and refuses programs that name impossible peers or whose chains would race for a FIFO.
  bool makeCursors(Outcome* out) {
    for (int r = 0; r < geo_.nranks; ++r) {
      const Program& p = progs_[r];
      std::map<ChainKey, std::vector<uint32_t>> chains;
      for (uint32_t i = 0; i < p.sequences.size(); ++i) {
        const Sequence& s = p.sequences[i];
        std::string bad;
        if (s.task == nullptr || extents_.count(s.task) == 0 || s.task->comm != comms_[r].get())
          bad = "does not belong to this rank's tasks";
        else if (s.sendPeer < -1 || s.sendPeer >= geo_.nranks || s.recvPeer < -1 || s.recvPeer >= geo_.nranks)
          bad = "names a peer outside [0, nranks)";
        else if (s.multiPeer())
          bad = badMultiPeer(r, s);
        else if (s.firstStep + uint64_t(s.nSteps) > p.steps.size())
          bad = "has steps past the end of the program";
        if (!bad.empty()) {
          out->ok = false;
          out->error = "rank " + std::to_string(r) + " sequence " + std::to_string(i) + " " + bad;
          return false;
        }
        chains[chainKeyOf(s)].push_back(i);
      }
      // A link used by two chains carries both chains' messages in the order the chains happen to
      // run, while the peer reads them in its own chain's order: a race in the executor.
      std::map<LinkKey, uint32_t> linkUser;  // link -> first sequence that used it
      for (auto& [key, seqs] : chains) {
        std::map<LinkKey, bool> mine;
        for (uint32_t i : seqs) {
          const Sequence& s = p.sequences[i];
          // Every link the sequence may use: send links first, then receive links.
          std::vector<std::pair<LinkKey, int>> links;  // link, direction (0 send, 1 receive)
          if (s.multiPeer()) {
            for (int k = 0; k < s.nSendPeers; ++k) links.push_back({{int(s.lane), s.channel, r, s.sendPeers[k]}, 0});
            for (int k = 0; k < s.nRecvPeers; ++k) links.push_back({{int(s.lane), s.channel, s.recvPeers[k], r}, 1});
          } else {
            if (s.sendPeer >= 0) links.push_back({{int(s.lane), s.channel, r, s.sendPeer}, 0});
            if (s.recvPeer >= 0) links.push_back({{int(s.lane), s.channel, s.recvPeer, r}, 1});
          }
          for (const auto& [link, d] : links) {
            auto [o, fresh] = linkUser.emplace(link, i);
            if (fresh) mine[link] = true;
            if (fresh || mine.count(link) || allowShared_) continue;
            const Sequence& first = p.sequences[o->second];
            out->ok = false;
            out->error = "rank " + std::to_string(r) + ": " + collName(first.task->kind) + " #" +
                         std::to_string(first.task->seq) + " and " + collName(s.task->kind) + " #" +
                         std::to_string(s.task->seq) + " are in different chains but both " +
                         (d == 0 ? "send on " : "receive on ") + linkName(link) +
                         ": their messages interleave in whatever order the two chains run";
            return false;
          }
        }
        cursors_.push_back(Cursor{r, seqs});
      }
    }
    return true;
  }

  // What is wrong with a multi-peer sequence's peers or its steps' masks ("" when nothing).
  std::string badMultiPeer(int r, const Sequence& s) const {
    if (s.nSendPeers > kMaxSeqPeers || s.nRecvPeers > kMaxSeqPeers) return "has more than kMaxSeqPeers peers";
    for (int k = 0; k < s.nSendPeers + s.nRecvPeers; ++k) {
      const int peer = k < s.nSendPeers ? s.sendPeers[k] : s.recvPeers[k - s.nSendPeers];
      if (peer < 0 || peer >= geo_.nranks) return "names a peer outside [0, nranks)";
      if (peer == r) return "names itself as a peer";
    }
    for (int k = 0; k < s.nSendPeers; ++k)
      for (int j = 0; j < k; ++j)
        if (s.sendPeers[j] == s.sendPeers[k]) return "names a send peer twice";
    for (int k = 0; k < s.nRecvPeers; ++k)
      for (int j = 0; j < k; ++j)
        if (s.recvPeers[j] == s.recvPeers[k]) return "names a receive peer twice";
    const Program& p = progs_[r];
    for (uint32_t i = 0; i < s.nSteps && s.firstStep + uint64_t(i) < p.steps.size(); ++i) {
      const Step& st = p.steps[s.firstStep + i];
      if ((st.recvMask >> s.nRecvPeers) != 0 || (st.sendMask >> s.nSendPeers) != 0)
        return "has step " + std::to_string(i) + " whose mask names a peer the sequence lacks";
      if (stepReceives(st.op) != (st.recvMask != 0) || stepSends(st.op) != (st.sendMask != 0))
        return "has step " + std::to_string(i) + " (" + stepName(st.op) + ") whose masks do not match its op";
    }
    return "";
  }

  bool fail(Outcome* out, const Cursor& c, const std::string& what) {
    out->ok = false;
    out->error = describe(c) + ": " + what;
    return false;
  }

  std::string describe(const Cursor& c) const {
    const Program& p = progs_[c.rank];
    const Sequence& s = p.sequences[c.seqs[c.pos]];
    std::string send = std::to_string(s.sendPeer), recv = std::to_string(s.recvPeer);
    if (s.multiPeer()) {
      send = recv = "";
      for (int k = 0; k < s.nSendPeers; ++k) send += (k ? "," : "") + std::to_string(s.sendPeers[k]);
      for (int k = 0; k < s.nRecvPeers; ++k) recv += (k ? "," : "") + std::to_string(s.recvPeers[k]);
    }
    std::string d = "rank " + std::to_string(c.rank) + " [" + laneName(int(s.lane)) + " ch " +
                    std::to_string(s.channel) + " send->" + send + " recv<-" + recv + "] " + collName(s.task->kind) + " #" +
                    std::to_string(s.task->seq) + " sequence " + std::to_string(c.seqs[c.pos]);
    if (c.step < s.nSteps) {
      const Step& st = p.steps[s.firstStep + c.step];
      d += " step " + std::to_string(c.step) + "/" + std::to_string(s.nSteps) + " " + stepName(st.op) + " (" +
           std::to_string(c.done) + " of " + std::to_string(st.count) + " elements done, src+" +
           std::to_string(st.srcOffset) + " dst+" + std::to_string(st.dstOffset) + ")";
    }
    return d;
  }

  std::string dump() const {
    std::string d;
    for (const Cursor& c : cursors_)
      if (!c.finished) d += "  " + describe(c) + " " + c.waiting + "\n";
    for (const auto& [key, f] : fifos_)
      if (!f->empty())
        d += "  fifo " + linkName(key) + " holds " + std::to_string(f->used()) + "/" + std::to_string(geo_.nSlots) +
             " messages\n";
    return d;
  }

  // Piece ranges must lie inside the declared extents; a source and a destination may be the same
  // memory or disjoint, never partly overlapping (reduceCopy's contract). A step may name either
  // user buffer as its source or destination (the tree root sends from its receive buffer); the
  // scratch area has no declared extent here.
  bool checkPiece(const Cursor& c, const Step& st, const Rec& rec, size_t n, size_t es, Outcome* out) {
    auto extent = [&](Buf b) { return b == Buf::kSend ? rec.sendElems : b == Buf::kRecv ? rec.recvElems : SIZE_MAX; };
    auto name = [](Buf b) { return b == Buf::kSend ? "sendbuff" : b == Buf::kRecv ? "recvbuff" : "scratch"; };
    auto base = [&](Buf b) {
      return reinterpret_cast<uintptr_t>(b == Buf::kSend ? rec.task.sendbuff
                                         : b == Buf::kRecv ? static_cast<const void*>(rec.task.recvbuff)
                                                           : rec.task.scratch);
    };
    const size_t from = st.srcOffset + c.done, to = st.dstOffset + c.done;
    const size_t srcN = extent(st.srcBuf), dstN = extent(st.dstBuf);
    if (stepReadsSrc(st.op) && (from > srcN || n > srcN - from))
      return fail(out, c, std::string("reads ") + name(st.srcBuf) + " elements [" + std::to_string(from) + ", " +
                              std::to_string(from + n) + ") outside its " + std::to_string(srcN) + " elements");
    if (stepWritesDst(st.op) && (to > dstN || n > dstN - to))
      return fail(out, c, std::string("writes ") + name(st.dstBuf) + " elements [" + std::to_string(to) + ", " +
                              std::to_string(to + n) + ") outside its " + std::to_string(dstN) + " elements");
    if (stepReadsSrc(st.op) && stepWritesDst(st.op)) {
      auto a = base(st.srcBuf) + from * es;
      auto b = base(st.dstBuf) + to * es;
      if (a != b && a < b + n * es && b < a + n * es)
        return fail(out, c, "source and destination partially overlap");
    }
    return true;
  }

  // Moves as many pieces of c as the FIFOs allow. Returns true if its state changed.
  bool advance(Cursor& c, Outcome* out) {
    const Program& p = progs_[c.rank];
    bool progress = false;
    while (!c.finished) {
      const Sequence& s = p.sequences[c.seqs[c.pos]];
      if (c.step >= s.nSteps) {
        c.step = 0;
        c.done = 0;
        if (++c.pos == c.seqs.size()) c.finished = true;
        progress = true;
        continue;
      }
      const Step& st = p.steps[s.firstStep + c.step];
      if (st.count == 0) {
        ++c.step;
        progress = true;
        continue;
      }
      const Task& t = *s.task;
      const Rec& rec = *extents_.at(&t);
      const size_t es = dataTypeSize(t.dtype);
      if (es == 0 || geo_.slotBytes < es) return fail(out, c, "a FIFO slot cannot hold one element");
      if (s.multiPeer()) {
        if (!advanceMultiPiece(c, s, st, rec, es, out)) return progress;
        progress = true;
        continue;
      }
      const bool rx = stepReceives(st.op), tx = stepSends(st.op);
      if (rx && s.recvPeer < 0) return fail(out, c, "step receives but its sequence has no receive peer");
      if (tx && s.sendPeer < 0) return fail(out, c, "step sends but its sequence has no send peer");
      Fifo* in = rx ? fifo({int(s.lane), s.channel, s.recvPeer, c.rank}) : nullptr;
      Fifo* outq = tx ? fifo({int(s.lane), s.channel, c.rank, s.sendPeer}) : nullptr;
      if (rx && in->empty()) {
        c.waiting = "waiting to receive (FIFO empty)";
        return progress;
      }
      if (tx && outq->full()) {
        c.waiting = "waiting for room to send (FIFO full)";
        return progress;
      }
      const size_t n = std::min(st.count - c.done, size_t(geo_.slotBytes) / es);
      const size_t bytes = n * es;
      if (!checkPiece(c, st, rec, n, es, out)) return false;
      const void* msg = nullptr;
      if (rx) {
        size_t got = 0;
        msg = in->front(&got);
        if (got != bytes)
          return fail(out, c, "expected a message of " + std::to_string(bytes) + " bytes from rank " +
                                  std::to_string(s.recvPeer) + " but got " + std::to_string(got));
      }
      runStepPiece(t, st, geo_.nranks, c.done, n, msg, tx ? outq->sendBuffer() : nullptr);
      if (tx) {
        outq->publish(bytes);
        ++out->messages;
      }
      if (rx) in->release();
      c.waiting = "";
      progress = true;
      c.done += n;
      if (c.done == st.count) {
        ++c.step;
        c.done = 0;
      }
    }
    return progress;
  }

  // One piece of a multi-peer step, if every FIFO it needs is ready; false when it cannot move
  // (out->ok says whether that is an error). Advances c's position within the step.
  bool advanceMultiPiece(Cursor& c, const Sequence& s, const Step& st, const Rec& rec, size_t es, Outcome* out) {
    Fifo* ins[kMaxSeqPeers];
    Fifo* outs[kMaxSeqPeers];
    int from[kMaxSeqPeers];
    int nIn = 0, nOut = 0;
    if (stepReceives(st.op))
      for (int k = 0; k < s.nRecvPeers; ++k)
        if (st.recvMask & (1u << k)) {
          from[nIn] = s.recvPeers[k];
          ins[nIn++] = fifo({int(s.lane), s.channel, s.recvPeers[k], c.rank});
        }
    if (stepSends(st.op))
      for (int k = 0; k < s.nSendPeers; ++k)
        if (st.sendMask & (1u << k)) outs[nOut++] = fifo({int(s.lane), s.channel, c.rank, s.sendPeers[k]});
    for (int k = 0; k < nIn; ++k)
      if (ins[k]->empty()) {
        c.waiting = "waiting to receive (FIFO empty)";
        return false;
      }
    for (int k = 0; k < nOut; ++k)
      if (outs[k]->full()) {
        c.waiting = "waiting for room to send (FIFO full)";
        return false;
      }
    const size_t n = std::min(st.count - c.done, size_t(geo_.slotBytes) / es);
    const size_t bytes = n * es;
    if (!checkPiece(c, st, rec, n, es, out)) return false;
    const void* msg[kMaxSeqPeers];
    void* slot[kMaxSeqPeers];
    for (int k = 0; k < nIn; ++k) {
      size_t got = 0;
      msg[k] = ins[k]->front(&got);
      if (got != bytes)
        return fail(out, c, "expected a message of " + std::to_string(bytes) + " bytes from rank " +
                                std::to_string(from[k]) + " but got " + std::to_string(got));
    }
    for (int k = 0; k < nOut; ++k) slot[k] = outs[k]->sendBuffer();
    runMultiPeerPiece(*s.task, st, c.done, n, msg, nIn, slot, nOut);
    for (int k = 0; k < nOut; ++k) {
      outs[k]->publish(bytes);
      ++out->messages;
    }
    for (int k = 0; k < nIn; ++k) ins[k]->release();
    c.waiting = "";
    c.done += n;
    if (c.done == st.count) {
      ++c.step;
      c.done = 0;
    }
    return true;
  }

  Geometry geo_;
  std::vector<std::unique_ptr<ncclComm>> comms_;
  std::vector<std::deque<Rec>> tasks_;  // a deque, because sequences point at the tasks
  std::vector<Program> progs_;
  std::vector<Cursor> cursors_;
  std::map<LinkKey, std::unique_ptr<Fifo>> fifos_;
  std::map<const Task*, const Rec*> extents_;
  bool allowShared_ = false;
};

// The spec group.cc resolves for a built-in op (reductions only; other kinds keep a plain copy).
inline ReduceSpec resolveSpec(CollKind kind, ncclDataType_t dtype, ncclRedOp_t op, int nranks) {
  ReduceSpec spec;
  spec.dtype = dtype;
  if (reducesKind(kind)) makeReduceSpec(dtype, op, nranks, &spec);
  return spec;
}

// ---- Test data: inputs, reference reductions, buffers with guard zones, comparisons ----

inline uint64_t mix64(uint64_t x) {  // splitmix64: cheap, well spread, the same on every platform
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline bool isFloatType(ncclDataType_t dt) { return dt == ncclFloat32 || dt == ncclFloat64; }

// The element types the tests use: a 1-, 4- and 8-byte type change how many elements fit a slot.
inline double loadValue(ncclDataType_t dt, const void* p) {
  switch (dt) {
    case ncclInt8: { int8_t v; memcpy(&v, p, 1); return v; }
    case ncclInt32: { int32_t v; memcpy(&v, p, 4); return v; }
    case ncclFloat32: { float v; memcpy(&v, p, 4); return v; }
    case ncclFloat64: { double v; memcpy(&v, p, 8); return v; }
    default: return 0;
  }
}
inline void storeValue(ncclDataType_t dt, void* p, double x) {
  switch (dt) {
    case ncclInt8: { auto v = static_cast<int8_t>(static_cast<int64_t>(x)); memcpy(p, &v, 1); break; }
    case ncclInt32: { auto v = static_cast<int32_t>(static_cast<int64_t>(x)); memcpy(p, &v, 4); break; }
    case ncclFloat32: { auto v = static_cast<float>(x); memcpy(p, &v, 4); break; }
    case ncclFloat64: memcpy(p, &x, 8); break;
    default: break;
  }
}

// Element i of the input `salt` of rank `rank`, exactly representable in dt. Floats carry a full
// mantissa so that summation order shows in the low bits; integers stay small enough that sums of
// 16 ranks do not wrap except in int8, which wraps on purpose.
inline double inputValue(ncclDataType_t dt, int rank, size_t i, uint64_t salt = 0) {
  uint64_t h = mix64((uint64_t(rank) << 40) ^ (uint64_t(i) * 0x100000001b3ull) ^ (salt << 56) ^ salt);
  switch (dt) {
    case ncclInt8: return static_cast<double>(int64_t(h % 200) - 100);
    case ncclInt32: return static_cast<double>(int64_t(h % 2000001) - 1000000);
    case ncclFloat32: return static_cast<double>(h >> 40) / 8388608.0 - 1.0;  // k/2^23 - 1, k < 2^24
    case ncclFloat64: return static_cast<double>(h >> 11) / 4503599627370496.0 - 1.0;
    default: return 0;
  }
}

// A reduction as a test asks for it: a built-in op, or premulsum with a scalar.
enum class Red { kSum, kMax, kAvg, kPreMulSum };
struct Variant {
  ncclDataType_t dtype;
  Red red;
  double scalar = 0;  // kPreMulSum only
  std::string name() const {
    static const char* const reds[] = {"sum", "max", "avg", "premulsum"};
    std::string n = std::string(dataTypeName(dtype)) + "/" + reds[int(red)];
    if (red == Red::kPreMulSum) n += "(" + std::to_string(scalar) + ")";
    return n;
  }
};

// The spec the library resolves for v: makeReduceSpec for built-in ops, and for premulsum what
// ncclRedOpCreatePreMulSum records (the scalar's bits in the datatype's own format).
inline ReduceSpec specFor(const Variant& v, CollKind kind, int nranks) {
  static const ncclRedOp_t ops[] = {ncclSum, ncclMax, ncclAvg, ncclSum};
  ReduceSpec spec = resolveSpec(kind, v.dtype, ops[int(v.red)], nranks);
  if (v.red == Red::kPreMulSum && reducesKind(kind)) {
    spec.op = BaseOp::kSum;
    spec.preMul = true;
    spec.postDiv = false;
    unsigned char b[8] = {};
    storeValue(v.dtype, b, v.scalar);
    spec.preMulScalar = 0;
    memcpy(&spec.preMulScalar, b, dataTypeSize(v.dtype));
  }
  return spec;
}

// Expected result of reducing `xs` (one input per rank): the value and a tolerance, negative for
// an exact comparison. Integers follow the documented rules (wrapping sums, avg truncating the
// wrapped sum toward zero); floats are summed in double and allowed a few ulps per addend, since
// the ring adds in an order that depends on the rank and the chunk.
struct Expected {
  double value;
  double tol;
};
inline Expected reference(const Variant& v, const std::vector<double>& xs) {
  const int n = static_cast<int>(xs.size());
  if (v.red == Red::kMax) return Expected{*std::max_element(xs.begin(), xs.end()), -1};
  if (!isFloatType(v.dtype)) {
    const int bits = v.dtype == ncclInt8 ? 8 : 32;
    auto wrap = [bits](int64_t x) {
      uint64_t m = (uint64_t(1) << bits) - 1, u = uint64_t(x) & m;
      return (u >> (bits - 1)) ? int64_t(u) - int64_t(m) - 1 : int64_t(u);
    };
    int64_t acc = 0;
    for (double x : xs) acc += v.red == Red::kPreMulSum ? wrap(int64_t(v.scalar) * int64_t(x)) : int64_t(x);
    acc = wrap(acc);
    if (v.red == Red::kAvg && n > 1) acc /= n;  // C++ '/' truncates toward zero, as documented
    return Expected{double(acc), -1};
  }
  const double eps = v.dtype == ncclFloat32 ? 1.0 / 16777216.0 : 1.0 / 9007199254740992.0;
  auto rounded = [&](double x) { return v.dtype == ncclFloat32 ? double(float(x)) : x; };
  double mul = 1.0;
  if (v.red == Red::kAvg && n > 1) mul = rounded(1.0 / n);  // the pre-multiply by 1/nranks
  if (v.red == Red::kPreMulSum) mul = rounded(v.scalar);
  if (n == 1 && mul == 1.0) return Expected{xs[0], -1};  // a plain copy: exact
  double sum = 0, mag = 0;
  for (double x : xs) {
    sum += x * mul;
    mag += std::fabs(x * mul);
  }
  return Expected{sum, 4.0 * (n + 1) * eps * mag + 1e-300};
}

// A buffer with guard zones on both sides, so writes past either end are caught. Everything starts
// as a fill byte that no computed value is likely to have.
class Buffer {
 public:
  static constexpr size_t kGuard = 8;  // elements on each side
  Buffer(size_t elems, ncclDataType_t dt, unsigned char fill = 0xA5)
      : dt_(dt), es_(dataTypeSize(dt)), elems_(elems), raw_((elems + 2 * kGuard) * dataTypeSize(dt), fill) {}
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* at(size_t i) { return raw_.data() + (kGuard + i) * es_; }
  double get(size_t i) { return loadValue(dt_, at(i)); }
  void set(size_t i, double x) { storeValue(dt_, at(i), x); }
  size_t elems() const { return elems_; }
  ncclDataType_t dtype() const { return dt_; }
  const std::vector<unsigned char>& raw() const { return raw_; }

 private:
  ncclDataType_t dt_;
  size_t es_, elems_;
  std::vector<unsigned char> raw_;
};

// What a whole buffer must hold after the operation: by default exactly what it held before (the
// guards, inputs that are not outputs, elements an operation must not touch), with the outputs
// set by expect(). Checking the whole buffer catches stray writes as well as wrong results.
class Expectation {
 public:
  Expectation(Buffer* b, std::string name)
      : buf_(b), name_(std::move(name)), want_(b->raw()), tol_(b->elems(), -1), ref_(b->elems(), 0) {}
  void expect(size_t i, const Expected& e) {
    storeValue(buf_->dtype(), want_.data() + (Buffer::kGuard + i) * dataTypeSize(buf_->dtype()), e.value);
    tol_[i] = e.tol;
    ref_[i] = e.value;
  }
  void expectExact(size_t i, double v) { expect(i, Expected{v, -1}); }
  // Copies element `from` of another buffer's current (input) contents, bit for bit.
  void expectCopyOf(size_t i, Buffer* src, size_t from) {
    const size_t es = dataTypeSize(buf_->dtype());
    memcpy(want_.data() + (Buffer::kGuard + i) * es, src->at(from), es);
    tol_[i] = -1;
  }
  // Empty when the buffer matches; otherwise the first few differences.
  std::string check() const {
    const size_t es = dataTypeSize(buf_->dtype());
    const auto& got = buf_->raw();
    std::string d;
    int shown = 0;
    size_t bad = 0;
    for (size_t e = 0; e < got.size() / es; ++e) {
      const long i = long(e) - long(Buffer::kGuard);
      const bool body = i >= 0 && size_t(i) < buf_->elems();
      bool ok;
      if (body && tol_[i] >= 0)
        ok = std::fabs(loadValue(buf_->dtype(), &got[e * es]) - ref_[i]) <= tol_[i];
      else
        ok = memcmp(&got[e * es], &want_[e * es], es) == 0;
      if (ok) continue;
      ++bad;
      if (shown++ < 4)
        d += "\n    " + name_ + (body ? "[" : " guard[") + std::to_string(i) + "] = " +
             std::to_string(loadValue(buf_->dtype(), &got[e * es])) + ", want " +
             std::to_string(loadValue(buf_->dtype(), &want_[e * es])) +
             (body && tol_[i] >= 0 ? " +- " + std::to_string(tol_[i]) : std::string(" exactly"));
    }
    if (bad) d = "\n  " + name_ + ": " + std::to_string(bad) + " wrong element(s):" + d;
    return d;
  }

 private:
  Buffer* buf_;
  std::string name_;
  std::vector<unsigned char> want_;
  std::vector<double> tol_, ref_;
};

// One collective case of a program test: kind, ranks, channels, count, FIFO geometry, datatype and
// op, root, placement.
struct CollCase {
  weft::CollKind kind = weft::CollKind::kAllReduce;
  int nranks = 2;
  int channels = 1;
  size_t count = 0;
  uint32_t slotBytes = 4096;
  uint32_t nSlots = 8;
  Variant v{ncclInt32, Red::kSum};
  int root = 0;
  bool inPlace = false;

  std::string str() const {
    return std::string(collName(kind)) + " nranks=" + std::to_string(nranks) + " channels=" +
           std::to_string(channels) + " count=" + std::to_string(count) + " slotBytes=" + std::to_string(slotBytes) +
           " nSlots=" + std::to_string(nSlots) + " " + v.name() + " root=" + std::to_string(root) +
           (inPlace ? " in-place" : " out-of-place");
  }
};

}  // namespace weft::sim
