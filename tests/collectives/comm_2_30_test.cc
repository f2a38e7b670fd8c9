// NCCL 2.30's communicator calls: ncclCommGrow with ncclCommGetUniqueId (ranks join a running
// communicator and keep their numbers), ncclCommSuspend/ncclCommResume/ncclCommMemStats, and
// ncclWinGetUserPtr.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

// An id handed from one rank to the others, threads and forked processes alike: the mapping is
// made before the ranks start.
class SharedId {
 public:
  SharedId() {
    void* p = mmap(nullptr, sizeof(Slot), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    slot_ = p == MAP_FAILED ? nullptr : new (p) Slot();
  }
  ~SharedId() {
    if (slot_ != nullptr) munmap(slot_, sizeof(Slot));
  }
  SharedId(const SharedId&) = delete;
  SharedId& operator=(const SharedId&) = delete;
  bool valid() const { return slot_ != nullptr; }
  void publish(const ncclUniqueId& id) {
    slot_->id = id;
    slot_->ready.store(1, std::memory_order_release);
  }
  bool take(ncclUniqueId* id, double timeoutSec) const {
    const double end = nowSeconds() + timeoutSec;
    while (slot_->ready.load(std::memory_order_acquire) == 0)
      if (nowSeconds() > end) return false;
    *id = slot_->id;
    return true;
  }

 private:
  struct Slot {
    std::atomic<int> ready{0};
    ncclUniqueId id{};
  };
  Slot* slot_ = nullptr;
};

// Ranks 0 and 1 run a communicator; ranks 2 and 3 join it through ncclCommGrow. Every rank keeps
// or gets its number, the grown communicator reduces over all four, and the old one still works.
TEST(CommGrow, TwoRanksJoinARunningCommunicator) {
  SharedId shared;
  ASSERT_TRUE(shared.valid());
  RunOptions opts;
  opts.initComm = false;
  EXPECT_RUN_OK(runRanks(
      kTier, 4,
      [&shared](RankCtx& ctx) {
        const bool existing = ctx.rank < 2;
        ncclComm_t grown = nullptr;
        if (existing) {
          if (!ctx.ok(ncclCommInitRank(&ctx.comm, 2, ctx.id, ctx.rank), "ncclCommInitRank(2 ranks)")) {
            ctx.comm = nullptr;
            return;
          }
          checkSum(ctx, ctx.comm, ctx.rank + 1, 3, "AllReduce before the grow");
          ncclUniqueId id{};
          if (ctx.rank == 0) {
            if (!ctx.ok(ncclCommGetUniqueId(ctx.comm, &id), "ncclCommGetUniqueId", ctx.comm)) return;
            ncclUniqueId second{};
            ctx.expect(ncclCommGetUniqueId(ctx.comm, &second), ncclInvalidUsage,
                       "a second ncclCommGetUniqueId before the grow");
            shared.publish(id);
          }
          ctx.ok(ncclCommGrow(ctx.comm, 4, ctx.rank == 0 ? &id : nullptr, -1, &grown, nullptr),
                 "ncclCommGrow (existing rank)", ctx.comm);
        } else {
          ncclUniqueId id{};
          if (!shared.take(&id, 30)) return ctx.fail("rank 0 never published the grow id");
          ctx.ok(ncclCommGrow(nullptr, 4, &id, ctx.rank, &grown, nullptr), "ncclCommGrow (joining rank)");
        }
        if (grown == nullptr) return ctx.fail("ncclCommGrow gave no communicator");
        expectShape(ctx, grown, 4, ctx.rank, "grown communicator");
        checkSum(ctx, grown, ctx.rank, 0 + 1 + 2 + 3, "AllReduce on the grown communicator");
        ctx.ok(ncclCommDestroy(grown), "ncclCommDestroy(grown)");
        if (existing) {
          checkSum(ctx, ctx.comm, 10, 20, "AllReduce on the old communicator after the grow");
          ctx.ok(ncclCommDestroy(ctx.comm), "ncclCommDestroy(old)");
          ctx.comm = nullptr;
        }
      },
      opts));
}

// Wrong uses are refused with the same answer on every rank, and leave the communicator usable.
TEST(CommGrow, RefusesWrongUse) {
  EXPECT_RUN_OK(runRanks(kTier, 2, [](RankCtx& ctx) {
    ncclComm_t grown = reinterpret_cast<ncclComm_t>(static_cast<uintptr_t>(0x5a5a5a));
    ncclUniqueId id{};
    ctx.expect(ncclCommGrow(ctx.comm, 3, nullptr, ctx.rank, &grown, nullptr), ncclInvalidArgument,
               "ncclCommGrow with rank != -1 on an existing rank");
    if (grown != nullptr) ctx.fail("a refused ncclCommGrow must set *newcomm to NULL");
    ctx.expect(ncclCommGrow(ctx.comm, 1, nullptr, -1, &grown, nullptr), ncclInvalidArgument,
               "ncclCommGrow to fewer ranks");
    // Nobody passes an id: every rank must hear so, and none may wait for a rendezvous.
    ctx.expect(ncclCommGrow(ctx.comm, 2, nullptr, -1, &grown, nullptr), ncclInvalidArgument,
               "ncclCommGrow without an id on any rank");
    // An id this communicator did not make.
    if (ctx.rank == 0) ctx.ok(ncclGetUniqueId(&id), "ncclGetUniqueId");
    ctx.expect(ncclCommGrow(ctx.comm, 2, ctx.rank == 0 ? &id : nullptr, -1, &grown, nullptr), ncclInvalidArgument,
               "ncclCommGrow with an id from ncclGetUniqueId");
    // Growing to the same size is a copy of the communicator; the id is then used up.
    if (ctx.rank == 0) ctx.ok(ncclCommGetUniqueId(ctx.comm, &id), "ncclCommGetUniqueId", ctx.comm);
    if (!ctx.ok(ncclCommGrow(ctx.comm, 2, ctx.rank == 0 ? &id : nullptr, -1, &grown, nullptr),
                "ncclCommGrow to the same size", ctx.comm))
      return;
    checkSum(ctx, grown, 5, 10, "AllReduce on the copy");
    ctx.ok(ncclCommDestroy(grown), "ncclCommDestroy(copy)");
    ctx.expect(ncclCommGrow(ctx.comm, 2, ctx.rank == 0 ? &id : nullptr, -1, &grown, nullptr), ncclInvalidArgument,
               "ncclCommGrow with an id already used");
    checkSum(ctx, ctx.comm, 1, 2, "AllReduce after the refused grows");
  }));
}

uint64_t memStat(RankCtx& ctx, ncclComm_t comm, ncclCommMemStat_t stat, const char* what) {
  uint64_t v = ~0ull;
  ctx.ok(ncclCommMemStats(comm, stat, &v), what, comm);
  return v;
}

// Suspend releases every FIFO and staging area (the stats say so, and operations are refused);
// resume brings the communicator back, and its collectives are right again, with new FIFOs.
TEST(CommSuspend, ReleasesMemoryAndResumes) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    // Large enough to need the ring's FIFOs, small enough for the one-shot path too.
    checkSum(ctx, ctx.comm, ctx.rank, 0 + 1 + 2, "AllReduce before suspend");
    std::vector<float> big(1 << 18, 1.0f);
    ctx.ok(ncclAllReduce(big.data(), big.data(), big.size(), ncclFloat32, ncclSum, ctx.comm, nullptr),
           "large AllReduce before suspend", ctx.comm);
    const uint64_t releasable = memStat(ctx, ctx.comm, ncclStatGpuMemSuspend, "ncclStatGpuMemSuspend");
    const uint64_t persist = memStat(ctx, ctx.comm, ncclStatGpuMemPersist, "ncclStatGpuMemPersist");
    const uint64_t total = memStat(ctx, ctx.comm, ncclStatGpuMemTotal, "ncclStatGpuMemTotal");
    if (releasable == 0) ctx.fail("a communicator that ran collectives holds no releasable memory");
    if (total != releasable + persist)
      ctx.failf("total %llu is not releasable %llu + persistent %llu", static_cast<unsigned long long>(total),
                static_cast<unsigned long long>(releasable), static_cast<unsigned long long>(persist));
    if (memStat(ctx, ctx.comm, ncclStatGpuMemSuspended, "ncclStatGpuMemSuspended") != 0)
      ctx.fail("an active communicator reports itself suspended");

