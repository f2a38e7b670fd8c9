// A single-threaded interpreter for direct-lane Programs (collectives/dda, collectives/lowprec):
// n ranks' staging areas and arrival counters live in plain memory, and ranks take turns in a
// seeded random order, each running as far as it can before yielding. Running ahead is exactly
// what would expose a rank that overwrites staging data a peer has not read yet, and a program
// whose barriers do not match across ranks shows up as a stall that this reports.
#pragma once
#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "collectives/registry.h"
#include "comm/comm_algorithms.h"
#include "comm/comm.h"
#include "host_executor/direct_step.h"
#include "program/program.h"

namespace weft::sim {

class DirectSim {
 public:
  explicit DirectSim(int nranks) : n_(nranks), arrived_(new std::atomic<uint64_t>[nranks]), progs_(nranks) {
    for (int r = 0; r < n_; ++r) {
      auto c = std::make_unique<ncclComm>();
      c->rank = r;
      c->nranks = n_;
      comms_.push_back(std::move(c));
      arrived_[r].store(0);
    }
    const size_t bytes = comms_[0]->direct.dataBytes();
    for (int r = 0; r < n_; ++r) staging_.emplace_back(bytes / 8 + 1, 0xdeadbeefdeadbeefull);
    for (int r = 0; r < n_; ++r) {
      data_.push_back(reinterpret_cast<unsigned char*>(staging_[r].data()));
      arrivedPtrs_.push_back(&arrived_[r]);
    }
  }
  ncclComm* comm(int r) { return comms_[r].get(); }

  // Builds task (one per rank, same order on every rank) into each rank's program.
  void add(int r, const Task& t) {
    tasks_.push_back(std::make_unique<Task>(t));
    tasks_.back()->comm = comms_[r].get();
    buildProgram(commShape(comms_[r].get()), *tasks_.back(), &progs_[r]);
  }

  // Runs every rank's program to the end; "" on success, else what stalled.
  std::string run(uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<size_t> pos(n_, 0), phase(n_, 0);
    std::vector<std::vector<const Step*>> steps(n_);
    std::vector<std::vector<const Task*>> owners(n_);
    for (int r = 0; r < n_; ++r)
      for (const Sequence& s : progs_[r].sequences)
        for (uint32_t i = 0; i < s.nSteps; ++i) {
          steps[r].push_back(&progs_[r].steps[s.firstStep + i]);
          owners[r].push_back(s.task);
        }
    auto advance = [&](int r) {
      const DirectView v{r, n_, data_.data(), arrivedPtrs_.data()};
      bool moved = false;
      while (pos[r] < steps[r].size()) {
        const Step& st = *steps[r][pos[r]];
        if (st.op == StepOp::kDirectBarrier) {
          if (phase[r] == 0) {
            directArrive(v);
            phase[r] = 1;
            moved = true;
          }
          if (!directAllArrived(v)) break;
          phase[r] = 0;
        } else {
          runDirectData(*owners[r][pos[r]], st, v);
        }
        ++pos[r];
        moved = true;
      }
      return moved;
    };
    for (;;) {
      bool done = true;
      for (int q = 0; q < n_; ++q) done &= pos[q] == steps[q].size();
      if (done) return "";
      if (advance(static_cast<int>(rng() % uint32_t(n_)))) continue;
      bool any = false;
      for (int q = 0; q < n_; ++q) any |= advance(q);
      if (!any) break;
    }
    std::string why = "stalled:";
    for (int q = 0; q < n_; ++q)
      why += " rank " + std::to_string(q) + " at step " + std::to_string(pos[q]) + "/" + std::to_string(steps[q].size());
    return why;
  }

 private:
  int n_;
  std::vector<std::unique_ptr<ncclComm>> comms_;
  std::vector<std::vector<uint64_t>> staging_;
  std::vector<unsigned char*> data_;
  std::unique_ptr<std::atomic<uint64_t>[]> arrived_;
  std::vector<std::atomic<uint64_t>*> arrivedPtrs_;
  std::vector<std::unique_ptr<Task>> tasks_;
  std::vector<Program> progs_;
};

}  // namespace weft::sim
