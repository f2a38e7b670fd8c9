// Weft's collectives on a GPU: device buffers, the user's stream, several ranks sharing device 0
// (a Weft feature; NCCL refuses duplicate GPUs). Built twice like the host-mode suites: ranks as
// threads of one process (weft_gpu_threads_tests) and ranks as forked processes
// (weft_gpu_procs_tests). Every result is compared with a value computed on the host
// (tests/collectives/reference.h: exact for integers, tolerances for floating types, inputs
// chosen so that sums are exact where possible).
//
// Without a usable GPU (no device, no driver, or WEFT_DEVICE=host) every test skips and says why;
// with WEFT_GPU_TEST_REQUIRE=1 it fails instead (tests/gpu/run.sh sets it on a GPU machine).
// NOT YET RUN ON A GPU: written and compiled on a machine without one, where every test skips.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "coll_cases.h"
#include "dtypes.h"
#include "gpu_case.h"
#include "gpu_test_api.h"
#include "harness.h"
#include "lowprec_check.h"
#include "reference.h"

namespace weft_test {
namespace {

// ---------------------------------------------------------------------------------------------
// Is there a GPU to test on? The answer comes from a forked child: once a process has touched
// the CUDA runtime it may not fork ranks that use it, and the procs tier forks its ranks from
// this process.

struct Probe {
  std::string whyNot;  // empty when the GPU cases can run
  int devices = 0;
};

Probe runProbe() {
  Probe p;
  const char* dev = getenv("WEFT_DEVICE");
  if (dev != nullptr && strcmp(dev, "host") == 0) {
    p.whyNot = "WEFT_DEVICE=host forces host mode (unset it or set auto for the GPU cases)";
    return p;
  }
  struct Answer {
    int err, count;
    char text[240];
  } a{};
  int fds[2];
  if (pipe(fds) != 0) {
    p.whyNot = "pipe() failed, cannot probe for a GPU";
    return p;
  }
  fflush(stdout);
  fflush(stderr);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    Answer mine{};
    const gpuError_t e = gpuGetDeviceCount(&mine.count);  // count is not written on error
    mine.err = static_cast<int>(e);
    snprintf(mine.text, sizeof(mine.text), "%s", gpuErrorText(e).c_str());
    (void)!write(fds[1], &mine, sizeof(mine));
    _exit(0);
  }
  close(fds[1]);
  const bool got = pid > 0 && read(fds[0], &a, sizeof(a)) == static_cast<ssize_t>(sizeof(a));
  close(fds[0]);
  if (pid > 0) waitpid(pid, nullptr, 0);
  if (!got) {
    p.whyNot = "the GPU probe process died before answering";
  } else if (a.err != static_cast<int>(gpuSuccess)) {
    p.whyNot = std::string("no usable GPU: " WEFT_GPU_VENDOR " gpuGetDeviceCount returned ") + a.text;
  } else if (a.count <= 0) {
    p.whyNot = "no usable GPU: " WEFT_GPU_VENDOR " gpuGetDeviceCount found 0 devices";
  }
  p.devices = a.count;
  return p;
}

const Probe& probe() {
  static const Probe p = runProbe();
  return p;
}

bool requireGpu() {
  const char* v = getenv("WEFT_GPU_TEST_REQUIRE");
  return v != nullptr && strcmp(v, "1") == 0;
}

#define WEFT_REQUIRE_GPU()                                              \
  do {                                                                  \
    const std::string& why_ = probe().whyNot;                           \
    if (!why_.empty()) {                                                \
      if (requireGpu()) FAIL() << why_ << " (WEFT_GPU_TEST_REQUIRE=1)"; \
      GTEST_SKIP() << why_;                                             \
    }                                                                   \
  } while (0)

// ---------------------------------------------------------------------------------------------
// One rank on the GPU: device 0 for every rank, a non-blocking stream of its own (so nothing
// orders it with the legacy default stream), and a communicator that must run on the GPU.

bool checkOnGpu(ncclComm_t comm, Reporter* rep) {
  const char* backend = nullptr;
  if (!rep->ok(weftCommGetBackend(comm, &backend), "weftCommGetBackend", comm)) return false;
  if (strcmp(backend, WEFT_GPU_VENDOR) != 0) {
    rep->failf("the communicator runs on backend '%s', expected '%s' (a GPU is present and WEFT_DEVICE is not host)",
               backend, WEFT_GPU_VENDOR);
    return false;
  }
  int dev = -1;
  if (!rep->ok(ncclCommCuDevice(comm, &dev), "ncclCommCuDevice", comm)) return false;
  if (dev != 0) rep->failf("ncclCommCuDevice says device %d, expected 0", dev);
  return dev == 0;
}

struct OwnedStream {
  gpuStream_t s = nullptr;
  OwnedStream() = default;
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  bool create(Reporter* rep) {
    return gpuOk(rep, gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking), "gpuStreamCreateWithFlags");
  }
  ~OwnedStream() {
    if (s != nullptr) (void)gpuStreamDestroy(s);
  }
};

