// The GPU executor end to end, on CPU threads: communicators take the GPU path (device setup, P2P
// FIFOs in "device" memory, launch descriptors, device-resident counters) and step_kernel.cu runs
// with one CPU thread per block (kernel_emulation.h). Results are checked exactly; a peer that never
// comes must surface as the kernel's error record, naming the rank it waited for.
#include <gtest/gtest.h>

#include <barrier>
#include <chrono>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "emulation_ranks.h"
#include "nccl.h"
#include "runtime/device_runtime.h"
#include "weft/weft.h"

namespace weft {
namespace {

using testing::Env;
using testing::expectNoAsyncError;
using testing::runRanks;
using testing::Scope;

int64_t value(int rank, size_t i) { return rank + 1 + static_cast<int64_t>(i % 13); }

// AllReduce float sum of small integers (exact in any order), `repeats` times on one communicator
// so that the link counters must carry over from launch to launch.
void allReduceCase(int n, size_t count, bool inPlace, int repeats = 1, testing::Spaces spaces = testing::Spaces::kOne) {
  auto rank = [&](int r, ncclComm_t comm) {
    for (int rep = 0; rep < repeats; ++rep) {
      std::vector<float> send(count), recv(count, -1.f);
      for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>(value(r, i + rep));
      float* out = inPlace ? send.data() : recv.data();
      ASSERT_EQ(ncclAllReduce(send.data(), out, count, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess)
          << ncclGetLastError(comm);
      expectNoAsyncError(comm);
      size_t bad = 0;
      for (size_t i = 0; i < count; ++i) {
        int64_t want = 0;
        for (int p = 0; p < n; ++p) want += value(p, i + rep);
        bad += out[i] != static_cast<float>(want);
      }
      EXPECT_EQ(bad, 0u) << "rank " << r << ", " << count << " elements, call " << rep;
    }
  };
  runRanks(n, rank, spaces);
}

TEST(KernelEmulation, AllReduceRingSizes) {
  Scope s(Env{});
  for (int n : {1, 2, 3, 4})
    for (size_t count : {size_t(1), size_t(1000), size_t(300000)}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " count=" + std::to_string(count));
      allReduceCase(n, count, false);
    }
}

TEST(KernelEmulation, AllReduceInPlaceRepeated) {
  Scope s(Env{});
  allReduceCase(3, 70000, true, 4);
}

TEST(KernelEmulation, AllReduceTree) {
  Scope s(Env{{"NCCL_ALGO", "Tree"}});
  allReduceCase(4, 200000, false, 2);
}

// GPU ranks of different processes: each rank's P2P FIFOs reach its peers only through IPC handles
// (ranks with address spaces of their own; emulated_runtime.h), in write and in read mode.
TEST(KernelEmulation, P2pFifosAcrossProcesses) {
  const size_t before = testing::emulatedIpcMappings();
  for (const char* read : {"0", "1"}) {
    Scope s(Env{{"NCCL_P2P_READ_ENABLE", read}});
    allReduceCase(3, 100000, false, 2, testing::Spaces::kPerRank);
    allReduceCase(2, 1000, true, 3, testing::Spaces::kPerRank);
  }
  EXPECT_EQ(testing::emulatedIpcMappings(), before) << "a FIFO's IPC mapping outlived its communicator";
}

TEST(KernelEmulation, P2pReadMode) {
  Scope s(Env{{"NCCL_P2P_READ_ENABLE", "1"}});
  allReduceCase(3, 100000, false, 2);
}

TEST(KernelEmulation, SharedMemoryStagingWhenP2pDisabled) {
  Scope s(Env{{"NCCL_P2P_DISABLE", "1"}});
  allReduceCase(3, 100000, false, 2);
}

TEST(KernelEmulation, NetworkProxyWhenShmDisabled) {
  Scope s(Env{{"NCCL_SHM_DISABLE", "1"}});
  allReduceCase(2, 100000, false, 2);
}

TEST(KernelEmulation, IntegerOpsAndAverage) {
  Scope s(Env{});
  const int n = 3;
  const size_t count = 5000;
  runRanks(n, [&](int r, ncclComm_t comm) {
    for (ncclRedOp_t op : {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg}) {
      std::vector<int32_t> send(count), recv(count);
      for (size_t i = 0; i < count; ++i) send[i] = static_cast<int32_t>(value(r, i) - 5);
      ASSERT_EQ(ncclAllReduce(send.data(), recv.data(), count, ncclInt32, op, comm, nullptr), ncclSuccess);
      size_t bad = 0;
      for (size_t i = 0; i < count; ++i) {
        int64_t acc = value(0, i) - 5;
        for (int p = 1; p < n; ++p) {
          const int64_t x = value(p, i) - 5;
          acc = op == ncclProd  ? acc * x
                : op == ncclMax ? std::max(acc, x)
                : op == ncclMin ? std::min(acc, x)
                                : acc + x;
        }
        if (op == ncclAvg) acc /= n;  // integer average truncates toward zero, as C++ does
        bad += recv[i] != static_cast<int32_t>(acc);
      }
      EXPECT_EQ(bad, 0u) << "rank " << r << " op " << op;
    }
  });
}

// Weft's complex types through the kernel's element loops: sum, complex product, average and
// PreMulSum with a complex scalar (host and device forms) on AllReduce, and ReduceScatter's avg.
// The inputs are Gaussian integers, so every result is exact (an average is one rounding of an
// exact sum) whatever order the ranks are folded in; `tree` forces the tree algorithm.
template <typename T>
void complexCase(int n, size_t count) {
  using C = std::complex<T>;
  const ncclDataType_t dt = sizeof(T) == 4 ? weftComplex64 : weftComplex128;
  // Parts in [-1, 2]: a product over n <= 4 ranks stays far inside float's exact integers.
  auto in = [](int r, size_t i) {
    return C(static_cast<T>(static_cast<int>((r + 2 * i) % 4) - 1),
             static_cast<T>(static_cast<int>((r * 3 + i + 1) % 4) - 1));
  };
  auto scalar = [](int r) { return C(static_cast<T>(r % 3 - 1), static_cast<T>(1 + r % 2)); };
  runRanks(n, [&](int r, ncclComm_t comm) {
    enum { kSum, kProd, kAvg, kPreHost, kPreDev, kCases };
    for (int k = 0; k < kCases; ++k) {
      std::vector<C> send(count), recv(count, C(-7, -7));
      for (size_t i = 0; i < count; ++i) send[i] = in(r, i);
      ncclRedOp_t op = k == kSum ? ncclSum : k == kProd ? ncclProd : ncclAvg;
      C s = k == kPreDev ? C(99, 99) : scalar(r);
      if (k == kPreHost || k == kPreDev) {
        ASSERT_EQ(ncclRedOpCreatePreMulSum(&op, &s, dt, k == kPreDev ? ncclScalarDevice : ncclScalarHostImmediate,
                                           comm),
                  ncclSuccess);
        s = k == kPreDev ? scalar(r) : C(99, 99);  // a host scalar was copied; a device one is read later
      }
      ASSERT_EQ(ncclAllReduce(send.data(), recv.data(), count, dt, op, comm, nullptr), ncclSuccess)
          << ncclGetLastError(comm);
      expectNoAsyncError(comm);
      if (k == kPreHost || k == kPreDev) {
        EXPECT_EQ(ncclRedOpDestroy(op, comm), ncclSuccess);
      }
      size_t bad = 0;
      for (size_t i = 0; i < count; ++i) {
        C acc = k == kProd ? C(1, 0) : C(0, 0);
        for (int p = 0; p < n; ++p)
          acc = k == kProd ? acc * in(p, i) : acc + (k >= kPreHost ? in(p, i) * scalar(p) : in(p, i));
        if (k == kAvg) acc = C(acc.real() / static_cast<T>(n), acc.imag() / static_cast<T>(n));
        bad += recv[i] != acc;
      }
      EXPECT_EQ(bad, 0u) << "rank " << r << " case " << k << " " << sizeof(C) << "-byte complex";
    }
    // ReduceScatter avg: rank r's block of the n-block vector.
    std::vector<C> all(count * n), part(count);
    for (size_t i = 0; i < all.size(); ++i) all[i] = in(r, i);
    ASSERT_EQ(ncclReduceScatter(all.data(), part.data(), count, dt, ncclAvg, comm, nullptr), ncclSuccess);
    expectNoAsyncError(comm);
    size_t bad = 0;
    for (size_t i = 0; i < count; ++i) {
      C acc(0, 0);
      for (int p = 0; p < n; ++p) acc += in(p, r * count + i);
      bad += part[i] != C(acc.real() / static_cast<T>(n), acc.imag() / static_cast<T>(n));
    }
    EXPECT_EQ(bad, 0u) << "rank " << r << " ReduceScatter avg";
  });
}

TEST(KernelEmulation, ComplexReductions) {
  Scope s(Env{});
  complexCase<float>(3, 20000);
  complexCase<double>(4, 3001);
}

TEST(KernelEmulation, ComplexReductionsTree) {
  Scope s(Env{{"NCCL_ALGO", "Tree"}});
  complexCase<double>(4, 20000);
}

TEST(KernelEmulation, OtherCollectivesAndGroups) {
  Scope s(Env{});
  const int n = 4;
  const size_t count = 30000;  // per rank
  runRanks(n, [&](int r, ncclComm_t comm) {
    std::vector<float> mine(count), all(count * n), part(count), got(count * n), bcast(count);
    for (size_t i = 0; i < count; ++i) mine[i] = bcast[i] = static_cast<float>(value(r, i));
    for (size_t i = 0; i < count * n; ++i) all[i] = static_cast<float>(value(r, i));
    // One group: AllGather, ReduceScatter, Broadcast from rank 2, fused into one launch.
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ncclAllGather(mine.data(), got.data(), count, ncclFloat32, comm, nullptr);
    ncclReduceScatter(all.data(), part.data(), count, ncclFloat32, ncclSum, comm, nullptr);
    ncclBroadcast(bcast.data(), bcast.data(), count, ncclFloat32, 2, comm, nullptr);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(comm);
    expectNoAsyncError(comm);
    size_t bad = 0;
    for (int p = 0; p < n; ++p)
      for (size_t i = 0; i < count; ++i) bad += got[p * count + i] != static_cast<float>(value(p, i));
    EXPECT_EQ(bad, 0u) << "AllGather on rank " << r;
    bad = 0;
    for (size_t i = 0; i < count; ++i) {
      int64_t want = 0;
      for (int p = 0; p < n; ++p) want += value(p, r * count + i);
      bad += part[i] != static_cast<float>(want);
    }
    EXPECT_EQ(bad, 0u) << "ReduceScatter on rank " << r;
    bad = 0;
    for (size_t i = 0; i < count; ++i) bad += bcast[i] != static_cast<float>(value(2, i));
    EXPECT_EQ(bad, 0u) << "Broadcast on rank " << r;

    // AlltoAll, then a ring of point-to-point transfers.
    std::vector<float> a2a(count * n);
    ASSERT_EQ(ncclAlltoAll(all.data(), a2a.data(), count, ncclFloat32, comm, nullptr), ncclSuccess);
    bad = 0;
    for (int p = 0; p < n; ++p)
      for (size_t i = 0; i < count; ++i) bad += a2a[p * count + i] != static_cast<float>(value(p, r * count + i));
    EXPECT_EQ(bad, 0u) << "AlltoAll on rank " << r;
    std::vector<float> fromPrev(count);
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ncclSend(mine.data(), count, ncclFloat32, (r + 1) % n, comm, nullptr);
    ncclRecv(fromPrev.data(), count, ncclFloat32, (r + n - 1) % n, comm, nullptr);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(comm);
    bad = 0;
    for (size_t i = 0; i < count; ++i) bad += fromPrev[i] != static_cast<float>(value((r + n - 1) % n, i));
    EXPECT_EQ(bad, 0u) << "Send/Recv on rank " << r;
  });
}

// Rank 1 takes part in one AllReduce and not the second: rank 0's kernel gives up after
// WEFT_TIMEOUT_MS and its error record becomes the communicator's error, naming rank 1.
TEST(KernelEmulation, MissingPeerBecomesAnErrorNamingIt) {
  Scope s(Env{{"WEFT_TIMEOUT_MS", "400"}});
  std::barrier sync(2);
  runRanks(2, [&](int r, ncclComm_t comm) {
    std::vector<float> buf(4096, 1.f);
    ASSERT_EQ(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
    if (r == 0) {
      EXPECT_EQ(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
      ncclResult_t async = ncclSuccess;
      EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
      EXPECT_EQ(async, ncclRemoteError);
      const std::string msg = ncclGetLastError(comm);
      EXPECT_NE(msg.find("rank 0 (GPU 0) timed out"), std::string::npos) << msg;
      EXPECT_NE(msg.find("rank 1 in AllReduce"), std::string::npos) << msg;
    }
    sync.arrive_and_wait();
  });
}

// The ranks call AllReduce with different datatypes: each kernel finds the peer's stamp in the
// slot header of the first message, and the host turns its error record into the same two-sided
// text as the host executor's, as a usage error (not a timeout: WEFT_TIMEOUT_MS is far away).
TEST(KernelEmulation, MismatchedCallsNameBothSides) {
  Scope s(Env{{"WEFT_TIMEOUT_MS", "20000"}});
  std::barrier sync(2);
  runRanks(2, [&](int r, ncclComm_t comm) {
    std::vector<float> buf(1000, 1.f);
    const auto t0 = std::chrono::steady_clock::now();
    const ncclResult_t res = ncclAllReduce(buf.data(), buf.data(), buf.size(), r == 0 ? ncclFloat32 : ncclInt32,
                                           ncclSum, comm, nullptr);
    ncclResult_t async = ncclSuccess;
    // A GPU launch may return before its kernel fails; the error arrives as the async state.
    while (res == ncclSuccess && async == ncclSuccess &&
           std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
      EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    EXPECT_EQ(res == ncclSuccess ? async : res, ncclInvalidUsage);
    const std::string msg = ncclGetLastError(comm);
    const std::string self = r == 0 ? "float32" : "int32", other = r == 0 ? "int32" : "float32";
    EXPECT_NE(msg.find("rank " + std::to_string(r) + " called ncclAllReduce(1000 x " + self + ", sum)"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("but rank " + std::to_string(1 - r) + " called ncclAllReduce(1000 x " + other + ", sum)"),
              std::string::npos)
        << msg;
    sync.arrive_and_wait();
  });
}

// Rank 1 never calls: rank 0's link setup gives up after WEFT_TIMEOUT_MS with an error naming the
// peer, the link and the operation.
TEST(KernelEmulation, PeerThatNeverConnectsIsNamed) {
  Scope s(Env{{"WEFT_TIMEOUT_MS", "400"}});
  std::barrier sync(2);
  runRanks(2, [&](int r, ncclComm_t comm) {
    if (r == 0) {
      std::vector<float> buf(256, 1.f);
      EXPECT_EQ(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr),
                ncclRemoteError);
      const std::string msg = ncclGetLastError(comm);
      EXPECT_NE(msg.find("for rank 1 to set up"), std::string::npos) << msg;
      EXPECT_NE(msg.find("for AllReduce #"), std::string::npos) << msg;
    }
    sync.arrive_and_wait();
  });
}

}  // namespace
}  // namespace weft
