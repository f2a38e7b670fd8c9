// Every rank of one communicator inside this test, each running the host executor's real stepping
// core (src/host_executor/chain_runner.h) over in-memory links (mem_fabric.h), all stepped from
// this one thread. A rank's pass moves each of its chains as far as its links allow; ranks take
// turns round robin (or, for the direct lane, in a seeded random order, so that a rank runs ahead
// of its peers in many different ways). A bounded FIFO network of deterministic processes gives
// the same results and the same deadlocks under any fair schedule, so one order stands for all of
// the executor's thread interleavings, and a round in which no rank moves is a deadlock, reported
// with every stuck cursor.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/op_stamp.h"
#include "host_executor/chain_runner.h"
#include "program/program.h"
#include "task/task.h"
#include "tests/unit/mem_fabric.h"

namespace weft::sim {

// What init would agree on for every rank of the communicator.
struct Geometry {
  int nranks = 2;
  uint32_t slotBytes = 4096;
  uint32_t nSlots = 8;
  int nChannels = 1;
  bool acceptFirst = false;  // links connect like aws-ofi-nccl's (MemHandshake in mem_fabric.h)
};

struct Outcome {
  bool ok = true;
  bool deadlock = false;
  std::string error;      // why it failed; for a deadlock, a dump of every stuck cursor
  uint64_t rounds = 0;    // turns of all ranks
  uint64_t messages = 0;  // pieces that travelled through FIFOs
};

class RankSet {
 public:
  using Builder = std::function<void(const Task&, Program*)>;
  using Runner = ChainRunner<MemFabric>;

  explicit RankSet(const Geometry& g) : geo_(g), tasks_(g.nranks), progs_(g.nranks) {
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
    net_ = std::make_unique<MemNetwork>(g.nranks, g.nSlots, g.slotBytes, comms_[0]->direct.dataBytes(), g.acceptFirst);
    for (int r = 0; r < g.nranks; ++r) fabrics_.push_back(std::make_unique<MemFabric>(net_.get(), r));
    for (int r = 0; r < g.nranks; ++r) runners_.push_back(std::make_unique<Runner>(*fabrics_[r]));
  }

  int nranks() const { return geo_.nranks; }
  const Geometry& geometry() const { return geo_; }
  ncclComm* comm(int r) { return comms_[r].get(); }
  Program& program(int r) { return progs_[r]; }
  const std::vector<Task>& tasks(int r) const { return tasks_[r]; }
  const MemNetwork& network() const { return *net_; }
  MemFabric& fabric(int r) { return *fabrics_[r]; }

  // Records an operation of rank r, in issue order (several make a group), numbered and stamped
  // as the library does (group.cc), so that the executor's in-band stamp checks run too.
  void add(int r, Task t) {
    t.comm = comms_[r].get();
    t.seq = tasks_[r].size();
    assignOpNumber(&t);
    t.stamp = makeStamp(t);
    tasks_[r].push_back(std::move(t));
  }
  // Builds every rank's program from its tasks, as group.cc does.
  void build(const Builder& b) {
    for (int r = 0; r < geo_.nranks; ++r) {
      progs_[r].clear();
      for (size_t i = 0; i < tasks_[r].size(); ++i) {
        progs_[r].startTask(uint32_t(i), reinterpret_cast<uintptr_t>(comms_[r].get()));
        b(tasks_[r][i], &progs_[r]);
      }
    }
  }

  // Runs every rank to the end. seed 0: round robin; otherwise a random rank at a time.
  Outcome run(uint32_t seed = 0) {
    Outcome out;
    for (int r = 0; r < geo_.nranks; ++r) runners_[r]->start(progs_[r], tasks_[r]);
    std::mt19937 rng(seed);
    auto turn = [&](int r) {
      if (runners_[r]->finished()) return false;
      return runners_[r]->pass();
    };
    while (!allFinished()) {
      const uint64_t events = net_->handshakeEvents();
      bool progress = false;
      if (seed != 0) progress = turn(int(rng() % uint32_t(geo_.nranks)));
      if (!progress)
        for (int r = 0; r < geo_.nranks; ++r) progress |= turn(r);
      progress |= net_->handshakeEvents() != events;  // a handshake moved on
      ++out.rounds;
      out.messages = net_->messages();
      for (int r = 0; r < geo_.nranks; ++r)
        if (runners_[r]->error() != ncclSuccess) {
          out.ok = false;
          out.error = runners_[r]->errorText();
          return out;
        }
      if (!progress) {
        out.ok = false;
        out.deadlock = true;
        out.error = "DEADLOCK after " + std::to_string(out.rounds) + " rounds; stuck cursors:\n" + dump();
        return out;
      }
    }
    return out;
  }