// Sets device 0, reserves the test's device memory (before the communicator exists: see
// reserveDeviceMemory), creates the stream and ctx.comm (the harness destroys the communicator).
bool openRank(RankCtx& ctx, OwnedStream* stream) {
  if (!gpuOk(&ctx, gpuSetDevice(0), "gpuSetDevice(0)") || !reserveDeviceMemory(&ctx) || !stream->create(&ctx))
    return false;
  ctx.step("ncclCommInitRank");
  const ncclResult_t r = ncclCommInitRank(&ctx.comm, ctx.nranks, ctx.id, ctx.rank);
  if (!ctx.ok(r, "ncclCommInitRank", nullptr)) {
    ctx.comm = nullptr;
    return false;
  }
  return checkOnGpu(ctx.comm, &ctx);
}

RunOptions gpuRunOptions() {
  RunOptions o;
  o.initComm = false;  // openRank: the device is set before the communicator is made
  o.deadlineMs = 240000;
  return o;
}

// ---------------------------------------------------------------------------------------------
// The matrix: one test per (mode, collective, nranks, tag); inside it every rank walks the same
// list of cases (datatypes x ops x counts x placements x roots) on one communicator.

struct GpuMatrixParam {
  Mode mode;
  Coll coll;
  int nranks;
  std::vector<ncclDataType_t> dtypes;
  std::vector<Red> reds;
  std::vector<size_t> counts;
  const char* tag;
};

std::string describe(const GpuMatrixParam& p) {
  return std::string(modeName(p.mode)) + "_" + collName(p.coll) + "_n" + std::to_string(p.nranks) + "_" + p.tag;
}
void PrintTo(const GpuMatrixParam& p, std::ostream* os) { *os << describe(p); }

std::vector<CollCase> expand(const GpuMatrixParam& p) {
  std::vector<CollCase> cases;
  const std::vector<Red> onlySum = {Red::kSum};
  for (ncclDataType_t dt : p.dtypes) {
    for (Red red : collReduces(p.coll) ? p.reds : onlySum) {
      for (size_t count : p.counts) {
        // 0: out of place, 1: in place, 2: in place on even ranks only.
        for (int inPlace = 0; inPlace < 3; ++inPlace) {
          if (inPlace ? !collAllowsInPlace(p.coll) : !collAllowsOutOfPlace(p.coll)) continue;
          if (inPlace == 2 && (p.nranks < 2 || !collAllowsOutOfPlace(p.coll) || count < 1023)) continue;
          // Larger counts also run on buffers aligned to their element size only (vector loads).
          for (int shifted = 0; shifted < (count >= 1023 ? 2 : 1); ++shifted) {
            for (int root : collHasRoot(p.coll) ? rootsFor(p.nranks) : std::vector<int>{0}) {
              CollCase c;
              c.coll = p.coll;
              c.dtype = dt;
              c.red = red;
              c.count = count;
              c.inPlace = inPlace != 0;
              c.evenRanksOnly = inPlace == 2;
              c.shifted = shifted != 0;
              c.root = root;
              c.seed = static_cast<uint32_t>(cases.size() + 1);
              cases.push_back(c);
            }
          }
        }
      }
    }
  }
  return cases;
}

const std::vector<size_t> kSmall = {0, 1, 1023};
const std::vector<size_t> kBig = {1000003};
const std::vector<ncclDataType_t> kFewTypes = {ncclInt32, ncclFloat16, ncclFloat32, ncclBfloat16, ncclFloat8e4m3};
const std::vector<Red> kFewReds = {Red::kSum, Red::kMax, Red::kAvg, Red::kPreMulDev};

std::vector<GpuMatrixParam> threadsMatrix() {
  std::vector<GpuMatrixParam> v;
  const std::vector<Coll>& colls = allColls();
  // Every collective x datatype x op on 1..8 ranks (5..7 on a subset).
  for (int n = 1; n <= 8; ++n) {
    const bool full = n <= 4 || n == 8;
    for (Coll c : colls)
      v.push_back({Mode::kThreads, c, n, full ? allDtypes() : kFewTypes, full ? allReds() : kFewReds, kSmall, "small"});
  }
  // A million and three elements: many pipeline chunks, every collective once.
  for (int n : {2, 4, 8}) v.push_back({Mode::kThreads, Coll::kAllReduce, n, {ncclFloat32}, {Red::kSum}, kBig, "big"});
  v.push_back({Mode::kThreads, Coll::kAllReduce, 3, {ncclInt32, ncclBfloat16}, {Red::kMax, Red::kAvg}, kBig, "big2"});
  for (Coll c : {Coll::kBroadcast, Coll::kBcast, Coll::kReduce, Coll::kAllGather, Coll::kReduceScatter, Coll::kAlltoAll,
                 Coll::kGather, Coll::kScatter, Coll::kAlltoAllv})
    v.push_back({Mode::kThreads, c, 4, {ncclFloat32}, {Red::kSum}, kBig, "big"});
  // One thread driving every rank (ncclCommInitAll with device 0 repeated, calls grouped).
  for (int n : {2, 4})
    for (Coll c : colls)
      v.push_back({Mode::kClique,
                   c,
                   n,
                   {ncclInt8, ncclFloat32, ncclBfloat16},
                   {Red::kSum, Red::kAvg, Red::kPreMulImm},
                   kSmall,
                   "small"});
  return v;
}