    ctx.expect(ncclCommResume(ctx.comm), ncclInvalidUsage, "ncclCommResume on an active communicator");
    ctx.expect(ncclCommSuspend(ctx.comm, 0x10), ncclInvalidArgument, "ncclCommSuspend with an unknown flag");
    // Ranks that disagree all refuse: one side dropping its FIFOs while the other kept them would hang.
    ctx.expect(ncclCommSuspend(ctx.comm, ctx.rank == 1 ? 0 : NCCL_SUSPEND_MEM), ncclInvalidArgument,
               "ncclCommSuspend with flags that differ between ranks");
    checkSum(ctx, ctx.comm, 1, 3, "AllReduce after the refused suspends");
    if (!ctx.ok(ncclCommSuspend(ctx.comm, NCCL_SUSPEND_MEM), "ncclCommSuspend(NCCL_SUSPEND_MEM)", ctx.comm)) return;
    if (memStat(ctx, ctx.comm, ncclStatGpuMemSuspend, "ncclStatGpuMemSuspend (suspended)") != 0)
      ctx.fail("memory is still held after ncclCommSuspend(NCCL_SUSPEND_MEM)");
    if (memStat(ctx, ctx.comm, ncclStatGpuMemSuspended, "ncclStatGpuMemSuspended (suspended)") != 1)
      ctx.fail("a suspended communicator does not report itself suspended");
    if (memStat(ctx, ctx.comm, ncclStatGpuMemPersist, "ncclStatGpuMemPersist (suspended)") != persist)
      ctx.fail("suspend changed the persistent memory");
    int64_t x = 1;
    ctx.expect(ncclAllReduce(&x, &x, 1, ncclInt64, ncclSum, ctx.comm, nullptr), ncclInvalidUsage,
               "AllReduce on a suspended communicator");
    if (lastError(ctx.comm).find("suspended") == std::string::npos)
      ctx.failf("the refusal does not say the communicator is suspended: %s", lastError(ctx.comm).c_str());

