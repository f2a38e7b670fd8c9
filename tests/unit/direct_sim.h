// Runs direct-lane Programs (collectives/dda, collectives/lowprec) through the real host executor
// in one thread: n ranks' staging areas and arrival counters live in plain memory (mem_fabric.h),
// and ranks take turns in a seeded random order, each running as far as it can before yielding
// (rank_set.h). Running ahead is exactly what would expose a rank that overwrites staging data a
// peer has not read yet, and a program whose barriers do not match across ranks shows up as a
// stall that this reports, with every stuck cursor and the ranks its barrier waits for.
#pragma once
#include <cstdint>
#include <string>

#include "collectives/registry.h"
#include "comm/comm_algorithms.h"
#include "tests/unit/rank_set.h"

namespace weft::sim {

class DirectSim {
 public:
  explicit DirectSim(int nranks) : ranks_(Geometry{nranks, 4096, 8, 1}) {}
  ncclComm* comm(int r) { return ranks_.comm(r); }

  // Records task (one per rank, same order on every rank) for rank r.
  void add(int r, const Task& t) { ranks_.add(r, t); }

  // Runs every rank's program to the end; "" on success, else what stalled or failed.
  std::string run(uint32_t seed) {
    ranks_.build([](const Task& t, Program* p) { buildProgram(commShape(t.comm), t, p); });
    // Seed 0 would mean round robin: every seed here stands for a random order.
    const Outcome o = ranks_.run(seed == 0 ? 1 : seed);
    if (o.ok) return "";
    return o.deadlock ? "stalled: " + o.error : o.error;
  }

 private:
  RankSet ranks_;
};

}  // namespace weft::sim
