#include "report.h"

#include <unistd.h>

#include <chrono>

namespace netcheck {

void Report::step(const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  step_ = what;
}

std::string Report::currentStep() const {
  std::lock_guard<std::mutex> lock(mu_);
  return step_;
}

void Report::call(ncclResult_t r, const char* what, ncclComm_t comm) {
  if (r == ncclSuccess) return;
  const char* last = ncclGetLastError(comm);
  std::string msg = std::string(what) + " returned " + ncclGetErrorString(r) + " (" + std::to_string(int(r)) +
                    "): " + (last && *last ? last : "(no message)");
  throw CallFailed(r, msg);
}

void Report::pass(const std::string& check) {
  ++passed_;
  std::printf("[rank %d] PASS %s\n", rank_, check.c_str());
  std::fflush(stdout);
}

void Report::fail(const std::string& check, const std::string& detail) {
  ++failed_;
  std::printf("[rank %d] FAIL %s: %s\n", rank_, check.c_str(), detail.c_str());
  std::fflush(stdout);
}

int Report::summary() {
  std::printf("[rank %d] SUMMARY rank %d of %d: %d checks, %d passed, %d failed\n", rank_, rank_, nranks_,
              passed_ + failed_, passed_, failed_);
  std::fflush(stdout);
  return failed_ == 0 ? 0 : 1;
}

Watchdog::Watchdog(const Report& report, double seconds, const char* meaning) {
  thread_ = std::thread([this, &report, seconds, meaning] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!done_.load()) {
      if (std::chrono::steady_clock::now() >= deadline) {
        std::printf("[rank %d] FAIL watchdog: %s within %.0f s; the rank was at: %s\n", report.rank(), meaning, seconds,
                    report.currentStep().c_str());
        std::fflush(stdout);
        _exit(3);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
}

Watchdog::~Watchdog() {
  done_.store(true);
  thread_.join();
}

}  // namespace netcheck
