#include "weft_engine.h"

#include <stdexcept>
#include <utility>

namespace weft_torch {

void check(ncclResult_t r, ncclComm_t comm, const char* what) {
  if (r == ncclSuccess) return;
  std::string msg = std::string("weft: ") + what + " failed: " + ncclGetErrorString(r);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') msg += std::string(" (") + last + ")";
  throw std::runtime_error(msg);
}

Engine::Engine(int rank, int nranks, const ncclUniqueId& id) : rank_(rank), nranks_(nranks) {
  check(ncclCommInitRank(&comm_, nranks, id, rank), nullptr, "ncclCommInitRank");
  worker_ = std::thread([this] { workerLoop(); });
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  // Jobs still queued run (or fail at once after a failure) before the worker ends: a process that
  // drops a group with work in flight still gets the work its peers expect.
  worker_.join();
  // Destroy accepts a revoked communicator too, so one call covers both ends.
  ncclCommDestroy(comm_);
}

uint64_t Engine::post(std::string name, std::function<void()> job, std::function<void(std::exception_ptr)> done) {
  uint64_t seq = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    seq = ++posted_;
    queue_.push_back(Job{std::move(name), std::move(job), std::move(done)});
  }
  wake_.notify_one();
  return seq;
}

void Engine::fail(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failure_.empty()) return;
    failure_ = why;
  }
  // Revoke rather than abort: abort frees the communicator, which the worker may still be inside.
  ncclCommRevoke(comm_, NCCL_REVOKE_DEFAULT);
}

std::string Engine::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

uint64_t Engine::posted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return posted_;
}

void Engine::workerLoop() {
  for (;;) {
    Job job;
    std::string failed;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left
      job = std::move(queue_.front());
      queue_.pop_front();
      failed = failure_;
    }
    std::exception_ptr error;
    if (!failed.empty()) {
      error = std::make_exception_ptr(
          std::runtime_error("weft: " + job.name + " not run: the process group failed earlier: " + failed));
    } else {
      try {
        job.run();
      } catch (...) {
        error = std::current_exception();
      }
    }
    job.done(error);
  }
}

}  // namespace weft_torch
