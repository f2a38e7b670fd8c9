// RCCL's extras beyond ncclAlltoAllv: ncclAllReduceWithBias (alone and in a group, every op),
// ncclCommDump and the MSCCL calls RCCL keeps as no-ops.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <unordered_map>
#include <vector>

#include "harness.h"

namespace weft_test {
namespace {

// Each rank's result is op(AllReduce, its own bias); the bias differs per rank and per element.
TEST(RcclExtras, AllReduceWithBiasAppliesTheLocalBiasOnce) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    const size_t n = 5003;  // odd: the reduction's tails
    std::vector<double> in(n), out(n), bias(n);
    for (size_t i = 0; i < n; ++i) {
      in[i] = static_cast<double>(ctx.rank + 1) * static_cast<double>(i % 11);
      bias[i] = 100.0 * ctx.rank + static_cast<double>(i % 5);
    }
    struct Case {
      ncclRedOp_t op;
      const char* name;
    };
    for (Case c : {Case{ncclSum, "sum"}, Case{ncclMax, "max"}, Case{ncclProd, "prod"}, Case{ncclAvg, "avg"}}) {
      if (!ctx.ok(ncclAllReduceWithBias(in.data(), out.data(), n, ncclFloat64, c.op, ctx.comm, nullptr, bias.data()),
                  c.name, ctx.comm))
        return;
      for (size_t i = 0; i < n; ++i) {
        const double k = static_cast<double>(i % 11);
        double reduced = 0;
        switch (c.op) {
          case ncclSum: reduced = 6 * k; break;  // (1 + 2 + 3) k
          case ncclMax: reduced = 3 * k; break;
          case ncclProd: reduced = 6 * k * k * k; break;
          default: reduced = 2 * k; break;  // avg
        }
        double want = c.op == ncclMax    ? std::max(reduced, bias[i])
                      : c.op == ncclProd ? reduced * bias[i]
                                         : reduced + bias[i];
        // Avg scales each input by 1/3 before the sum, so it may differ from (sum)/3 in the last bit.
        const double tolerance = c.op == ncclAvg ? 1e-12 * std::max(1.0, std::abs(want)) : 0.0;
        if (std::abs(out[i] - want) > tolerance)
          return ctx.failf("%s: element %zu is %.17g, expected %.17g", c.name, i, out[i], want);
      }
    }
    // In place, inside a group beside a plain AllReduce: the bias is applied once the group ends.
    std::vector<int32_t> a(777, ctx.rank), b(777, 1), ib(777, 1000 * (ctx.rank + 1));
    ctx.ok(ncclGroupStart(), "ncclGroupStart");
    ctx.ok(ncclAllReduceWithBias(a.data(), a.data(), a.size(), ncclInt32, ncclSum, ctx.comm, nullptr, ib.data()),
           "ncclAllReduceWithBias in a group", ctx.comm);
    ctx.ok(ncclAllReduce(b.data(), b.data(), b.size(), ncclInt32, ncclSum, ctx.comm, nullptr), "ncclAllReduce",
           ctx.comm);
    if (ctx.ok(ncclGroupEnd(), "ncclGroupEnd") && (a[0] != 3 + 1000 * (ctx.rank + 1) || a[776] != a[0] || b[0] != 3))
      ctx.failf("in a group: biased %d and plain %d, expected %d and 3", a[0], b[0], 3 + 1000 * (ctx.rank + 1));
    ctx.expect(ncclAllReduceWithBias(a.data(), a.data(), a.size(), ncclInt32, ncclSum, ctx.comm, nullptr, nullptr),
               ncclInvalidArgument, "ncclAllReduceWithBias with a NULL bias");
  }));
}

TEST(RcclExtras, CommDumpFillsTheState) {
  EXPECT_RUN_OK(runRanks(kTier, 2, [](RankCtx& ctx) {
    int64_t v = 1;
    ctx.ok(ncclAllReduce(&v, &v, 1, ncclInt64, ncclSum, ctx.comm, nullptr), "ncclAllReduce", ctx.comm);
    std::unordered_map<std::string, std::string> map;
    if (!ctx.ok(ncclCommDump(ctx.comm, map), "ncclCommDump", ctx.comm)) return;
    if (map["rank"] != std::to_string(ctx.rank) || map["nRanks"] != "2" || map["state"] != "ready")
      ctx.failf("ncclCommDump: rank %s of %s, state %s", map["rank"].c_str(), map["nRanks"].c_str(),
                map["state"].c_str());
    if (map["opCount"] != "1") ctx.failf("ncclCommDump: opCount %s after one AllReduce", map["opCount"].c_str());
    for (const char* key : {"commHash", "activeOps", "connections", "connectionBytes", "lastError", "waitingFor"})
      if (map.count(key) == 0) ctx.failf("ncclCommDump left out %s", key);
    ctx.expect(ncclCommDump(nullptr, map), ncclInvalidArgument, "ncclCommDump(NULL)");
  }));
}

