// Registered inputs that DDA AllReduce reads in place (program/step.h kStepPublish): when every
// rank is a thread of one process, a rank whose input lies in a registered buffer stages nothing
// and its peers fold straight from that buffer. Across processes every rank stages, and the same
// calls must give the same results.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

// Each rank refills its input the moment a call returns, as a training loop does: a rank that left
// while a peer still folded its input would corrupt that peer's result. Odd ranks register with
// ncclCommRegister and even ranks as windows, except rank 3, which does not register at all; every
// third call is in place (which stages even a registered input). One float is below the 8 KiB from
// which flat AllReduce publishes; the others take one round, and with the variants' 64 KiB staging
// area several.
TEST(RegisteredInputs, PeersFoldInputsThatRanksRefillAtOnce) {
  EXPECT_RUN_OK(runRanks(kTier, 4, [](RankCtx& ctx) {
    constexpr size_t kMax = 20011;
    std::vector<float> in(kMax), out(kMax);
    void* handle = nullptr;
    ncclWindow_t win = nullptr;
    const size_t bytes = kMax * sizeof(float);
    if (ctx.rank % 2 == 1 && ctx.rank != 3 &&
        !ctx.ok(ncclCommRegister(ctx.comm, in.data(), bytes, &handle), "ncclCommRegister", ctx.comm))
      return;
    // Window registration is collective: every rank takes part, rank 3 with a buffer it never uses.
    std::vector<float> spare(16);
    void* winBuf = ctx.rank % 2 == 0 ? static_cast<void*>(in.data()) : static_cast<void*>(spare.data());
    const size_t winBytes = ctx.rank % 2 == 0 ? bytes : spare.size() * sizeof(float);
    if (!ctx.ok(ncclCommWindowRegister(ctx.comm, winBuf, winBytes, &win, NCCL_WIN_DEFAULT), "ncclCommWindowRegister",
                ctx.comm))
      return;
    int call = 0;
    for (size_t count : {size_t(1), size_t(3000), size_t(kMax)})
      for (int iter = 0; iter < 12; ++iter, ++call) {
        auto value = [&](int r, size_t i) { return float((r + 1) * (call + 1)) + float(i % 13); };
        for (size_t i = 0; i < count; ++i) in[i] = value(ctx.rank, i);
        const bool inPlace = call % 3 == 2;
        float* dst = inPlace ? in.data() : out.data();
        if (!ctx.ok(ncclAllReduce(in.data(), dst, count, ncclFloat32, ncclSum, ctx.comm, nullptr), "ncclAllReduce",
                    ctx.comm))
          return;
        for (size_t i = 0; i < count; ++i) {
          float want = 0;
          for (int r = 0; r < ctx.nranks; ++r) want += value(r, i);
          if (dst[i] != want)
            return ctx.failf("call %d (%zu floats%s): element %zu is %g, expected %g", call, count,
                             inPlace ? ", in place" : "", i, dst[i], want);
        }
        // Refill at once with what no call of this test sums to.
        std::memset(in.data(), 0xff, count * sizeof(float));
      }
    ctx.ok(ncclCommWindowDeregister(ctx.comm, win), "ncclCommWindowDeregister", ctx.comm);
    if (handle != nullptr) ctx.ok(ncclCommDeregister(ctx.comm, handle), "ncclCommDeregister", ctx.comm);
  }));
}

}  // namespace
}  // namespace weft_test
