// The direct lane (DDA flat and tree, and the FP8 low-precision collectives) on GPU communicators,
// run through the real kernel source on CPU threads (ranks as threads, their staging areas in
// emulated device memory). Results are checked exactly, or bit for bit against lowp_quant.h's
// single-source functions; every rank must hold the same bits; a missing peer and a mismatched
// call must end as errors that name the peer. None of this has run on a GPU.
#include <gtest/gtest.h>

#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "emulated_runtime.h"
#include "emulation_ranks.h"
#include "enqueue/algo_info.h"
#include "math/lowp_quant.h"
#include "nccl.h"

namespace weft {
namespace {

using testing::Env;
using testing::expectNoAsyncError;
using testing::runRanks;
using testing::Scope;

// RCCL's ncclFunc_t numbers, as rcclGetAlgoInfo takes them.
constexpr int kFuncAllGather = 2, kFuncReduceScatter = 3, kFuncAllReduce = 4, kFuncAlltoAll = 8;

// The algorithm the communicator picks for the call (the same selection a group makes).
std::string chosen(ncclComm_t comm, int func, size_t count, ncclDataType_t dt) {
  int algo = -1, proto = -1, channels = -1;
  std::string why;
  if (describeChoice(comm, func, count, dt, &algo, &proto, &channels, &why) != ncclSuccess) return "error: " + why;
  const char* name = choiceAlgorithmName(algo);
  return name != nullptr ? name : "?";
}

float smallInt(int rank, size_t i) { return static_cast<float>(rank + 1 + static_cast<int>(i % 11)); }

// A float in [-1, 1) from (rank, i), so that sums round and the fold's order shows in the bits.
float noisy(int rank, size_t i) {
  uint32_t x = static_cast<uint32_t>(i * 2654435761u) ^ static_cast<uint32_t>(rank * 40503u + 17u);
  x ^= x >> 13;
  x *= 0x5bd1e995u;
  x ^= x >> 15;
  return static_cast<float>(x % 2000001u) / 1000000.0f - 1.0f;
}

// DDA AllReduce of small integers (exact in any order) on n ranks, in and out of place, with a
// staging area small enough that the larger counts go in several rounds.
void ddaAllReduceExact(const char* algo, int n, size_t count) {
  runRanks(n, [&](int r, ncclComm_t comm) {
    EXPECT_EQ(chosen(comm, kFuncAllReduce, count, ncclFloat32), algo);
    for (int inPlace = 0; inPlace < 2; ++inPlace) {
      std::vector<float> send(count), recv(count, -1.f);
      for (size_t i = 0; i < count; ++i) send[i] = smallInt(r, i + inPlace);
      float* out = inPlace ? send.data() : recv.data();
      ASSERT_EQ(ncclAllReduce(send.data(), out, count, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess)
          << ncclGetLastError(comm);
      expectNoAsyncError(comm);
      size_t bad = 0;
      for (size_t i = 0; i < count; ++i) {
        float want = 0;
        for (int p = 0; p < n; ++p) want += smallInt(p, i + inPlace);
        bad += out[i] != want;
      }
      EXPECT_EQ(bad, 0u) << algo << ", rank " << r << " of " << n << ", " << count << " elements, in place " << inPlace;
    }
  });
}

// 64 KiB of staging: 8192 float32 per half, so 20001 elements take three rounds.
const Env kSmallStaging = {{"RCCL_DDA_SENDBUF_BYTES", "65536"}};

Env with(Env base, const char* k, const char* v) {
  base.emplace_back(k, v);
  return base;
}

TEST(DirectLaneEmulation, DdaFlatAllReduce) {
  Scope s(with(kSmallStaging, "NCCL_ALGO", "DDAFlat"));
  for (int n : {2, 3, 5, 8})
    for (size_t count : {size_t(1), size_t(13), size_t(1000), size_t(20001)}) ddaAllReduceExact("DDAFlat", n, count);
}

TEST(DirectLaneEmulation, DdaTreeAllReduce) {
  Scope s(with(kSmallStaging, "NCCL_ALGO", "DDATree"));
  for (int n : {2, 3, 4, 7})
    for (size_t count : {size_t(1), size_t(5), size_t(999), size_t(20001)}) ddaAllReduceExact("DDATree", n, count);
}

// Registered inputs read in place (program/step.h kStepPublish): the ranks are threads of one
// process, so a rank whose input lies in a registered buffer stages nothing and its peers' kernels
// fold straight from it. Odd ranks register with ncclCommRegister and even ranks as windows, but
// the last rank of three or more does not register; every third call is in place, which stages.
// Each rank refills its input the moment a call returns: a kernel that left while a peer still
// folded its input would corrupt that peer's result (flat AllReduce's closing barrier).
void registeredAllReduce(const char* algo, int n) {
  runRanks(n, [&](int r, ncclComm_t comm) {
    // Five rounds of the 64 KiB staging area, and above the 128 KiB from which flat AllReduce on a
    // GPU publishes its input (below, its closing barrier would cost more than the copy it saves).
    constexpr size_t kMax = 40001;
    std::vector<float> in(kMax), out(kMax);
    const bool registers = n == 2 || r != n - 1;
    void* handle = nullptr;
    ncclWindow_t win = nullptr;
    if (registers && r % 2 == 1) {
      ASSERT_EQ(ncclCommRegister(comm, in.data(), kMax * sizeof(float), &handle), ncclSuccess);
    } else if (registers) {
      ASSERT_EQ(ncclCommWindowRegister(comm, in.data(), kMax * sizeof(float), &win, NCCL_WIN_DEFAULT), ncclSuccess);
    }
    int call = 0;
    for (size_t count : {size_t(1), size_t(1000), kMax})
      for (int iter = 0; iter < (count == kMax ? 30 : 4); ++iter, ++call) {
        EXPECT_EQ(chosen(comm, kFuncAllReduce, count, ncclFloat32), algo);
        for (size_t i = 0; i < count; ++i) in[i] = smallInt(r, i + size_t(call));
        const bool inPlace = call % 3 == 2;
        float* dst = inPlace ? in.data() : out.data();
        const ncclResult_t res = ncclAllReduce(in.data(), dst, count, ncclFloat32, ncclSum, comm, nullptr);
        ASSERT_EQ(res, ncclSuccess) << ncclGetLastError(comm);
        size_t bad = 0;
        for (size_t i = 0; i < count; ++i) {
          float want = 0;
          for (int p = 0; p < n; ++p) want += smallInt(p, i + size_t(call));
          bad += dst[i] != want;
        }
        EXPECT_EQ(bad, 0u) << algo << ", rank " << r << " of " << n << ", call " << call << " (" << count << " floats"
                           << (inPlace ? ", in place)" : ")");
        std::memset(in.data(), 0xff, count * sizeof(float));
      }
    expectNoAsyncError(comm);
    if (handle != nullptr) {
      EXPECT_EQ(ncclCommDeregister(comm, handle), ncclSuccess);
    }
    if (win != nullptr) {
      EXPECT_EQ(ncclCommWindowDeregister(comm, win), ncclSuccess);
    }
  });
}

TEST(DirectLaneEmulation, RegisteredInputsAreReadInPlace) {
  for (const char* algo : {"DDAFlat", "DDATree"}) {
    Scope s(with(kSmallStaging, "NCCL_ALGO", algo));
    for (int n : {2, 3, 5}) registeredAllReduce(algo, n);
  }
}

// GPU ranks of different processes (ranks as threads with address spaces of their own: their
// device memory reaches each other only through IPC handles, which map it again at another
// address). Every rank registers a window, collectively; the even ranks' lie in ncclMemAlloc
// memory, which every rank maps at registration, so an even rank publishes its input by window row
// and offset and its peers' kernels read it through their own mappings; the odd ranks' lie in
// other memory, which is not offered, so they stage. Every third call is in place (staged).
// Each rank refills its input the moment a call returns, as in registeredAllReduce.
void registeredAcrossAddressSpaces(const char* algo, int n) {
  const size_t mappedBefore = testing::emulatedIpcMappings();
  runRanks(
      n,
      [&](int r, ncclComm_t comm) {
        // The inputs start 17 floats into the window, which starts 3 floats into the allocation.
        constexpr size_t kMax = 40001, kLead = 17, kWindowLead = 3;
        const size_t bytes = (kWindowLead + kLead + kMax) * sizeof(float);
        std::vector<float> plain(r % 2 == 0 ? 0 : bytes / sizeof(float)), out(kMax);
        void* allocated = nullptr;
        if (r % 2 == 0) {
          ASSERT_EQ(ncclMemAlloc(&allocated, bytes), ncclSuccess);
        }
        float* window = (r % 2 == 0 ? static_cast<float*>(allocated) : plain.data()) + kWindowLead;
        float* in = window + kLead;
        ncclWindow_t win = nullptr;
        ASSERT_EQ(ncclCommWindowRegister(comm, window, (kLead + kMax) * sizeof(float), &win, NCCL_WIN_DEFAULT),
                  ncclSuccess)
            << ncclGetLastError(comm);
        // Every peer's window of ncclMemAlloc memory is mapped here (beside the staging areas).
        EXPECT_GE(testing::emulatedIpcMappings(), mappedBefore + size_t((n + 1) / 2 - (r % 2 == 0 ? 1 : 0)));
        int call = 0;
        for (size_t count : {size_t(1), size_t(1000), kMax})
          for (int iter = 0; iter < (count == kMax ? 12 : 3); ++iter, ++call) {
            EXPECT_EQ(chosen(comm, kFuncAllReduce, count, ncclFloat32), algo);
            for (size_t i = 0; i < count; ++i) in[i] = smallInt(r, i + size_t(call));
            const bool inPlace = call % 3 == 2;
            float* dst = inPlace ? in : out.data();
            ASSERT_EQ(ncclAllReduce(in, dst, count, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess)
                << ncclGetLastError(comm);
            size_t bad = 0;
            for (size_t i = 0; i < count; ++i) {
              float want = 0;
              for (int p = 0; p < n; ++p) want += smallInt(p, i + size_t(call));
              bad += dst[i] != want;
            }
            EXPECT_EQ(bad, 0u) << algo << ", rank " << r << " of " << n << ", call " << call << " (" << count
                               << " floats" << (inPlace ? ", in place)" : ")");
            std::memset(in, 0xff, count * sizeof(float));
          }
        expectNoAsyncError(comm);
        EXPECT_EQ(ncclCommWindowDeregister(comm, win), ncclSuccess);
        if (allocated != nullptr) {
          EXPECT_EQ(ncclMemFree(allocated), ncclSuccess);
        }
      },
      testing::Spaces::kPerRank);
  // Every mapping was closed: of the windows at deregistration, of the staging areas and FIFOs
  // with their communicators.
  EXPECT_EQ(testing::emulatedIpcMappings(), mappedBefore);
}

TEST(DirectLaneEmulation, RegisteredInputsAcrossProcessesAreReadInPlace) {
  for (const char* algo : {"DDAFlat", "DDATree"}) {
    Scope s(with(kSmallStaging, "NCCL_ALGO", algo));
    for (int n : {2, 3}) registeredAcrossAddressSpaces(algo, n);
  }
}

// Rank 1 (another process) deregisters a window that rank 0 keeps, then both call an AllReduce
// whose input lies in it: rank 0 publishes it by window row, and rank 1's kernel, which no longer
// finds the row, must fail the call saying why instead of folding a staging area rank 0 never
// filled; rank 0 then waits in vain at the closing barrier. That rank 1 fails is also what shows
// that rank 0 published rather than staged.
TEST(DirectLaneEmulation, WindowDeregisteredOnOneRankFailsItsReads) {
  Scope s(Env{{"NCCL_ALGO", "DDAFlat"}, {"WEFT_TIMEOUT_MS", "400"}});
  std::barrier sync(2);
  runRanks(
      2,
      [&](int r, ncclComm_t comm) {
        const size_t count = 40000, bytes = count * sizeof(float);  // 160 KB: flat AllReduce publishes
        void* in = nullptr;
        std::vector<float> out(count);
        ncclWindow_t win = nullptr;
        ASSERT_EQ(ncclMemAlloc(&in, bytes), ncclSuccess);
        ASSERT_EQ(ncclCommWindowRegister(comm, in, bytes, &win, NCCL_WIN_DEFAULT), ncclSuccess);
        std::fill_n(static_cast<float*>(in), count, 1.0f + float(r));
        ASSERT_EQ(ncclAllReduce(in, out.data(), count, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
        expectNoAsyncError(comm);
        EXPECT_EQ(out[count - 1], 3.0f);
        if (r == 1) {
          EXPECT_EQ(ncclCommWindowDeregister(comm, win), ncclSuccess);
        }
        sync.arrive_and_wait();
        EXPECT_EQ(ncclAllReduce(in, out.data(), count, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
        ncclResult_t async = ncclSuccess;
        EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
        const std::string msg = ncclGetLastError(comm);
        if (r == 1) {
          EXPECT_EQ(async, ncclInvalidUsage);
          EXPECT_NE(msg.find("rank 1 (GPU 0) cannot read the input rank 0 published in a window for AllReduce"),
                    std::string::npos)
              << msg;
        } else {
          EXPECT_EQ(async, ncclRemoteError);
          EXPECT_NE(msg.find("waiting for rank 1"), std::string::npos) << msg;
        }
        sync.arrive_and_wait();
        ASSERT_EQ(ncclCommAbort(comm), ncclSuccess);
        EXPECT_EQ(ncclMemFree(in), ncclSuccess);
      },
      testing::Spaces::kPerRank, /*destroy=*/false);
}

std::vector<uint32_t> bitsOf(const std::vector<float>& v) {
  std::vector<uint32_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) memcpy(&out[i], &v[i], sizeof(float));
  return out;
}

// Sixteen ranks on one (emulated) GPU: the most the direct lane is meant for on a node.
TEST(DirectLaneEmulation, DdaFlatOnSixteenRanks) {
  Scope s(with(kSmallStaging, "NCCL_ALGO", "DDAFlat"));
  ddaAllReduceExact("DDAFlat", 16, 777);
}

// A group with a direct-lane AllReduce and a ring AllGather is one launch of two blocks, which run
// side by side; both results must be right, over several calls.
TEST(DirectLaneEmulation, DirectAndRingSequencesInOneLaunch) {
  Scope s(with(kSmallStaging, "RCCL_OVERRIDE_ALGO", "DDAFlat"));
  const int n = 3;
  const size_t count = 4099;
  runRanks(n, [&](int r, ncclComm_t comm) {
    for (int call = 0; call < 3; ++call) {
      std::vector<float> a(count), gathered(count * n, -1.f);
      for (size_t i = 0; i < count; ++i) a[i] = smallInt(r, i + size_t(call));
      std::vector<float> sum(count, -1.f);
      ASSERT_EQ(ncclGroupStart(), ncclSuccess);
      ASSERT_EQ(ncclAllReduce(a.data(), sum.data(), 64, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
      ASSERT_EQ(ncclAllGather(a.data(), gathered.data(), count, ncclFloat32, comm, nullptr), ncclSuccess);
      ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(comm);
      expectNoAsyncError(comm);
      size_t bad = 0;
      for (size_t i = 0; i < 64; ++i) {
        float want = 0;
        for (int p = 0; p < n; ++p) want += smallInt(p, i + size_t(call));
        bad += sum[i] != want;
      }
      for (int q = 0; q < n; ++q)
        for (size_t i = 0; i < count; ++i) bad += gathered[size_t(q) * count + i] != smallInt(q, i + size_t(call));
      EXPECT_EQ(bad, 0u) << "rank " << r << ", call " << call;
    }
    EXPECT_EQ(chosen(comm, kFuncAllReduce, 64, ncclFloat32), "DDAFlat");
    EXPECT_EQ(chosen(comm, kFuncAllGather, count, ncclFloat32), "RING");
  });
}

// Sums that round: every rank must hold the same bits (flat folds in rank order everywhere; tree
// computes each slice once, at its owner), and they must be the sum to float precision.
TEST(DirectLaneEmulation, DdaResultsAreBitIdenticalOnEveryRank) {
  for (const char* algo : {"DDAFlat", "DDATree"}) {
    Scope s(with(kSmallStaging, "NCCL_ALGO", algo));
    const int n = 5;
    const size_t count = 12345;
    std::vector<std::vector<float>> outs(n);
    runRanks(n, [&](int r, ncclComm_t comm) {
      std::vector<float> send(count), recv(count);
      for (size_t i = 0; i < count; ++i) send[i] = noisy(r, i);
      ASSERT_EQ(ncclAllReduce(send.data(), recv.data(), count, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
      expectNoAsyncError(comm);
      outs[r] = recv;
    });
    size_t far = 0;
    for (size_t i = 0; i < count; ++i) {
      double exact = 0;
      for (int p = 0; p < n; ++p) exact += noisy(p, i);
      far += std::fabs(outs[0][i] - exact) > 1e-5;
    }
    EXPECT_EQ(far, 0u) << algo;
    for (int r = 1; r < n; ++r) EXPECT_EQ(bitsOf(outs[r]), bitsOf(outs[0])) << algo << ": rank " << r;
  }
}

// Other types and ops through the same kernel steps: int32 max, and bfloat16 sum with the
// average's division (post-op on the last fold), against the host executor's arithmetic.
TEST(DirectLaneEmulation, DdaIntegerMaxAndAverage) {
  Scope s(with(kSmallStaging, "NCCL_ALGO", "DDAFlat,DDATree"));
  const int n = 4;
  const size_t count = 3001;
  runRanks(n, [&](int r, ncclComm_t comm) {
    std::vector<int32_t> a(count), b(count);
    for (size_t i = 0; i < count; ++i) a[i] = static_cast<int32_t>((i * 7 + size_t(r) * 13) % 101) - 50;
    ASSERT_EQ(ncclAllReduce(a.data(), b.data(), count, ncclInt32, ncclMax, comm, nullptr), ncclSuccess);
    std::vector<double> x(count), y(count);
    for (size_t i = 0; i < count; ++i) x[i] = smallInt(r, i) * 4;
    ASSERT_EQ(ncclAllReduce(x.data(), y.data(), count, ncclFloat64, ncclAvg, comm, nullptr), ncclSuccess);
    expectNoAsyncError(comm);
    size_t bad = 0;
    for (size_t i = 0; i < count; ++i) {
      int32_t m = -1000;
      double sum = 0;
      for (int p = 0; p < n; ++p) {
        m = std::max(m, static_cast<int32_t>((i * 7 + size_t(p) * 13) % 101) - 50);
        sum += smallInt(p, i) * 4;
      }
      bad += b[i] != m;
      bad += y[i] != sum / n;
    }
    EXPECT_EQ(bad, 0u) << "rank " << r;
  });
}

// AllGather, ReduceScatter and AlltoAll by direct reads, where RCCL_ENABLE_DDA_* asks for them.
TEST(DirectLaneEmulation, DdaAllGatherReduceScatterAlltoAll) {
  Scope s(Env{{"RCCL_DDA_SENDBUF_BYTES", "65536"},
              {"RCCL_ENABLE_DDA_ALL_GATHER", "1"},
              {"RCCL_ENABLE_DDA_REDUCE_SCATTER", "1"},
              {"RCCL_ENABLE_DDA_ALL_TO_ALL", "1"}});
  for (int n : {2, 3, 4})
    for (size_t count : {size_t(1), size_t(999), size_t(5000)}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " count=" + std::to_string(count));
      runRanks(n, [&](int r, ncclComm_t comm) {
        for (int func : {kFuncAllGather, kFuncReduceScatter, kFuncAlltoAll})
          EXPECT_EQ(chosen(comm, func, count, ncclFloat32), "DDAFlat") << "function " << func;
        std::vector<float> in(count * n), out(count * n, -1.f), rs(count, -1.f);
        for (size_t i = 0; i < in.size(); ++i) in[i] = smallInt(r, i);
        ASSERT_EQ(ncclAllGather(in.data(), out.data(), count, ncclFloat32, comm, nullptr), ncclSuccess);
        size_t bad = 0;
        for (int q = 0; q < n; ++q)
          for (size_t i = 0; i < count; ++i) bad += out[size_t(q) * count + i] != smallInt(q, i);
        EXPECT_EQ(bad, 0u) << "AllGather, rank " << r;
        ASSERT_EQ(ncclReduceScatter(in.data(), rs.data(), count, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
        bad = 0;
        for (size_t i = 0; i < count; ++i) {
          float want = 0;
          for (int p = 0; p < n; ++p) want += smallInt(p, size_t(r) * count + i);
          bad += rs[i] != want;
        }
        EXPECT_EQ(bad, 0u) << "ReduceScatter, rank " << r;
        ASSERT_EQ(ncclAlltoAll(in.data(), out.data(), count, ncclFloat32, comm, nullptr), ncclSuccess);
        bad = 0;
        for (int q = 0; q < n; ++q)
          for (size_t i = 0; i < count; ++i) bad += out[size_t(q) * count + i] != smallInt(q, size_t(r) * count + i);
        EXPECT_EQ(bad, 0u) << "AlltoAll, rank " << r;
        expectNoAsyncError(comm);
      });
    }
}

// What a rank's FP8 view of x[0, n) decodes to (blocks of 256 from x).
std::vector<float> fp8RoundTrip(const float* x, size_t n) {
  std::vector<LowpBlock> blocks(lowpBlocks(n));
  lowpQuantize<float>(x, n, blocks.data(), 0, 1);
  std::vector<float> out(n);
  lowpDequantize<float>(blocks.data(), n, out.data(), 0, 1);
  return out;
}

// The float sum, in rank order, of every rank's FP8 view of its segment starting at `at`, block by
// block, re-quantized (AllReduce) or not (ReduceScatter): lowp_quant.h's reduction.
std::vector<float> fp8Sum(const std::vector<std::vector<float>>& in, size_t at, size_t n, bool requant) {
  const int nranks = static_cast<int>(in.size());
  std::vector<std::vector<LowpBlock>> q(nranks, std::vector<LowpBlock>(lowpBlocks(n)));
  for (int r = 0; r < nranks; ++r) lowpQuantize<float>(in[r].data() + at, n, q[r].data(), 0, 1);
  std::vector<float> out(n);
  for (size_t k = 0; k < lowpBlocks(n); ++k) {
    const size_t m = std::min(kLowpBlockElems, n - k * kLowpBlockElems);
    LowpBlock re{};
    lowpReduceBlock<float>([&](int r) { return &q[r][k]; }, nranks, m, requant ? &re : nullptr,
                           out.data() + k * kLowpBlockElems);
  }
  return out;
}

// The four FP8 collectives on n ranks, bit for bit against the single-source block functions.
void lowPrecisionMatches(int n, size_t count) {
  SCOPED_TRACE("n=" + std::to_string(n) + " count=" + std::to_string(count));
  std::vector<std::vector<float>> in(n, std::vector<float>(count * n));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count * n; ++i) in[r][i] = noisy(r, i) * float(1 + i % 7);
  runRanks(n, [&](int r, ncclComm_t comm) {
    for (int func : {kFuncAllReduce, kFuncAllGather, kFuncReduceScatter, kFuncAlltoAll})
      EXPECT_EQ(chosen(comm, func, count, ncclFloat32), "LowPrecision") << "function " << func;
    std::vector<float> out(count * n), one(count);
    ASSERT_EQ(ncclAllReduce(in[r].data(), one.data(), count, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
    EXPECT_EQ(one, fp8Sum(in, 0, count, true)) << "AllReduce, rank " << r;
    ASSERT_EQ(ncclAllGather(in[r].data(), out.data(), count, ncclFloat32, comm, nullptr), ncclSuccess);
    for (int q = 0; q < n; ++q)
      EXPECT_TRUE(
          std::equal(out.begin() + q * count, out.begin() + (q + 1) * count, fp8RoundTrip(in[q].data(), count).begin()))
          << "AllGather, rank " << r << ", block of rank " << q;
    ASSERT_EQ(ncclReduceScatter(in[r].data(), one.data(), count, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
    EXPECT_EQ(one, fp8Sum(in, size_t(r) * count, count, false)) << "ReduceScatter, rank " << r;
    ASSERT_EQ(ncclAlltoAll(in[r].data(), out.data(), count, ncclFloat32, comm, nullptr), ncclSuccess);
    for (int q = 0; q < n; ++q)
      EXPECT_TRUE(std::equal(out.begin() + q * count, out.begin() + (q + 1) * count,
                             fp8RoundTrip(in[q].data() + size_t(r) * count, count).begin()))
          << "AlltoAll, rank " << r << ", block from rank " << q;
    expectNoAsyncError(comm);
  });
}

// With a staging area small enough for several rounds.
TEST(DirectLaneEmulation, LowPrecisionCollectivesMatchTheBlockFunctions) {
  Scope s(Env{{"RCCL_LOW_PRECISION_ENABLE", "1"},
              {"WEFT_LOW_PRECISION_MIN_BYTES", "0"},
              {"RCCL_DDA_SENDBUF_BYTES", "65536"}});
  for (int n : {2, 3, 4})
    for (size_t count : {size_t(1), size_t(300), size_t(40000)}) lowPrecisionMatches(n, count);
}

// Several blocks run one direct sequence, each with its part of every step (direct_kernel.h
// stepPart), meeting at their rank's own barrier before the ranks meet. 3 blocks cut unevenly;
// with 256 KiB of staging a 40001-float AllReduce's steps reach 128 KiB, enough for 8 blocks.
TEST(DirectLaneEmulation, SeveralBlocksRunOneSequence) {
  for (const char* blocks : {"1", "3", "8"}) {
    SCOPED_TRACE(std::string("WEFT_DIRECT_BLOCKS=") + blocks);
    for (const char* algo : {"DDAFlat", "DDATree"}) {
      Scope s(Env{{"NCCL_ALGO", algo}, {"RCCL_DDA_SENDBUF_BYTES", "262144"}, {"WEFT_DIRECT_BLOCKS", blocks}});
      for (int n : {2, 5})
        for (size_t count : {size_t(1), size_t(65), size_t(4099), size_t(40001)}) ddaAllReduceExact(algo, n, count);
      // The launch has the blocks the largest step asks for, up to the setting.
      runRanks(2, [&](int, ncclComm_t comm) {
        std::vector<float> buf(40001, 1.f);
        ASSERT_EQ(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
        EXPECT_EQ(buf[40000], 2.f);
        EXPECT_EQ(testing::lastLaunchBlocks(), std::atoi(blocks)) << algo;
      });
    }
    Scope s(Env{{"RCCL_LOW_PRECISION_ENABLE", "1"},
                {"WEFT_LOW_PRECISION_MIN_BYTES", "0"},
                {"RCCL_DDA_SENDBUF_BYTES", "262144"},
                {"WEFT_DIRECT_BLOCKS", blocks}});
    lowPrecisionMatches(3, 40000);
  }
}

// Launches into a graph take the fenced path (a barrier before and after each direct sequence);
// captured and eager launches interleave on the same arrival counters and staging halves.
TEST(DirectLaneEmulation, CapturedAndEagerLaunchesInterleave) {
  Scope s(with(kSmallStaging, "NCCL_ALGO", "DDAFlat"));
  const int n = 3;
  const size_t count = 9000;  // two rounds
  runRanks(n, [&](int r, ncclComm_t comm) {
    for (int call = 0; call < 8; ++call) {
      testing::setEmulatedCapture(call % 3 != 2);
      std::vector<float> buf(count);
      for (size_t i = 0; i < count; ++i) buf[i] = smallInt(r, i + size_t(call));
      ASSERT_EQ(ncclAllReduce(buf.data(), buf.data(), count, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
      size_t bad = 0;
      for (size_t i = 0; i < count; ++i) {
        float want = 0;
        for (int p = 0; p < n; ++p) want += smallInt(p, i + size_t(call));
        bad += buf[i] != want;
      }
      EXPECT_EQ(bad, 0u) << "rank " << r << ", call " << call;
    }
    testing::setEmulatedCapture(false);
    expectNoAsyncError(comm);
  });
}

// Rank 1 takes part in the first AllReduce only: rank 0's kernel gives up at the barrier of the
// second after WEFT_TIMEOUT_MS, naming rank 1. With several blocks per sequence, the last of rank
// 0's blocks to reach the barrier waits for rank 1, reports it and releases the others, which stop
// without a second report.
void missingPeerIsNamed(size_t count, int blocks) {
  std::barrier sync(2);
  runRanks(2, [&](int r, ncclComm_t comm) {
    std::vector<float> buf(count, 1.f);
    ASSERT_EQ(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
    if (r == 0) {
      EXPECT_EQ(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
      EXPECT_EQ(testing::lastLaunchBlocks(), blocks);
      ncclResult_t async = ncclSuccess;
      EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
      EXPECT_EQ(async, ncclRemoteError);
      const std::string msg = ncclGetLastError(comm);
      EXPECT_NE(msg.find("rank 0 (GPU 0) timed out at a direct-access barrier waiting for rank 1 in AllReduce"),
                std::string::npos)
          << msg;
    }
    sync.arrive_and_wait();
  });
}

TEST(DirectLaneEmulation, MissingPeerAtTheBarrierIsNamed) {
  Scope s(Env{{"NCCL_ALGO", "DDAFlat"}, {"WEFT_TIMEOUT_MS", "400"}});
  missingPeerIsNamed(64, 1);
}

TEST(DirectLaneEmulation, MissingPeerIsNamedWithSeveralBlocks) {
  Scope s(Env{{"NCCL_ALGO", "DDAFlat"},
              {"WEFT_TIMEOUT_MS", "400"},
              {"RCCL_DDA_SENDBUF_BYTES", "262144"},
              {"WEFT_DIRECT_BLOCKS", "8"}});
  missingPeerIsNamed(40001, 8);
}

// Rank 1 never calls: rank 0 cannot map its staging area and says so after WEFT_TIMEOUT_MS.
TEST(DirectLaneEmulation, PeerThatNeverCreatesItsAreaIsNamed) {
  Scope s(Env{{"NCCL_ALGO", "DDAFlat"}, {"WEFT_TIMEOUT_MS", "400"}});
  std::barrier sync(2);
  runRanks(2, [&](int r, ncclComm_t comm) {
    if (r == 0) {
      std::vector<float> buf(64, 1.f);
      EXPECT_EQ(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr),
                ncclRemoteError);
      const std::string msg = ncclGetLastError(comm);
      EXPECT_NE(msg.find("for the direct-access staging areas of ranks 1 for AllReduce #"), std::string::npos) << msg;
    }
    sync.arrive_and_wait();
  });
}

// Different datatypes on the two ranks: the stamps meet at the first barrier, before any staged
// byte is read, and both ranks get the two-sided usage error.
TEST(DirectLaneEmulation, MismatchedCallsMeetAtTheBarrier) {
  Scope s(Env{{"NCCL_ALGO", "DDAFlat"}, {"WEFT_TIMEOUT_MS", "20000"}});
  std::barrier sync(2);
  runRanks(2, [&](int r, ncclComm_t comm) {
    std::vector<float> buf(100, 1.f);
    const auto t0 = std::chrono::steady_clock::now();
    const ncclResult_t res = ncclAllReduce(buf.data(), buf.data(), buf.size(), r == 0 ? ncclFloat32 : ncclInt32,
                                           ncclSum, comm, nullptr);
    ncclResult_t async = ncclSuccess;
    while (res == ncclSuccess && async == ncclSuccess &&
           std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
      EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
    EXPECT_EQ(res == ncclSuccess ? async : res, ncclInvalidUsage);
    const std::string msg = ncclGetLastError(comm);
    const std::string other = r == 0 ? "int32" : "float32";
    EXPECT_NE(msg.find("but rank " + std::to_string(1 - r) + " called ncclAllReduce(100 x " + other), std::string::npos)
        << msg;
    sync.arrive_and_wait();
  });
}

// With no setting, the tuner weighs the direct lane on GPU communicators with the GPU family's
// constants (an unknown family here): DDA for a small AllReduce, ring or tree for a large one.
TEST(DirectLaneEmulation, TheGpuModelPicksTheDirectLaneForSmallAllReduce) {
  Scope s(Env{});
  runRanks(4, [&](int, ncclComm_t comm) {
    const std::string small = chosen(comm, kFuncAllReduce, 64, ncclFloat32);
    EXPECT_TRUE(small == "DDAFlat" || small == "DDATree") << small;
    const std::string large = chosen(comm, kFuncAllReduce, size_t(16) << 20, ncclFloat32);
    EXPECT_TRUE(large == "RING" || large == "TREE") << large;
    std::vector<float> buf(64, 1.f);
    ASSERT_EQ(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
    EXPECT_EQ(buf[63], 4.f);
  });
}

}  // namespace
}  // namespace weft