TEST(RcclExtras, MscclCallsAreNoOps) {
  mscclAlgoHandle_t h = 42;
  EXPECT_EQ(mscclLoadAlgo("/nonexistent.xml", &h, 0), ncclSuccess);
  EXPECT_EQ(h, 42) << "mscclLoadAlgo must leave the handle alone, as RCCL's does";
  EXPECT_EQ(mscclRunAlgo(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0, ncclFloat32, 0, 0, ncclSum, h,
                         nullptr, nullptr),
            ncclSuccess);
  EXPECT_EQ(mscclUnloadAlgo(h), ncclSuccess);
}

// rcclGetAlgoInfo and its name lookups, found with dlsym as rccl-tests finds them (no header
// declares them). Under NCCL_ALGO=Ring or Tree (the tree variant sets Tree) the answer must be that
// algorithm; otherwise it must be a named algorithm and protocol on at least one channel.
using AlgoInfoFn = ncclResult_t (*)(ncclComm_t, int, uint64_t, ncclDataType_t, int, int, int, int*, int*, int*);
using NameFn = ncclResult_t (*)(int, const char**);

TEST(RcclExtras, GetAlgoInfoReportsTheSelection) {
  auto info = reinterpret_cast<AlgoInfoFn>(dlsym(RTLD_DEFAULT, "rcclGetAlgoInfo"));
  auto algoName = reinterpret_cast<NameFn>(dlsym(RTLD_DEFAULT, "rcclGetAlgoName"));
  auto protoName = reinterpret_cast<NameFn>(dlsym(RTLD_DEFAULT, "rcclGetProtocolName"));
  ASSERT_TRUE(info != nullptr && algoName != nullptr && protoName != nullptr) << "not exported: " << dlerror();
  EXPECT_RUN_OK(runRanks(kTier, 2, [&](RankCtx& ctx) {
    const char* forced = getenv("NCCL_ALGO");
    const std::string want = forced == nullptr ? "" : forced;
    for (uint64_t count : {uint64_t(2), uint64_t(1) << 20}) {
      int algo = -1, proto = -1, channels = 0;
      if (!ctx.ok(info(ctx.comm, 4, count, ncclFloat32, 0, 0, 1, &algo, &proto, &channels), "rcclGetAlgoInfo",
                  ctx.comm))
        return;
      const char* a = nullptr;
      const char* p = nullptr;
      if (!ctx.ok(algoName(algo, &a), "rcclGetAlgoName") || !ctx.ok(protoName(proto, &p), "rcclGetProtocolName"))
        return;
      if (channels < 1) ctx.failf("AllReduce of %llu: %d channels", static_cast<unsigned long long>(count), channels);
      if ((want == "Ring" && (algo != 1 || std::string(a) != "RING")) ||
          (want == "Tree" && (algo != 0 || std::string(a) != "TREE")))
        ctx.failf("under NCCL_ALGO=%s, AllReduce of %llu reports algorithm %d (%s)", want.c_str(),
                  static_cast<unsigned long long>(count), algo, a);
    }
    int algo = -1, proto = -1, channels = 0;
    ctx.expect(info(ctx.comm, 6, 16, ncclFloat32, 0, 0, 1, &algo, &proto, &channels), ncclInvalidArgument,
               "rcclGetAlgoInfo for Send (not a collective)", ctx.comm);
    ctx.expect(info(ctx.comm, 4, 16, ncclFloat32, 0, 0, 1, nullptr, &proto, &channels), ncclInvalidArgument,
               "rcclGetAlgoInfo with algo NULL", ctx.comm);
    ctx.ok(info(ctx.comm, 9, 16, ncclInt8, 0, 0, 1, &algo, &proto, &channels), "rcclGetAlgoInfo for AlltoAllv",
           ctx.comm);
  }));
  const char* name = nullptr;
  EXPECT_EQ(protoName(2, &name), ncclSuccess);
  EXPECT_STREQ(name, "SIMPLE");
  EXPECT_EQ(algoName(1, &name), ncclSuccess);
  EXPECT_STREQ(name, "RING");
  EXPECT_EQ(algoName(99, &name), ncclInvalidArgument);
  EXPECT_EQ(protoName(-1, &name), ncclInvalidArgument);
}

}  // namespace
}  // namespace weft_test
