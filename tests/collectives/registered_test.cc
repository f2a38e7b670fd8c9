// Registered inputs that DDA AllReduce reads in place (program/step.h kStepPublish). Between
// threads of one process a rank whose input lies in a buffer it registered stages nothing and its
// peers fold straight from that buffer; between processes the same holds for a window over
// ncclMemAlloc memory, which every rank maps at registration. Other inputs are staged, and every
// mix must give the same results.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

// Each rank refills its input the moment a call returns, as a training loop does: a rank that left
// while a peer still folded its input would corrupt that peer's result. Odd ranks register with
// ncclCommRegister (read in place between threads only) and even ranks as windows over
// ncclMemAlloc memory (in place between processes too), except rank 3, which does not register at
// all; every third call is in place (which stages even a registered input). One float is below the
// 8 KiB from which flat AllReduce publishes; the others take one round, and with the variants'
// 64 KiB staging area several.
TEST(RegisteredInputs, PeersFoldInputsThatRanksRefillAtOnce) {
  EXPECT_RUN_OK(runRanks(kTier, 4, [](RankCtx& ctx) {
    constexpr size_t kMax = 20011;
    const size_t bytes = kMax * sizeof(float);
    const bool window = ctx.rank % 2 == 0;
    std::vector<float> plain(window ? 0 : kMax), out(kMax);
    void* allocated = nullptr;
    if (window && !ctx.ok(ncclMemAlloc(&allocated, bytes), "ncclMemAlloc")) return;
    float* in = window ? static_cast<float*>(allocated) : plain.data();
    void* handle = nullptr;
    ncclWindow_t win = nullptr;
    if (ctx.rank == 1 && !ctx.ok(ncclCommRegister(ctx.comm, in, bytes, &handle), "ncclCommRegister", ctx.comm)) return;
    // Window registration is collective: every rank takes part, rank 3 with a buffer it never uses.
    std::vector<float> spare(16);
    void* winBuf = window ? static_cast<void*>(in) : static_cast<void*>(spare.data());
    const size_t winBytes = window ? bytes : spare.size() * sizeof(float);
    if (!ctx.ok(ncclCommWindowRegister(ctx.comm, winBuf, winBytes, &win, NCCL_WIN_DEFAULT), "ncclCommWindowRegister",
                ctx.comm))
      return;
    int call = 0;
    for (size_t count : {size_t(1), size_t(3000), size_t(kMax)})
      for (int iter = 0; iter < 12; ++iter, ++call) {
        auto value = [&](int r, size_t i) { return float((r + 1) * (call + 1)) + float(i % 13); };
        for (size_t i = 0; i < count; ++i) in[i] = value(ctx.rank, i);
        const bool inPlace = call % 3 == 2;
        float* dst = inPlace ? in : out.data();
        if (!ctx.ok(ncclAllReduce(in, dst, count, ncclFloat32, ncclSum, ctx.comm, nullptr), "ncclAllReduce", ctx.comm))
          return;
        for (size_t i = 0; i < count; ++i) {
          float want = 0;
          for (int r = 0; r < ctx.nranks; ++r) want += value(r, i);
          if (dst[i] != want)
            return ctx.failf("call %d (%zu floats%s): element %zu is %g, expected %g", call, count,
                             inPlace ? ", in place" : "", i, dst[i], want);
        }
        // Refill at once with what no call of this test sums to.
        std::memset(in, 0xff, count * sizeof(float));
      }
    ctx.ok(ncclCommWindowDeregister(ctx.comm, win), "ncclCommWindowDeregister", ctx.comm);
    if (handle != nullptr) ctx.ok(ncclCommDeregister(ctx.comm, handle), "ncclCommDeregister", ctx.comm);
    if (allocated != nullptr) ctx.ok(ncclMemFree(allocated), "ncclMemFree");
  }));
}

}  // namespace
}  // namespace weft_test
