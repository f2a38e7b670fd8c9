// The part of the torch backend that knows nothing of torch: one Weft communicator and the worker
// thread that runs a process group's operations on it, one after another, in the order the
// application issued them. Every rank issues the same operations in the same order, so running
// them in issue order on one thread keeps the ranks in step; a second thread on the same
// communicator would let two operations race for its connections.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "nccl.h"

namespace weft_torch {

// Throws std::runtime_error carrying Weft's own message when r is not ncclSuccess. what names
// the operation ("all_reduce"), so the Python exception says which call failed and why.
void check(ncclResult_t r, ncclComm_t comm, const char* what);

class Engine {
 public:
  // Joins the communicator of nranks ranks named by id (a blocking, collective call), then starts
  // the worker thread.
  Engine(int rank, int nranks, const ncclUniqueId& id);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  ncclComm_t comm() const { return comm_; }
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

  // Queues job to run on the worker thread after every job posted before it; done receives
  // nullptr on success or the exception the job threw (or the engine's failure, when it had
  // already failed). Returns the operation's number within this engine, counting from 1.
  uint64_t post(std::string name, std::function<void()> job, std::function<void(std::exception_ptr)> done);

  // Called when a waiter's deadline passed: records why, revokes the communicator so the job that
  // is running returns, and fails every later job at once with the same message. The first
  // failure wins; later calls keep it.
  void fail(const std::string& why);

  // The failure message, or "" while the engine works.
  std::string failure() const;

  // Operations posted so far (the torch sequence number of the process group).
  uint64_t posted() const;

 private:
  struct Job {
    std::string name;
    std::function<void()> run;
    std::function<void(std::exception_ptr)> done;
  };
  void workerLoop();

  const int rank_;
  const int nranks_;
  ncclComm_t comm_ = nullptr;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> queue_;
  uint64_t posted_ = 0;
  bool stopping_ = false;
  std::string failure_;
  std::thread worker_;
};

}  // namespace weft_torch
