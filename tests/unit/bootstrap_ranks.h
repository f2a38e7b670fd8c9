// Helpers for the bootstrap tests (bootstrap_test.cc, bootstrap_auth_test.cc): ranks as threads of
// this process, each joining a rendezvous with Bootstrap::create, and an environment that each test
// sets and restores.
#pragma once
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/params.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/unique_id.h"

namespace weft::bootstrap_test {

using Clock = std::chrono::steady_clock;
constexpr int64_t kTimeoutMs = 20000;  // generous: a loaded CI machine must not fail the happy paths

inline double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Sets environment variables for one test and restores them (and the parameter cache) after.
class EnvGuard {
 public:
  void set(const char* name, const std::string& value) {
    remember(name);
    setenv(name, value.c_str(), 1);
    param::reloadForTesting();
  }
  void unset(const char* name) {
    remember(name);
    unsetenv(name);
    param::reloadForTesting();
  }
  ~EnvGuard() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->had)
        setenv(it->name.c_str(), it->value.c_str(), 1);
      else
        unsetenv(it->name.c_str());
    }
    param::reloadForTesting();
  }

 private:
  struct Saved {
    std::string name, value;
    bool had;
  };
  void remember(const char* name) {
    const char* v = getenv(name);
    saved_.push_back({name, v ? v : "", v != nullptr});
  }
  std::vector<Saved> saved_;
};

// The bootstrap tests assume no rendezvous variables leak in from the shell running them.
class BootstrapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.unset("NCCL_COMM_ID");
    env_.unset("NCCL_SOCKET_IFNAME");
    env_.unset("NCCL_SOCKET_FAMILY");
  }
  EnvGuard env_;
};

struct RankResult {
  ncclResult_t rc = ncclInternalError;
  std::string why;
  std::unique_ptr<Bootstrap> bs;
};

struct RankSpec {
  int rank;
  int nranks;
  ncclUniqueId id;
  int delayMs = 0;  // started this much later than the others
};

// Runs one Bootstrap::create per spec, each in its own thread, and waits for all of them.
inline std::vector<RankResult> runRanks(const std::vector<RankSpec>& specs, int64_t timeoutMs = kTimeoutMs) {
  std::vector<RankResult> out(specs.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < specs.size(); i++) {
    threads.emplace_back([&, i] {
      if (specs[i].delayMs > 0) std::this_thread::sleep_for(std::chrono::milliseconds(specs[i].delayMs));
      out[i].rc = Bootstrap::create(specs[i].id, specs[i].rank, specs[i].nranks, timeoutMs, &out[i].bs, &out[i].why);
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

inline std::vector<RankSpec> allRanks(const ncclUniqueId& id, int nranks) {
  std::vector<RankSpec> specs;
  for (int r = 0; r < nranks; r++) specs.push_back({r, nranks, id, 0});
  return specs;
}

// Runs fn(rank) on one thread per rank.
inline void onEveryRank(int nranks, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; r++) threads.emplace_back(fn, r);
  for (auto& t : threads) t.join();
}

inline ncclUniqueId freshId() {
  ncclUniqueId id;
  EXPECT_EQ(bootstrapGetUniqueId(&id), ncclSuccess);
  return id;
}

// Checks that the ranks can allgather (each rank's block holds its number in every int).
inline void expectAllGatherWorks(std::vector<RankResult>& res, size_t intsPerRank) {
  const int n = static_cast<int>(res.size());
  std::vector<std::vector<int>> bufs(n, std::vector<int>(intsPerRank * n, -1));
  std::vector<ncclResult_t> rcs(n, ncclInternalError);
  std::vector<std::string> whys(n);
  onEveryRank(n, [&](int r) {
    for (size_t i = 0; i < intsPerRank; i++) bufs[r][r * intsPerRank + i] = r * 1000003 + static_cast<int>(i);
    rcs[r] = res[r].bs->allGather(bufs[r].data(), intsPerRank * sizeof(int), &whys[r]);
  });
  for (int r = 0; r < n; r++) {
    ASSERT_EQ(rcs[r], ncclSuccess) << whys[r];
    for (int p = 0; p < n; p++)
      for (size_t i = 0; i < intsPerRank; i++)
        ASSERT_EQ(bufs[r][p * intsPerRank + i], p * 1000003 + static_cast<int>(i))
            << "rank " << r << " block " << p << " int " << i;
  }
}

}  // namespace weft::bootstrap_test
