// How net_check reports: one line per check on stdout, prefixed with the rank, and a summary.
// A failed call ends the run (the ranks may no longer agree on what comes next, so going on could
// only hang); a wrong result is recorded and the run goes on, since every rank still made the same
// calls.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "nccl.h"

namespace netcheck {

// Thrown when a library call fails; main() aborts the communicator and exits non-zero.
struct CallFailed : std::runtime_error {
  ncclResult_t result;
  CallFailed(ncclResult_t r, const std::string& what) : std::runtime_error(what), result(r) {}
};

class Report {
 public:
  Report(int rank, int nranks) : rank_(rank), nranks_(nranks) {}
  int rank() const { return rank_; }

  // Names what the rank does now; the watchdog prints it if the rank stops moving.
  void step(const std::string& what);
  std::string currentStep() const;

  // Throws CallFailed with the code and ncclGetLastError(comm) unless r is ncclSuccess.
  void call(ncclResult_t r, const char* what, ncclComm_t comm);

  void pass(const std::string& check);
  void fail(const std::string& check, const std::string& detail);
  // Prints the summary line; returns the process exit code (0 only when every check passed).
  int summary();
  int failures() const { return failed_; }

 private:
  int rank_;
  int nranks_;
  int passed_ = 0;
  int failed_ = 0;
  mutable std::mutex mu_;
  std::string step_ = "starting";
};

// Ends the process with exit code 3 and a message naming the rank and its current step when the
// deadline passes: a hung call cannot be interrupted, and the caller must learn where it hung.
class Watchdog {
 public:
  Watchdog(const Report& report, double seconds, const char* meaning);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace netcheck