std::vector<GpuMatrixParam> procsMatrix() {
  std::vector<GpuMatrixParam> v;
  for (int n : {2, 3})
    for (Coll c : allColls())
      v.push_back({Mode::kProcs, c, n,
                   collReduces(c) ? std::vector<ncclDataType_t>{ncclUint8, ncclInt32, ncclInt64, ncclFloat16,
                                                                ncclFloat32, ncclFloat64, ncclBfloat16, ncclFloat8e5m2}
                                  : std::vector<ncclDataType_t>{ncclInt8, ncclFloat16, ncclFloat32, ncclFloat64},
                   allReds(), kSmall, "small"});
  for (int n : {4, 8})
    for (Coll c : allColls())
      v.push_back({Mode::kProcs,
                   c,
                   n,
                   {ncclFloat32, ncclBfloat16},
                   {Red::kSum, Red::kMin, Red::kPreMulDev},
                   {1, 1023},
                   "small"});
  for (int n : {2, 4, 8}) v.push_back({Mode::kProcs, Coll::kAllReduce, n, {ncclFloat32}, {Red::kSum}, kBig, "big"});
  for (Coll c : {Coll::kAllGather, Coll::kReduceScatter, Coll::kAlltoAll})
    v.push_back({Mode::kProcs, c, 3, {ncclFloat32}, {Red::kSum}, kBig, "big"});
  return v;
}

class GpuMatrix : public ::testing::TestWithParam<GpuMatrixParam> {};

TEST_P(GpuMatrix, MatchesReference) {
  WEFT_REQUIRE_GPU();
  const GpuMatrixParam& p = GetParam();
  const std::vector<CollCase> cases = expand(p);
  if (p.mode == Mode::kClique) {
    EXPECT_RUN_OK(runClique(
        p.nranks,
        [&](CliqueCtx& ctx) {
          if (!gpuOk(&ctx, gpuSetDevice(0), "gpuSetDevice(0)") || !reserveDeviceMemory(&ctx)) return;
          std::vector<int> devs(ctx.nranks, 0);  // every rank on device 0
          ctx.comms.assign(ctx.nranks, nullptr);
          if (!ctx.ok(ncclCommInitAll(ctx.comms.data(), ctx.nranks, devs.data()), "ncclCommInitAll")) {
            ctx.comms.clear();
            return;
          }
          std::vector<OwnedStream> streams(ctx.nranks);
          std::vector<gpuStream_t> raw;
          for (int r = 0; r < ctx.nranks; ++r) {
            if (!checkOnGpu(ctx.comms[r], &ctx) || !streams[r].create(&ctx)) return;
            raw.push_back(streams[r].s);
          }
          for (const CollCase& c : cases)
            if (!runGpuCaseOnClique(c, ctx.comms, raw, &ctx)) return;
        },
        gpuRunOptions()));
    return;
  }
  EXPECT_RUN_OK(runRanks(
      p.mode, p.nranks,
      [&](RankCtx& ctx) {
        OwnedStream s;
        if (!openRank(ctx, &s)) return;
        for (const CollCase& c : cases)
          if (!runGpuCaseOnRank(c, ctx.comm, s.s, ctx.rank, ctx.nranks, &ctx)) return;  // ranks may be out of step
      },
      gpuRunOptions()));
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuMatrix, ::testing::ValuesIn(kTier == Mode::kProcs ? procsMatrix() : threadsMatrix()),
                         [](const ::testing::TestParamInfo<GpuMatrixParam>& i) { return describe(i.param); });

std::vector<int> rankCounts() {
  return kTier == Mode::kProcs ? std::vector<int>{2, 3, 4} : std::vector<int>{1, 2, 3, 5, 8};
}

// ---------------------------------------------------------------------------------------------
// Send/Recv in a ring (one rank sends to itself), grouped as NCCL requires for concurrent pairs.

void fillMessage(std::vector<unsigned char>* buf, uint64_t key) {
  uint64_t h = mix64(key);
  for (size_t i = 0; i < buf->size(); ++i) {
    if (i % 8 == 0) h = mix64(h + i);
    (*buf)[i] = static_cast<unsigned char>(h >> (8 * (i % 8)));
  }
}

