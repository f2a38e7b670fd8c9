// Runs the Programs of all ranks of a communicator through the real host executor, in one thread,
// so that algorithm tests check what the ring, tree and p2p builders emit without shared memory,
// threads or timing: every rank's stepping core (src/host_executor/chain_runner.h) runs over
// in-memory FIFOs of a few slots (mem_fabric.h), and the ranks take turns until all are done or
// none can move, which is a deadlock, reported with every stuck cursor (rank_set.h). What runs is
// the executor's own protocol: its chains, piece sizes, reductions, stamp and size checks.
//
// Around the run, the simulator checks what the executor trusts (program_lint.h): that every piece
// a step reads or writes lies inside the buffer extents the test declared, that sources and
// destinations do not partially overlap, that chains of one rank do not race for a FIFO; and after
// it, that no message is left over, which the real executor would only notice in a later call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/p2p/p2p.h"
#include "collectives/ring/ring.h"
#include "comm/comm_algorithms.h"
#include "tests/unit/program_lint.h"
#include "tests/unit/rank_set.h"
#include "tests/unit/sim_data.h"

namespace weft::sim {

class Simulator {
 public:
  using Builder = RankSet::Builder;

  explicit Simulator(const Geometry& g) : ranks_(g), extents_(g.nranks) {}

  // Lets chains of one rank share a FIFO instead of refusing the program, to see what the
  // executor's chain order makes of it.
  void allowSharedLinks(bool on) { allowShared_ = on; }

  int nranks() const { return ranks_.nranks(); }
  const Geometry& geometry() const { return ranks_.geometry(); }
  ncclComm* comm(int r) { return ranks_.comm(r); }
  Program& program(int r) { return ranks_.program(r); }
  MemFabric& fabric(int r) { return ranks_.fabric(r); }

  // Records an operation of rank r, in issue order (several make a group); its comm, seq and
  // stamp are filled in. sendElems and recvElems are how many elements from sendbuff and recvbuff
  // the algorithm may touch, so that a step reaching outside them is reported instead of
  // corrupting the heap. Reductions need t.spec resolved by the caller (see resolveSpec).
  void add(int r, Task t, size_t sendElems, size_t recvElems) {
    ranks_.add(r, std::move(t));
    extents_[r].push_back(Extent{sendElems, recvElems});
  }

  // Builds every rank's program the way group.cc does, but with a fixed ring channel count (the
  // tests choose it instead of the tuner, to cover every channel count at every size).
  void build(int ringChannels) {
    build([ringChannels](const Task& t, Program* p) {
      if (isRingKind(t.kind))
        buildRingProgram(commShape(t.comm), t, ringChannels, p);
      else
        buildP2pProgram(commShape(t.comm), t, p);
    });
  }
  void build(const Builder& b) { ranks_.build(b); }

  Outcome run() {
    Outcome out;
    const ProgramLint lint(nranks(), geometry().slotBytes, allowShared_);
    for (int r = 0; r < nranks(); ++r) {
      out.error = lint.check(r, ranks_.program(r), ranks_.tasks(r), extents_[r],
                             reinterpret_cast<uintptr_t>(ranks_.comm(r)));
      if (!out.error.empty()) {
        out.ok = false;
        return out;
      }
    }
    out = ranks_.run();
    if (!out.ok) return out;
    // Every message sent must have been received: a leftover means sender and receiver disagree on
    // how much flows over a link.
    for (const auto& [key, fifo] : ranks_.network().fifos())
      if (!fifo->empty()) {
        out.ok = false;
        out.error += std::to_string(fifo->used()) + " message(s) left unreceived on " + RankSet::linkName(key) + "\n";
      }
    return out;
  }

 private:
  RankSet ranks_;
  std::vector<std::vector<Extent>> extents_;
  bool allowShared_ = false;
};

}  // namespace weft::sim
