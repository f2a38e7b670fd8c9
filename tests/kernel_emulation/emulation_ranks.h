// What the kernel-emulation tests share: a scope that installs the emulated GPU (and a test's
// settings) from before the communicators exist until after, and ranks as threads, each with its
// own communicator on that GPU.
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/params.h"
#include "emulated_runtime.h"
#include "nccl.h"
#include "runtime/device_runtime.h"

namespace weft::testing {

using Env = std::vector<std::pair<std::string, std::string>>;

class Scope {
 public:
  explicit Scope(Env vars) : vars_(std::move(vars)) {
    for (auto& [k, v] : vars_) setenv(k.c_str(), v.c_str(), 1);
    param::reloadForTesting();
    previous_ = dev::replaceRuntimeForTesting(&emulatedRuntime());
  }
  ~Scope() {
    dev::replaceRuntimeForTesting(previous_);
    for (auto& [k, v] : vars_) unsetenv(k.c_str());
    param::reloadForTesting();
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Env vars_;
  dev::Runtime* previous_ = nullptr;
};

// How the ranks of runRanks share memory: by address, as threads of one process do, or through
// IPC handles, as GPU ranks of different processes do (each rank gets an address space of its own).
enum class Spaces { kOne, kPerRank };

// Runs body on n ranks (threads), each with its own communicator on the emulated GPU, which is
// destroyed afterwards unless the body ends it itself (destroy false).
inline void runRanks(int n, const std::function<void(int, ncclComm_t)>& body, Spaces spaces = Spaces::kOne,
                     bool destroy = true) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<std::thread> ranks;
  for (int r = 0; r < n; ++r)
    ranks.emplace_back([&, r] {
      // Far from any pid (those stay below 2^22).
      if (spaces == Spaces::kPerRank) setEmulatedAddressSpace((int64_t(1) << 40) + r);
      struct Reset {
        ~Reset() { setEmulatedAddressSpace(0); }
      } reset;
      ncclComm_t comm = nullptr;
      ASSERT_EQ(ncclCommInitRank(&comm, n, id, r), ncclSuccess) << ncclGetLastError(nullptr);
      int device = -1;
      EXPECT_EQ(ncclCommCuDevice(comm, &device), ncclSuccess);
      EXPECT_EQ(device, 0) << "rank " << r << " is not on the (emulated) GPU";
      body(r, comm);
      if (destroy) {
        EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
      }
    });
  for (std::thread& t : ranks) t.join();
}

inline void expectNoAsyncError(ncclComm_t comm) {
  ncclResult_t async = ncclInProgress;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess) << ncclGetLastError(comm);
}

}  // namespace weft::testing