uint64_t msgKey(int from, int to, int msg) {
  return (static_cast<uint64_t>(from) << 40) ^ (static_cast<uint64_t>(to) << 20) ^ static_cast<uint64_t>(msg);
}

TEST(GpuP2P, RingSendRecv) {
  WEFT_REQUIRE_GPU();
  for (int n : rankCounts()) {
    EXPECT_RUN_OK(runRanks(
        kTier, n,
        [](RankCtx& ctx) {
          OwnedStream s;
          if (!openRank(ctx, &s)) return;
          const int next = (ctx.rank + 1) % ctx.nranks, prev = (ctx.rank + ctx.nranks - 1) % ctx.nranks;
          int msg = 0;
          for (ncclDataType_t dt : {ncclInt8, ncclFloat32, ncclBfloat16, ncclFloat64}) {
            for (size_t count : {size_t{0}, size_t{1}, size_t{1023}, size_t{1} << 20}) {
              const std::string what = "ring " + std::string(dtypeInfo(dt).name) + " count " + std::to_string(count);
              const size_t bytes = count * dtypeInfo(dt).size;
              std::vector<unsigned char> out(bytes), in;
              fillMessage(&out, msgKey(ctx.rank, next, msg));
              DeviceBuffer sendBuf, recvBuf;
              if (!sendBuf.allocate(0, bytes, &ctx) || !sendBuf.upload(out, &ctx) || !recvBuf.allocate(0, bytes, &ctx))
                return;
              ctx.step(what);
              if (!ctx.ok(ncclGroupStart(), "ncclGroupStart")) return;
              const ncclResult_t rs = ncclSend(sendBuf.data(), count, dt, next, ctx.comm, s.s);
              const ncclResult_t rr = ncclRecv(recvBuf.data(), count, dt, prev, ctx.comm, s.s);
              const ncclResult_t re = ncclGroupEnd();
              if (!ctx.ok(rs, (what + ": ncclSend").c_str(), ctx.comm) ||
                  !ctx.ok(rr, (what + ": ncclRecv").c_str(), ctx.comm) ||
                  !ctx.ok(re, (what + ": ncclGroupEnd").c_str(), ctx.comm) ||
                  !gpuOk(&ctx, gpuStreamSynchronize(s.s), (what + ": gpuStreamSynchronize").c_str()) ||
                  !recvBuf.download(&in, &ctx))
                return;
              std::vector<unsigned char> want(bytes);
              fillMessage(&want, msgKey(prev, ctx.rank, msg));
              if (in != want) ctx.failf("%s: the received bytes differ from what rank %d sent", what.c_str(), prev);
              if (!recvBuf.guardsIntact(&ctx))
                ctx.failf("%s: bytes outside the receive buffer were overwritten", what.c_str());
              ++msg;
            }
          }
        },
        gpuRunOptions()));
  }
}

// ---------------------------------------------------------------------------------------------
// Graph capture: an AllReduce captured once, then replayed three times with new inputs. Capture
// must record the operation without running it. Ranks as threads capture with the thread-local
// mode (several threads of the process capture at once, and in the global mode one thread's
// capture forbids unsafe calls on all of them); one rank per process uses the global mode, as
// PyTorch's CUDA graphs do by default.