    if (!ctx.ok(ncclCommResume(ctx.comm), "ncclCommResume", ctx.comm)) return;
    checkSum(ctx, ctx.comm, ctx.rank + 1, 1 + 2 + 3, "AllReduce after resume");
    std::fill(big.begin(), big.end(), 2.0f);
    if (ctx.ok(ncclAllReduce(big.data(), big.data(), big.size(), ncclFloat32, ncclSum, ctx.comm, nullptr),
               "large AllReduce after resume", ctx.comm) &&
        (big[0] != 6.0f || big.back() != 6.0f))
      ctx.failf("large AllReduce after resume gave %g, expected 6", big[0]);
    if (memStat(ctx, ctx.comm, ncclStatGpuMemSuspend, "ncclStatGpuMemSuspend (resumed)") == 0)
      ctx.fail("the resumed communicator made no FIFOs again");

    // Without NCCL_SUSPEND_MEM nothing is released, but the communicator still pauses.
    if (ctx.ok(ncclCommSuspend(ctx.comm, 0), "ncclCommSuspend(0)", ctx.comm)) {
      if (memStat(ctx, ctx.comm, ncclStatGpuMemSuspend, "ncclStatGpuMemSuspend (flags 0)") == 0)
        ctx.fail("ncclCommSuspend(0) released memory");
      ctx.ok(ncclCommResume(ctx.comm), "ncclCommResume after ncclCommSuspend(0)", ctx.comm);
      checkSum(ctx, ctx.comm, 2, 6, "AllReduce after the second resume");
    }
  }));
}

// The communicator owns its windows: a deregistered (or foreign) handle is refused, not freed
// twice, and a window never deregistered goes with the communicator (the ASan build's leak check
// sees it otherwise).
TEST(CommWindows, GetUserPtr) {
  EXPECT_RUN_OK(runRanks(kTier, 2, [](RankCtx& ctx) {
    std::vector<char> buf(8192), kept(64);
    ncclWindow_t win = nullptr;
    if (!ctx.ok(ncclCommWindowRegister(ctx.comm, buf.data(), buf.size(), &win, NCCL_WIN_STRICT_ORDERING),
                "ncclCommWindowRegister(NCCL_WIN_STRICT_ORDERING)", ctx.comm))
      return;
    void* p = nullptr;
    ctx.ok(ncclWinGetUserPtr(ctx.comm, win, &p), "ncclWinGetUserPtr", ctx.comm);
    if (p != buf.data()) ctx.failf("ncclWinGetUserPtr gave %p, registered %p", p, static_cast<void*>(buf.data()));
    ctx.expect(ncclWinGetUserPtr(ctx.comm, win, nullptr), ncclInvalidArgument, "ncclWinGetUserPtr(NULL out)");
    ncclWindow_t left = nullptr;
    ctx.ok(ncclCommWindowRegister(ctx.comm, kept.data(), kept.size(), &left, NCCL_WIN_DEFAULT),
           "ncclCommWindowRegister (never deregistered)", ctx.comm);
    ctx.ok(ncclCommWindowDeregister(ctx.comm, win), "ncclCommWindowDeregister", ctx.comm);
    ctx.expect(ncclCommWindowDeregister(ctx.comm, win), ncclInvalidArgument, "ncclCommWindowDeregister twice",
               ctx.comm);
    ctx.expect(ncclWinGetUserPtr(ctx.comm, win, &p), ncclInvalidArgument, "ncclWinGetUserPtr after deregistration",
               ctx.comm);
    if (lastError(ctx.comm).find("not a window of this communicator") == std::string::npos)
      ctx.failf("the refusal of a deregistered window does not say why: %s", lastError(ctx.comm).c_str());
  }));
}

}  // namespace
}  // namespace weft_test
