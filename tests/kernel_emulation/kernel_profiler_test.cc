// The profiler plugin's KernelCh and KernelPhase events on GPU communicators
// (gpu_executor/kernel_profile.h), with the emulated kernel's real times. A plugin is loaded once per process, at the
// first communicator, so each case runs a job in a child process (this binary again, running the disabled
// KernelProfilerJob.Run) with NCCL_PROFILER_PLUGIN set to the example plugin (tests/profiler), and reads the plugin's
// log here.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "base/clock.h"
#include "emulation_ranks.h"
#include "nccl.h"

namespace weft {
namespace {

using testing::Env;
using testing::expectNoAsyncError;
using testing::runRanks;
using testing::Scope;

constexpr size_t kRingCount = 300000;  // two ring channels, many pieces each
constexpr size_t kDdaCount = 40001;    // 3 blocks run the one DDA sequence (WEFT_DIRECT_BLOCKS=3)

void checkSum(const std::vector<float>& got, int nranks, const char* what) {
  size_t bad = 0;
  const float want = static_cast<float>(nranks) * static_cast<float>(nranks + 1) / 2;  // 1 + 2 + ... + nranks
  for (float v : got) bad += v != want;
  EXPECT_EQ(bad, 0u) << what;
}

// The job the parent profiles, on 2 ranks of the emulated GPU. In order, per rank: two ring
// AllReduces on 2 channels, a Send/Recv pair, AllGather, ReduceScatter, Broadcast, Reduce and
// AlltoAll, then on new communicators three DDA AllReduces run
// by 3 blocks: a staged one, one whose registered input the peer reads in place (which ends with a
// closing barrier), and one captured into a graph (which gets no kernel events).
TEST(DISABLED_KernelProfilerJob, Run) {
  ASSERT_NE(getenv("EXAMPLE_PROFILER_LOG"), nullptr) << "run by KernelProfiler.* only";
  {
    Scope s(Env{{"NCCL_ALGO", "Ring"}, {"NCCL_MIN_NCHANNELS", "2"}, {"NCCL_MAX_NCHANNELS", "2"}});
    runRanks(2, [](int r, ncclComm_t comm) {
      for (int call = 0; call < 2; ++call) {
        std::vector<float> buf(kRingCount, static_cast<float>(r + 1));
        ASSERT_EQ(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
        checkSum(buf, 2, "ring AllReduce");
      }
      std::vector<float> out(1000, static_cast<float>(r + 1)), in(1000, 0.f);
      ASSERT_EQ(ncclGroupStart(), ncclSuccess);
      ASSERT_EQ(ncclSend(out.data(), out.size(), ncclFloat32, 1 - r, comm, nullptr), ncclSuccess);
      ASSERT_EQ(ncclRecv(in.data(), in.size(), ncclFloat32, 1 - r, comm, nullptr), ncclSuccess);
      ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
      EXPECT_EQ(in[999], static_cast<float>(2 - r));
      // Every other collective once, each its own launch.
      std::vector<float> part(4000, static_cast<float>(r + 1)), all(8000, 0.f), all2(8000, 0.f);
      ASSERT_EQ(ncclAllGather(part.data(), all.data(), part.size(), ncclFloat32, comm, nullptr), ncclSuccess);
      EXPECT_EQ(all[0] + all[7999], 3.f);
      ASSERT_EQ(ncclReduceScatter(all.data(), part.data(), part.size(), ncclFloat32, ncclSum, comm, nullptr),
                ncclSuccess);
      EXPECT_EQ(part[0], static_cast<float>(2 * (r + 1)));
      ASSERT_EQ(ncclBroadcast(part.data(), part.data(), part.size(), ncclFloat32, 0, comm, nullptr), ncclSuccess);
      EXPECT_EQ(part[0], 2.f);
      ASSERT_EQ(ncclReduce(part.data(), all.data(), part.size(), ncclFloat32, ncclSum, 0, comm, nullptr), ncclSuccess);
      if (r == 0) {
        EXPECT_EQ(all[0], 4.f);
      }
      ASSERT_EQ(ncclAlltoAll(all.data(), all2.data(), part.size(), ncclFloat32, comm, nullptr), ncclSuccess);
      expectNoAsyncError(comm);
    });
  }
  Scope s(Env{{"NCCL_ALGO", "DDAFlat"}, {"RCCL_DDA_SENDBUF_BYTES", "262144"}, {"WEFT_DIRECT_BLOCKS", "3"}});
  runRanks(2, [](int r, ncclComm_t comm) {
    std::vector<float> buf(kDdaCount, static_cast<float>(r + 1));
    ASSERT_EQ(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
    checkSum(buf, 2, "DDA AllReduce");
    EXPECT_EQ(testing::lastLaunchBlocks(), 3);
    std::vector<float> in(kDdaCount, static_cast<float>(r + 1)), out(kDdaCount);
    void* handle = nullptr;
    ASSERT_EQ(ncclCommRegister(comm, in.data(), in.size() * sizeof(float), &handle), ncclSuccess);
    ASSERT_EQ(ncclAllReduce(in.data(), out.data(), in.size(), ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
    checkSum(out, 2, "DDA AllReduce of registered inputs");
    ASSERT_EQ(ncclCommDeregister(comm, handle), ncclSuccess);
    testing::setEmulatedCapture(true);
    std::fill(buf.begin(), buf.end(), static_cast<float>(r + 1));
    ASSERT_EQ(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
    checkSum(buf, 2, "captured DDA AllReduce");
    testing::setEmulatedCapture(false);
    expectNoAsyncError(comm);
  });
}

// One line of the example plugin's log.
struct Line {
  std::string verb;  // start, state, stop, init, finalize
  int id = 0;
  std::map<std::string, std::string> kv;  // key=value words
  int state = 0;
  uint64_t num(const std::string& k) const {
    auto it = kv.find(k);
    return it == kv.end() ? ~uint64_t(0) : std::stoull(it->second);
  }
};

std::vector<Line> readLog(const std::string& path) {
  std::vector<Line> lines;
  std::ifstream in(path);
  std::string text;
  while (std::getline(in, text)) {
    std::istringstream words(text);
    Line l;
    words >> l.verb >> l.id;
    if (l.verb == "state") words >> l.state;
    std::string w;
    while (words >> w) {
      const size_t eq = w.find('=');
      if (eq != std::string::npos) l.kv[w.substr(0, eq)] = w.substr(eq + 1);
    }
    lines.push_back(l);
  }
  return lines;
}

// Runs the job with the example plugin of ABI `abi` and activation mask `mask`; returns its log.
std::vector<Line> runJob(int abi, int mask, int64_t* startNs, int64_t* endNs) {
  const std::string dir = ::testing::TempDir() + "kernel_profiler_" + std::to_string(getpid()) + "_v" +
                          std::to_string(abi) + "_" + std::to_string(mask);
  const std::string plugin = abi == 7   ? WEFT_EXAMPLE_PROFILER_V7
                             : abi == 4 ? WEFT_EXAMPLE_PROFILER_V4
                                        : WEFT_EXAMPLE_PROFILER_V3;
  std::vector<std::string> env = {"NCCL_PROFILER_PLUGIN=" + plugin, "EXAMPLE_PROFILER_LOG=" + dir,
                                  "EXAMPLE_PROFILER_MASK=" + std::to_string(mask)};
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string self = "/proc/self/exe", all = "--gtest_also_run_disabled_tests",
              filter = "--gtest_filter=DISABLED_KernelProfilerJob.Run";
  char* argv[] = {self.data(), all.data(), filter.data(), nullptr};
  *startNs = nowNs();
  pid_t pid = 0;
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, envp.data()) != 0) {
    ADD_FAILURE() << "cannot start the job";
    return {};
  }
  int status = 0;
  waitpid(pid, &status, 0);
  *endNs = nowNs();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the profiled job failed (status " << status << ")";
  const std::string log = dir + "." + std::to_string(pid);
  std::vector<Line> lines = readLog(log);
  std::remove(log.c_str());
  return lines;
}

// What the log says about one operation event and its kernel events.
struct Op {
  std::string func;
  int ctx = 0;
  int group = 0;  // its Group event: the operations of one group run in one launch
  uint64_t channels = 0;
  std::vector<int> kernel;     // ids of its KernelCh events, in start order
  std::vector<size_t> phases;  // per kernel event, how many KernelPhase events it has
};
struct Kernel {
  uint64_t channel = 0, startTimer = 0, stopTimer = 0;
  int states = 0;
  bool stopped = false;
  std::vector<int> phases;  // its KernelPhase events, in start order
};
struct Phase {
  uint64_t channel = 0, phase = 0, startTimer = 0, stopTimer = 0;
  std::string name;
  int states = 0;
  bool stopped = false;
};

// Checks the log's KernelCh events and returns the operations in start order.
std::vector<Op> kernelEvents(const std::vector<Line>& log, int abi, int64_t startNs, int64_t endNs) {
  std::map<int, Op> ops;
  std::vector<int> order;
  std::map<int, Kernel> kernels;
  std::map<int, Phase> phases;
  for (const Line& l : log) {
    if (l.verb == "start" && (l.num("type") == 2 || l.num("type") == 4)) {
      // v5+ name the group beside their API parent; v3 and v4 hang operations under the group.
      const uint64_t group = l.kv.count("group") ? l.num("group") : l.num("parent");
      ops[l.id] =
          Op{l.kv.at("func"), static_cast<int>(l.num("ctx")), static_cast<int>(group), l.num("channels"), {}, {}};
      order.push_back(l.id);
    } else if (l.verb == "start" && l.num("type") == 64) {
      const int parent = static_cast<int>(l.num("parent"));
      EXPECT_TRUE(ops.count(parent)) << "KernelCh " << l.id << " has parent " << parent << ", not an operation";
      if (!ops.count(parent)) continue;
      ops[parent].kernel.push_back(l.id);
      kernels[l.id].channel = l.num("channel");
      if (abi >= 4) kernels[l.id].startTimer = l.num("timer");
    } else if (l.verb == "start" && l.num("type") == (1u << 15)) {
      const int parent = static_cast<int>(l.num("parent"));
      EXPECT_TRUE(kernels.count(parent)) << "KernelPhase " << l.id << " has parent " << parent << ", not a KernelCh";
      if (!kernels.count(parent)) continue;
      EXPECT_FALSE(kernels[parent].stopped) << "KernelPhase " << l.id << " started after its KernelCh stopped";
      kernels[parent].phases.push_back(l.id);
      phases[l.id] = Phase{l.num("channel"), l.num("phase"), l.num("timer"), 0, l.kv.at("name"), 0, false};
    } else if (l.verb == "state" && phases.count(l.id)) {
      EXPECT_EQ(l.state, 31) << "KernelPhase " << l.id << " gets only KernelPhaseStop";
      phases[l.id].stopTimer = l.num("timer");
      phases[l.id].states++;
    } else if (l.verb == "stop" && phases.count(l.id)) {
      phases[l.id].stopped = true;
    } else if (l.verb == "state" && kernels.count(l.id)) {
      EXPECT_EQ(l.state, 22) << "KernelCh " << l.id << " gets only KernelChStop";
      EXPECT_FALSE(kernels[l.id].stopped) << "a state after the stop of KernelCh " << l.id;
      kernels[l.id].stopTimer = l.num("timer");
      kernels[l.id].states++;
    } else if (l.verb == "stop" && kernels.count(l.id)) {
      EXPECT_FALSE(kernels[l.id].stopped) << "KernelCh " << l.id << " stopped twice";
      kernels[l.id].stopped = true;
    }
  }
  std::vector<Op> out;
  for (int id : order) {
    for (int k : ops[id].kernel) ops[id].phases.push_back(kernels[k].phases.size());
    out.push_back(ops[id]);
  }
  for (auto& [id, k] : kernels) {
    EXPECT_TRUE(k.stopped) << "KernelCh " << id << " never stopped";
    if (abi < 4) {
      EXPECT_EQ(k.states, 0) << "v3 has no KernelCh states";
      continue;
    }
    EXPECT_EQ(k.states, 1) << "KernelCh " << id;
    // The emulated kernel's clock is the host's monotonic clock, as the job's start and end are.
    EXPECT_GE(static_cast<int64_t>(k.startTimer), startNs) << "KernelCh " << id;
    EXPECT_LE(k.startTimer, k.stopTimer) << "KernelCh " << id;
    EXPECT_LE(static_cast<int64_t>(k.stopTimer), endNs) << "KernelCh " << id;
    // Phases tile the channel's time: each begins where the one before ended.
    static const char* const kNames[3] = {"initial_sync", "compute", "final_sync"};
    uint64_t at = k.startTimer;
    for (size_t i = 0; i < k.phases.size(); ++i) {
      const Phase& p = phases[k.phases[i]];
      EXPECT_EQ(p.phase, i) << "KernelPhase " << k.phases[i];
      EXPECT_EQ(p.name, i < 3 ? kNames[i] : "?") << "KernelPhase " << k.phases[i];
      EXPECT_EQ(p.channel, k.channel) << "KernelPhase " << k.phases[i];
      EXPECT_EQ(p.startTimer, at) << "KernelPhase " << k.phases[i];
      EXPECT_LE(p.startTimer, p.stopTimer) << "KernelPhase " << k.phases[i];
      EXPECT_EQ(p.states, 1) << "KernelPhase " << k.phases[i];
      EXPECT_TRUE(p.stopped) << "KernelPhase " << k.phases[i];
      at = p.stopTimer;
    }
    if (!k.phases.empty()) {
      EXPECT_EQ(at, k.stopTimer) << "the last phase of KernelCh " << id << " ends with it";
    }
  }
  // Launches of one communicator follow each other on its stream: an operation's work on a
  // channel ends before a later launch's begins there.
  for (size_t a = 0; abi >= 4 && a < out.size(); ++a)
    for (size_t b = a + 1; b < out.size(); ++b) {
      if (out[a].ctx != out[b].ctx || out[a].group == out[b].group) continue;
      for (int ka : out[a].kernel)
        for (int kb : out[b].kernel) {
          if (kernels[ka].channel != kernels[kb].channel) continue;
          EXPECT_LE(kernels[ka].stopTimer, kernels[kb].startTimer)
              << out[a].func << " then " << out[b].func << " on channel " << kernels[ka].channel;
        }
    }
  for (const Op& op : out)
    for (int k : op.kernel) EXPECT_LT(kernels[k].channel, op.channels) << op.func << " has " << op.channels;
  return out;
}

// Per rank: AllReduce, AllReduce, Send, Recv and the five other collectives on the ring
// communicators, then three DDA AllReduces (staged, registered, captured). withPhases: the plugin
// gets KernelPhase events (v7).
void expectJobEvents(const std::vector<Op>& ops, bool withPhases) {
  ASSERT_EQ(ops.size(), 24u);
  std::map<int, std::vector<const Op*>> byCtx;
  for (const Op& op : ops) byCtx[op.ctx].push_back(&op);
  ASSERT_EQ(byCtx.size(), 4u) << "two communicators per rank";
  int ring = 0, dda = 0;
  for (auto& [ctx, list] : byCtx) {
    if (list.size() == 9) {
      ++ring;
      for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(list[i]->func, "AllReduce");
        EXPECT_EQ(list[i]->channels, 2u);
        EXPECT_EQ(list[i]->kernel.size(), 2u) << "one event per ring channel";
        EXPECT_EQ(list[i]->phases, std::vector<size_t>(list[i]->kernel.size(), 0)) << "ring kernels have no phases";
      }
      EXPECT_EQ(list[2]->func, "Send");
      EXPECT_EQ(list[3]->func, "Recv");
      const char* const others[] = {"AllGather", "ReduceScatter", "Broadcast", "Reduce", "AlltoAll"};
      for (int i = 0; i < 5; ++i) EXPECT_EQ(list[4 + i]->func, others[i]);
      // One event per channel the operation's work ran on (channels < its nChannels is checked above).
      for (int i = 2; i < 9; ++i) {
        EXPECT_GE(list[i]->kernel.size(), 1u) << list[i]->func;
        EXPECT_LE(list[i]->kernel.size(), list[i]->channels) << list[i]->func;
      }
    } else {
      ASSERT_EQ(list.size(), 3u);
      ++dda;
      EXPECT_EQ(list[0]->kernel.size(), 1u) << "the 3 blocks of the one DDA channel make one event";
      EXPECT_EQ(list[1]->kernel.size(), 1u);
      EXPECT_EQ(list[2]->kernel.size(), 0u) << "a captured launch has no kernel events";
      // Staged: the ranks meet, then fold. Read in place: a closing barrier holds every rank until
      // no peer still reads its input.
      EXPECT_EQ(list[0]->phases, std::vector<size_t>{withPhases ? 2u : 0u});
      EXPECT_EQ(list[1]->phases, std::vector<size_t>{withPhases ? 3u : 0u});
    }
  }
  EXPECT_EQ(ring, 2);
  EXPECT_EQ(dda, 2);
}

TEST(KernelProfiler, KernelEventsCarryTheKernelsClock) {
  int64_t start = 0, end = 0;
  // Only KernelPhase asked for: KernelCh and the operation events come as their parents.
  std::vector<Line> log = runJob(7, 1 << 15, &start, &end);
  expectJobEvents(kernelEvents(log, 7, start, end), true);
  log = runJob(7, 1 << 6, &start, &end);
  expectJobEvents(kernelEvents(log, 7, start, end), false);
  log = runJob(4, 0xff, &start, &end);
  expectJobEvents(kernelEvents(log, 4, start, end), false);
}

TEST(KernelProfiler, VersionThreeGetsChannelsWithoutClock) {
  int64_t start = 0, end = 0;
  std::vector<Line> log = runJob(3, 1 << 6, &start, &end);
  expectJobEvents(kernelEvents(log, 3, start, end), false);
}

TEST(KernelProfiler, NoKernelEventsUnlessAsked) {
  int64_t start = 0, end = 0;
  const std::vector<Line> log = runJob(7, 1 << 1, &start, &end);  // collectives only
  const std::vector<Op> ops = kernelEvents(log, 7, start, end);
  EXPECT_EQ(ops.size(), 20u) << "the collectives";
  for (const Op& op : ops) EXPECT_TRUE(op.kernel.empty()) << op.func;
}

}  // namespace
}  // namespace weft