TEST(GpuGraph, CapturedAllReduceReplaysWithNewInputs) {
  WEFT_REQUIRE_GPU();
  for (int n : {2, kTier == Mode::kProcs ? 3 : 4}) {
    EXPECT_RUN_OK(runRanks(
        kTier, n,
        [](RankCtx& ctx) {
          OwnedStream s;
          if (!openRank(ctx, &s)) return;
          const size_t count = (size_t{1} << 20) + 3;
          // Small integers: every sum is exact in float.
          auto value = [&](int rank, int k, size_t i) {
            return static_cast<float>((rank + 1) * (k + 1) + static_cast<int>(i % 13));
          };
          DeviceBuffer send, recv;
          if (!send.allocate(0, count * 4, &ctx) || !recv.allocate(0, count * 4, &ctx)) return;
          if (!recv.fill(0xFF, &ctx)) return;  // NaN: not yet written
          const gpuStreamCaptureMode mode = kTier == Mode::kProcs ? gpuStreamCaptureModeGlobal
                                                                  : gpuStreamCaptureModeThreadLocal;
          gpuGraph_t graph = nullptr;
          gpuGraphExec_t exec = nullptr;
          ctx.step("capture");
          if (!gpuOk(&ctx, gpuStreamBeginCapture(s.s, mode), "gpuStreamBeginCapture")) return;
          const ncclResult_t r = ncclAllReduce(send.data(), recv.data(), count, ncclFloat32, ncclSum, ctx.comm, s.s);
          const gpuError_t end = gpuStreamEndCapture(s.s, &graph);
          if (!ctx.ok(r, "ncclAllReduce while capturing", ctx.comm) || !gpuOk(&ctx, end, "gpuStreamEndCapture")) return;
          std::unique_ptr<void, void (*)(void*)> graphGuard(graph, [](void* g) {
            (void)gpuGraphDestroy(static_cast<gpuGraph_t>(g));
          });
          if (!gpuOk(&ctx, gpuGraphInstantiateWithFlags(&exec, graph, 0), "gpuGraphInstantiateWithFlags")) return;
          std::unique_ptr<void, void (*)(void*)> execGuard(exec, [](void* e) {
            (void)gpuGraphExecDestroy(static_cast<gpuGraphExec_t>(e));
          });
          std::vector<unsigned char> got;
          if (!gpuOk(&ctx, gpuStreamSynchronize(s.s), "gpuStreamSynchronize") || !recv.download(&got, &ctx)) return;
          for (unsigned char b : got)
            if (b != 0xFF) {
              ctx.fail("capturing the AllReduce wrote the receive buffer: capture must record, not run");
              break;
            }
          for (int k = 0; k < 3; ++k) {
            const std::string what = "graph replay " + std::to_string(k);
            std::vector<float> in(count);
            for (size_t i = 0; i < count; ++i) in[i] = value(ctx.rank, k, i);
            std::vector<unsigned char> bytes(count * 4);
            memcpy(bytes.data(), in.data(), bytes.size());
            ctx.step(what);
            if (!send.upload(bytes, &ctx) ||
                !gpuOk(&ctx, gpuGraphLaunch(exec, s.s), (what + ": gpuGraphLaunch").c_str()) ||
                !gpuOk(&ctx, gpuStreamSynchronize(s.s), (what + ": gpuStreamSynchronize").c_str()) ||
                !recv.download(&got, &ctx))
              return;
            size_t bad = 0;
            for (size_t i = 0; i < count; ++i) {
              float want = 0, have = 0;
              for (int p = 0; p < ctx.nranks; ++p) want += value(p, k, i);
              memcpy(&have, got.data() + i * 4, 4);
              if (have != want && bad++ == 0)
                ctx.failf("%s: element %zu is %g, expected %g", what.c_str(), i, have, want);
            }
            if (bad > 1) ctx.failf("%s: %zu elements wrong in all", what.c_str(), bad);
          }
        },
        gpuRunOptions()));
  }
}

// ---------------------------------------------------------------------------------------------
// Several communicators and streams at once: the harness's communicator on one stream and a split
// of it (ranks in reverse order) on another, operations interleaved with no synchronization in
// between; every result is checked at the end.

TEST(GpuStreams, TwoCommunicatorsOnTwoStreamsInterleaved) {
  WEFT_REQUIRE_GPU();
  for (int n : {2, kTier == Mode::kProcs ? 3 : 4}) {
    EXPECT_RUN_OK(runRanks(
        kTier, n,
        [](RankCtx& ctx) {
          OwnedStream sa, sb;
          if (!openRank(ctx, &sa) || !sb.create(&ctx)) return;
          ncclComm_t other = nullptr;
          ctx.step("ncclCommSplit");
          if (!ctx.ok(ncclCommSplit(ctx.comm, 0, ctx.nranks - 1 - ctx.rank, &other, nullptr), "ncclCommSplit",
                      ctx.comm))
            return;
          std::unique_ptr<void, void (*)(void*)> otherGuard(other, [](void* c) {
            (void)ncclCommDestroy(static_cast<ncclComm_t>(c));
          });
          int otherRank = -1;
          if (!checkOnGpu(other, &ctx) || !ctx.ok(ncclCommUserRank(other, &otherRank), "ncclCommUserRank", other))
            return;
          std::vector<std::unique_ptr<GpuCaseRun>> onA, onB;
          for (int i = 0; i < 4; ++i) {
            CollCase a;  // AllReduce float32 sum on comm A (counts differ: the case name keys the digest)
            a.count = 65537 + i;
            a.seed = 100 + i;
            CollCase b;  // AllGather int32 on comm B
            b.coll = Coll::kAllGather;
            b.dtype = ncclInt32;
            b.count = 4099;
            b.seed = 200 + i;
            onA.push_back(std::make_unique<GpuCaseRun>(a, ctx.rank, ctx.nranks));
            onB.push_back(std::make_unique<GpuCaseRun>(b, otherRank, ctx.nranks));
            if (!onA.back()->setup(&ctx) || !onB.back()->setup(&ctx) || !onA.back()->createOp(ctx.comm, &ctx)) return;
          }
          for (int i = 0; i < 4; ++i) {
            ctx.step("interleaved round " + std::to_string(i));
            if (!ctx.ok(onA[i]->issue(ctx.comm, sa.s), onA[i]->label().c_str(), ctx.comm) ||
                !ctx.ok(onB[i]->issue(other, sb.s), onB[i]->label().c_str(), other))
              return;
          }
          if (!gpuOk(&ctx, gpuStreamSynchronize(sa.s), "gpuStreamSynchronize(A)") ||
              !gpuOk(&ctx, gpuStreamSynchronize(sb.s), "gpuStreamSynchronize(B)"))
            return;
          for (int i = 0; i < 4; ++i) {
            onA[i]->verify(&ctx);
            onB[i]->verify(&ctx);
          }
        },
        gpuRunOptions()));
  }
}