  // Every stuck cursor: rank, chain, operation, sequence, step, and what it waits for; then every
  // FIFO that holds messages.
  std::string dump() const {
    std::string d;
    for (int r = 0; r < geo_.nranks; ++r)
      for (const Runner::Cur& c : runners_[r]->cursors())
        if (!c.finished) d += "  " + describe(r, c) + "\n";
    for (const auto& [key, f] : net_->fifos())
      if (!f->empty())
        d += "  fifo " + linkName(key) + " holds " + std::to_string(f->used()) + "/" + std::to_string(f->slots()) +
             " messages\n";
    return d;
  }

  static std::string linkName(const MemNetwork::LinkKey& k) {
    return std::string(laneName(static_cast<Lane>(std::get<0>(k)))) + " ch " + std::to_string(std::get<1>(k)) + " " +
           std::to_string(std::get<2>(k)) + "->" + std::to_string(std::get<3>(k));
  }

 private:
  bool allFinished() const {
    return std::all_of(runners_.begin(), runners_.end(), [](const auto& x) { return x->finished(); });
  }

  std::string describe(int r, const Runner::Cur& c) const {
    const Runner& run = *runners_[r];
    const Sequence& s = run.sequenceOf(c);
    const Task& t = run.taskOf(c);
    std::string send = std::to_string(s.sendPeer), recv = std::to_string(s.recvPeer);
    if (s.multiPeer()) {
      send = recv = "";
      for (int k = 0; k < s.nSendPeers; ++k) send += (k ? "," : "") + std::to_string(s.sendPeers[k]);
      for (int k = 0; k < s.nRecvPeers; ++k) recv += (k ? "," : "") + std::to_string(s.recvPeers[k]);
    }
    std::string d = "rank " + std::to_string(r) + " [" + laneName(s.lane) + " ch " + std::to_string(s.channel) +
                    " send->" + send + " recv<-" + recv + "] " + collName(t.kind) + " #" + std::to_string(t.seq) +
                    " sequence " + std::to_string(run.sequenceIndexOf(c));
    if (c.step >= s.nSteps) return d;
    const Step& st = progs_[r].steps[s.firstStep + c.step];
    d += " step " + std::to_string(c.step) + "/" + std::to_string(s.nSteps) + " " + stepName(st.op) + " (" +
         std::to_string(c.done) + " of " + std::to_string(st.count) + " elements done, src+" +
         std::to_string(st.srcOffset) + " dst+" + std::to_string(st.dstOffset) + ")";
    // What the executor itself would say about the wait (the text of its timeout errors).
    std::vector<int> peers;
    std::string what;
    const WaitPoint w = run.waitOf(c, &peers, &what);
    if (s.lane == Lane::kDirect) return d + " waiting " + what;
    for (int i = 0; i < kMaxSeqPeers; ++i)
      for (const MemLink* l : {c.sends[i], c.recvs[i]})
        if (l != nullptr && !l->connected() && l->peer() == w.peer)
          return d + " waiting for its link with rank " + std::to_string(w.peer) + " to connect";
    return d +
           (w.receiving ? " waiting to receive (FIFO empty) from rank "
                        : " waiting for room to send (FIFO full) to rank ") +
           std::to_string(w.peer);
  }

  Geometry geo_;
  std::vector<std::unique_ptr<ncclComm>> comms_;
  std::vector<std::vector<Task>> tasks_;
  std::vector<Program> progs_;
  std::unique_ptr<MemNetwork> net_;
  std::vector<std::unique_ptr<MemFabric>> fabrics_;
  std::vector<std::unique_ptr<Runner>> runners_;
};

}  // namespace weft::sim