// The legacy default stream (NULL) works too: simple programs pass it. Ranks as threads of one
// process share one legacy stream per device, where each rank's work would queue behind its
// peer's, so that tier runs a single rank; processes have a legacy stream each.
TEST(GpuStreams, DefaultStream) {
  WEFT_REQUIRE_GPU();
  EXPECT_RUN_OK(runRanks(
      kTier, kTier == Mode::kProcs ? 2 : 1,
      [](RankCtx& ctx) {
        OwnedStream unused;
        if (!openRank(ctx, &unused)) return;
        CollCase c;
        c.count = 4099;
        if (!runGpuCaseOnRank(c, ctx.comm, nullptr, ctx.rank, ctx.nranks, &ctx)) return;
      },
      gpuRunOptions()));
}

// ---------------------------------------------------------------------------------------------
// Group fusion: several collectives and a Send/Recv ring in one ncclGroupStart/End on one stream.

TEST(GpuGroups, SeveralOperationsInOneGroup) {
  WEFT_REQUIRE_GPU();
  for (int n : rankCounts()) {
    EXPECT_RUN_OK(runRanks(
        kTier, n,
        [](RankCtx& ctx) {
          OwnedStream s;
          if (!openRank(ctx, &s)) return;
          std::vector<CollCase> cases(5);
          cases[0].count = 1023;  // AllReduce float32 sum
          cases[1].coll = Coll::kAllGather, cases[1].dtype = ncclBfloat16, cases[1].count = 777;
          cases[2].coll = Coll::kReduceScatter, cases[2].dtype = ncclInt32, cases[2].red = Red::kMax,
          cases[2].count = 513;
          cases[3].coll = Coll::kBroadcast, cases[3].dtype = ncclInt8, cases[3].count = 4097,
          cases[3].root = ctx.nranks - 1;
          cases[4].coll = Coll::kAllReduce, cases[4].dtype = ncclFloat16, cases[4].red = Red::kAvg,
          cases[4].count = 100003;
          std::vector<std::unique_ptr<GpuCaseRun>> runs;
          for (size_t i = 0; i < cases.size(); ++i) {
            cases[i].seed = static_cast<uint32_t>(7 + i);
            runs.push_back(std::make_unique<GpuCaseRun>(cases[i], ctx.rank, ctx.nranks));
            if (!runs.back()->setup(&ctx) || !runs.back()->createOp(ctx.comm, &ctx)) return;
          }
          const int next = (ctx.rank + 1) % ctx.nranks, prev = (ctx.rank + ctx.nranks - 1) % ctx.nranks;
          const size_t p2pBytes = 100000 * 8;
          std::vector<unsigned char> out(p2pBytes), in, want(p2pBytes);
          fillMessage(&out, msgKey(ctx.rank, next, 99));
          fillMessage(&want, msgKey(prev, ctx.rank, 99));
          DeviceBuffer sendBuf, recvBuf;
          if (!sendBuf.allocate(0, p2pBytes, &ctx) || !sendBuf.upload(out, &ctx) ||
              !recvBuf.allocate(0, p2pBytes, &ctx))
            return;
          ctx.step("the group");
          bool ok = ctx.ok(ncclGroupStart(), "ncclGroupStart");
          for (auto& run : runs) ok = ok && ctx.ok(run->issue(ctx.comm, s.s), run->label().c_str(), ctx.comm);
          ok = ok &&
               ctx.ok(ncclSend(sendBuf.data(), p2pBytes / 8, ncclFloat64, next, ctx.comm, s.s), "ncclSend", ctx.comm);
          ok = ok &&
               ctx.ok(ncclRecv(recvBuf.data(), p2pBytes / 8, ncclFloat64, prev, ctx.comm, s.s), "ncclRecv", ctx.comm);
          const ncclResult_t end = ncclGroupEnd();
          if (!ok || !ctx.ok(end, "ncclGroupEnd", ctx.comm) ||
              !gpuOk(&ctx, gpuStreamSynchronize(s.s), "gpuStreamSynchronize") || !recvBuf.download(&in, &ctx))
            return;
          for (auto& run : runs) run->verify(&ctx);
          if (in != want) ctx.failf("grouped Send/Recv: the bytes from rank %d differ", prev);
        },
        gpuRunOptions()));
  }
}

// ---------------------------------------------------------------------------------------------
// Registered inputs read in place: each rank's AllReduce input lies 3 floats into a window over
// ncclMemAlloc memory, so under DDA (ctest gpu.<tier>.dda-flat and dda-tree; 160 KB is above the
// size from which flat AllReduce publishes) a rank publishes its input instead of staging it and
// its peers fold from it: by address between threads, through the IPC mappings made at
// registration between processes (src/rma/device_window.h). Each input is rewritten as soon as
// its call's stream is synchronized, and every result is checked.

TEST(GpuRegistered, WindowInputsAreReadInPlace) {
  WEFT_REQUIRE_GPU();
  for (int n : rankCounts()) {
    EXPECT_RUN_OK(runRanks(
        kTier, n,
        [](RankCtx& ctx) {
          OwnedStream s;
          if (!openRank(ctx, &s)) return;
          constexpr size_t kCount = 40001, kLead = 3;
          const size_t bytes = (kLead + kCount) * sizeof(float);
          void* mem = nullptr;
          ncclWindow_t win = nullptr;
          DeviceBuffer out;
          if (!ctx.ok(ncclMemAlloc(&mem, bytes), "ncclMemAlloc") ||
              !ctx.ok(ncclCommWindowRegister(ctx.comm, mem, bytes, &win, NCCL_WIN_DEFAULT), "ncclCommWindowRegister",
                      ctx.comm) ||
              !out.allocate(0, kCount * sizeof(float), &ctx))
            return;
          float* in = static_cast<float*>(mem) + kLead;
          auto value = [](int rank, size_t i) { return static_cast<float>(rank + 1 + static_cast<int>(i % 11)); };
          for (int call = 0; call < 6 && !ctx.failed(); ++call) {
            std::vector<float> host(kCount);
            for (size_t i = 0; i < kCount; ++i) host[i] = value(ctx.rank, i + size_t(call));
            std::vector<float> result(kCount);
            if (!gpuOk(&ctx, gpuMemcpy(in, host.data(), kCount * sizeof(float), gpuMemcpyHostToDevice),
                       "gpuMemcpy H2D (input)") ||
                !ctx.ok(ncclAllReduce(in, out.data(), kCount, ncclFloat32, ncclSum, ctx.comm, s.s), "ncclAllReduce",
                        ctx.comm) ||
                !gpuOk(&ctx, gpuStreamSynchronize(s.s), "gpuStreamSynchronize") ||
                !gpuOk(&ctx, gpuMemcpy(result.data(), out.data(), kCount * sizeof(float), gpuMemcpyDeviceToHost),
                       "gpuMemcpy D2H (result)"))
              return;
            for (size_t i = 0; i < kCount; ++i) {
              float want = 0;
              for (int p = 0; p < ctx.nranks; ++p) want += value(p, i + size_t(call));
              if (result[i] != want) {
                ctx.failf("call %d: element %zu is %g, expected %g", call, i, result[i], want);
                break;
              }
            }
          }
          ctx.ok(ncclCommWindowDeregister(ctx.comm, win), "ncclCommWindowDeregister", ctx.comm);
          ctx.ok(ncclMemFree(mem), "ncclMemFree");
        },
        gpuRunOptions()));
  }
}

// ---------------------------------------------------------------------------------------------
// The FP8 low-precision collectives on device buffers (one element past an aligned start), within
// the host-mode suite's bounds (lowprec_check.h), with every rank holding the same bits. ctest runs
// it as gpu.<tier>.lowprec, which sets RCCL_LOW_PRECISION_ENABLE=1 and
// WEFT_LOW_PRECISION_MIN_BYTES=0; without them the exact path would run, so it skips.

TEST(GpuLowPrecision, AllCollectivesWithinTheHostBounds) {
  WEFT_REQUIRE_GPU();
  const char* on = getenv("RCCL_LOW_PRECISION_ENABLE");
  if (on == nullptr || strcmp(on, "1") != 0)
    GTEST_SKIP() << "run as gpu.<tier>.lowprec, which sets RCCL_LOW_PRECISION_ENABLE=1";
  for (int n : rankCounts()) {
    EXPECT_RUN_OK(runRanks(
        kTier, n,
        [](RankCtx& ctx) {
          OwnedStream s;
          if (!openRank(ctx, &s)) return;
          for (ncclDataType_t dt : {ncclFloat32, ncclBfloat16, ncclFloat16})
            for (LowpData d : {LowpData::kNormal, LowpData::kHuge, LowpData::kEqual})
              for (LowpOp op : {LowpOp::kAllReduce, LowpOp::kAllGather, LowpOp::kReduceScatter, LowpOp::kAlltoAll})
                for (size_t count : {size_t(1), size_t(257), size_t(4099), size_t(50003)}) {
                  if (d != LowpData::kNormal && count > 5000) continue;
                  const LowpCase c{op, dt, d, count, ctx.rank, ctx.nranks};
                  const size_t es = c.elemBytes();
                  std::vector<unsigned char> host(c.inElems() * es), got;
                  c.fillInput(host.data());
                  DeviceBuffer in, out;
                  ctx.step(c.what());
                  if (!in.allocate(es, host.size(), &ctx) || !in.upload(host, &ctx) ||
                      !out.allocate(es, c.outElems() * es, &ctx) ||
                      !ctx.ok(c.issue(in.data(), out.data(), ctx.comm, s.s), c.what().c_str(), ctx.comm) ||
                      !gpuOk(&ctx, gpuStreamSynchronize(s.s), "gpuStreamSynchronize") || !out.download(&got, &ctx))
                    return;
                  c.check(got.data(), &ctx);
                  if (ctx.failed()) return;
                }
        },
        gpuRunOptions()));
  }
}

// ---------------------------------------------------------------------------------------------
// Errors: wrong arguments are errors, never crashes or hangs, and leave the communicator usable.

bool isArgumentError(ncclResult_t r) { return r == ncclInvalidArgument || r == ncclInvalidUsage; }

TEST(GpuErrors, PageableHostPointerIsRejected) {
  WEFT_REQUIRE_GPU();
  EXPECT_RUN_OK(runRanks(
      kTier, 2,
      [](RankCtx& ctx) {
        OwnedStream s;
        if (!openRank(ctx, &s)) return;
        std::vector<float> host(1024, 1.0f);  // plain malloc'd memory the runtime does not know
        DeviceBuffer dev;
        if (!dev.allocate(0, host.size() * 4, &ctx)) return;
        struct Call {
          const char* what;
          const void* send;
          void* recv;
        } calls[] = {{"host send buffer", host.data(), dev.data()},
                     {"host receive buffer", dev.data(), host.data()},
                     {"host buffers (in place)", host.data(), host.data()}};
        for (const Call& c : calls) {
          ctx.step(c.what);
          const ncclResult_t r = ncclAllReduce(c.send, c.recv, host.size(), ncclFloat32, ncclSum, ctx.comm, s.s);
          if (!isArgumentError(r))
            ctx.failf(
                "ncclAllReduce with a %s on a GPU communicator returned %d (%s), expected ncclInvalidArgument or "
                "ncclInvalidUsage",
                c.what, static_cast<int>(r), ncclGetErrorString(r));
          else if (lastError(ctx.comm).empty())
            ctx.failf("ncclAllReduce with a %s failed without a message in ncclGetLastError", c.what);
        }
        if (!gpuOk(&ctx, gpuStreamSynchronize(s.s), "gpuStreamSynchronize after the rejected calls")) return;
        CollCase c;  // the communicator still works
        c.count = 1024;
        runGpuCaseOnRank(c, ctx.comm, s.s, ctx.rank, ctx.nranks, &ctx);
      },
      gpuRunOptions()));
}

TEST(GpuErrors, StreamOfAnotherDeviceIsRejected) {
  WEFT_REQUIRE_GPU();
  if (probe().devices < 2)
    GTEST_SKIP() << "needs 2 GPUs (a stream of device 1 passed to a communicator of device 0); found "
                 << probe().devices;
  EXPECT_RUN_OK(runRanks(
      kTier, 1,
      [](RankCtx& ctx) {
        OwnedStream s, elsewhere;
        if (!openRank(ctx, &s)) return;
        if (!gpuOk(&ctx, gpuSetDevice(1), "gpuSetDevice(1)") || !elsewhere.create(&ctx) ||
            !gpuOk(&ctx, gpuSetDevice(0), "gpuSetDevice(0)"))
          return;
        DeviceBuffer buf;
        if (!buf.allocate(0, 4096, &ctx)) return;
        const ncclResult_t r = ncclAllReduce(buf.data(), buf.data(), 1024, ncclFloat32, ncclSum, ctx.comm, elsewhere.s);
        if (!isArgumentError(r))
          ctx.failf(
              "ncclAllReduce on a stream of device 1 (communicator on device 0) returned %d (%s), expected "
              "ncclInvalidArgument or ncclInvalidUsage",
              static_cast<int>(r), ncclGetErrorString(r));
      },
      gpuRunOptions()));
}

}  // namespace
}  // namespace weft_test

// WEFT_TEST_ENV="NAME=value,..." as in the host-mode suites (ctest's ENVIRONMENT keeps one entry
// of a list). Unlike them, WEFT_DEVICE is left alone: its default (auto) picks the GPU.
int main(int argc, char** argv) {
  if (const char* spec = getenv("WEFT_TEST_ENV")) {
    const std::string all(spec);
    for (size_t at = 0; at <= all.size();) {
      size_t end = all.find(',', at);
      if (end == std::string::npos) end = all.size();
      const std::string item = all.substr(at, end - at);
      const size_t eq = item.find('=');
      if (eq != std::string::npos && eq > 0) setenv(item.substr(0, eq).c_str(), item.substr(eq + 1).c_str(), 1);
      at = end + 1;
    }
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
