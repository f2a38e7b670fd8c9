// Point-to-point patterns: ring shift, all-pairs with messages larger than any internal FIFO
// (a deadlock would show here), send-to-self, many ordered messages to one peer, mixed sizes and
// types in one group, zero counts, and an ungrouped blocking Send/Recv pair.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dtypes.h"
#include "harness.h"
#include "reference.h"

namespace weft_test {
namespace {

// Message bytes are a function of (sender, receiver, message number, byte index).
uint64_t key(int from, int to, int msg) {
  return (static_cast<uint64_t>(from) << 40) ^ (static_cast<uint64_t>(to) << 20) ^ static_cast<uint64_t>(msg);
}

void fillMessage(std::vector<unsigned char>* buf, uint64_t k) {
  uint64_t h = mix64(k);
  for (size_t i = 0; i < buf->size(); ++i) {
    if (i % 8 == 0) h = mix64(h + i);
    (*buf)[i] = static_cast<unsigned char>(h >> (8 * (i % 8)));
  }
}

void checkMessage(Reporter* rep, const std::vector<unsigned char>& got, uint64_t k, const std::string& what) {
  std::vector<unsigned char> want(got.size());
  fillMessage(&want, k);
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      rep->failf("%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what.c_str(), i, got.size(), got[i], want[i]);
      return;
    }
  }
}

int fewRanks() { return kTier == Mode::kProcs ? 3 : 5; }

TEST(P2P, RingShift) {
  for (int n : {2, fewRanks()}) {
    EXPECT_RUN_OK(runRanks(kTier, n, [](RankCtx& ctx) {
      const int next = (ctx.rank + 1) % ctx.nranks, prev = (ctx.rank + ctx.nranks - 1) % ctx.nranks;
      int msg = 0;
      for (ncclDataType_t dt : {ncclInt8, ncclFloat32, ncclBfloat16}) {
        for (size_t count : {size_t{0}, size_t{1}, size_t{1023}, size_t{1} << 20}) {
          const size_t bytes = count * dtypeInfo(dt).size;
          std::vector<unsigned char> out(bytes), in(bytes, 0xEE);
          fillMessage(&out, key(ctx.rank, next, msg));
          if (!ctx.ok(ncclGroupStart(), "ncclGroupStart")) return;
          ncclResult_t s = ncclSend(out.data(), count, dt, next, ctx.comm, nullptr);
          ncclResult_t r = ncclRecv(in.data(), count, dt, prev, ctx.comm, nullptr);
          ncclResult_t e = ncclGroupEnd();
          const std::string what = "ring shift " + std::string(dtypeInfo(dt).name) + " count " + std::to_string(count);
          if (!ctx.ok(s, (what + ": ncclSend").c_str(), ctx.comm) ||
              !ctx.ok(r, (what + ": ncclRecv").c_str(), ctx.comm) ||
              !ctx.ok(e, (what + ": ncclGroupEnd").c_str(), ctx.comm))
            return;
          checkMessage(&ctx, in, key(prev, ctx.rank, msg), what);
          ++msg;
        }
      }
    }));
  }
}

// Every rank sends a large message to every other rank and receives one from each, all in one
// group: no schedule that serialises the pairs can finish once messages exceed the FIFOs.
void allPairs(int nranks, size_t bytes) {
  EXPECT_RUN_OK(runRanks(kTier, nranks, [bytes](RankCtx& ctx) {
    std::vector<std::vector<unsigned char>> out(ctx.nranks), in(ctx.nranks);
    for (int p = 0; p < ctx.nranks; ++p) {
      if (p == ctx.rank) continue;
      out[p].resize(bytes);
      in[p].assign(bytes, 0);
      fillMessage(&out[p], key(ctx.rank, p, 0));
    }
    if (!ctx.ok(ncclGroupStart(), "ncclGroupStart")) return;
    for (int p = 0; p < ctx.nranks; ++p) {
      if (p == ctx.rank) continue;
      ctx.ok(ncclSend(out[p].data(), bytes / 4, ncclFloat32, p, ctx.comm, nullptr), "ncclSend", ctx.comm);
      ctx.ok(ncclRecv(in[p].data(), bytes / 4, ncclFloat32, p, ctx.comm, nullptr), "ncclRecv", ctx.comm);
    }
    if (!ctx.ok(ncclGroupEnd(), "ncclGroupEnd (all pairs)", ctx.comm)) return;
    for (int p = 0; p < ctx.nranks; ++p)
      if (p != ctx.rank)
        checkMessage(&ctx, in[p], key(p, ctx.rank, 0), "all-pairs message from rank " + std::to_string(p));
  }));
}

TEST(P2P, AllPairsLargeInOneGroup) {
  allPairs(4, size_t{4} << 20);
  allPairs(8, size_t{1} << 20);
}

TEST(P2P, SendToSelfInOneGroup) {
  EXPECT_RUN_OK(runRanks(kTier, 2, [](RankCtx& ctx) {
    int msg = 0;
    for (size_t count : {size_t{1}, size_t{1023}, size_t{1} << 20}) {
      std::vector<unsigned char> out(count * 4), in(count * 4, 0);
      fillMessage(&out, key(ctx.rank, ctx.rank, msg));
      if (!ctx.ok(ncclGroupStart(), "ncclGroupStart")) return;
      ctx.ok(ncclSend(out.data(), count, ncclInt32, ctx.rank, ctx.comm, nullptr), "ncclSend to self", ctx.comm);
      ctx.ok(ncclRecv(in.data(), count, ncclInt32, ctx.rank, ctx.comm, nullptr), "ncclRecv from self", ctx.comm);
      if (!ctx.ok(ncclGroupEnd(), "ncclGroupEnd (self send)", ctx.comm)) return;
      checkMessage(&ctx, in, key(ctx.rank, ctx.rank, msg), "self message of " + std::to_string(count) + " int32");
      ++msg;
    }
  }));
}

// 32 messages each way between ranks 0 and 1 in one group; message i has its own size and content,
// so any reordering on the way shows.
TEST(P2P, ManyMessagesToOnePeerKeepOrder) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    if (ctx.rank == 2) return;  // a bystander: the group on ranks 0 and 1 must not need it
    const int peer = 1 - ctx.rank;
    const int kMessages = 32;
    std::vector<std::vector<unsigned char>> out(kMessages), in(kMessages);
    for (int i = 0; i < kMessages; ++i) {
      const size_t bytes = static_cast<size_t>(i) * 4099 + 1;
      out[i].resize(bytes);
      in[i].assign(bytes, 0);
      fillMessage(&out[i], key(ctx.rank, peer, i));
    }
    if (!ctx.ok(ncclGroupStart(), "ncclGroupStart")) return;
    for (int i = 0; i < kMessages; ++i) {
      ctx.ok(ncclSend(out[i].data(), out[i].size(), ncclUint8, peer, ctx.comm, nullptr), "ncclSend", ctx.comm);
      ctx.ok(ncclRecv(in[i].data(), in[i].size(), ncclUint8, peer, ctx.comm, nullptr), "ncclRecv", ctx.comm);
    }
    if (!ctx.ok(ncclGroupEnd(), "ncclGroupEnd (32 messages each way)", ctx.comm)) return;
    for (int i = 0; i < kMessages; ++i)
      checkMessage(&ctx, in[i], key(peer, ctx.rank, i), "message " + std::to_string(i));
  }));
}

// Messages of very different sizes and types to both ring neighbours in one group.
TEST(P2P, MixedSizesAndTypesInOneGroup) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    struct Msg {
      ncclDataType_t dt;
      size_t count;
    };
    const Msg msgs[] = {{ncclInt8, 1}, {ncclFloat16, 7}, {ncclFloat64, 1023}, {ncclInt32, 65536}, {ncclUint8, 1000003}};
    const int next = (ctx.rank + 1) % ctx.nranks, prev = (ctx.rank + ctx.nranks - 1) % ctx.nranks;
    std::vector<std::vector<unsigned char>> toNext, toPrev, fromNext, fromPrev;
    int i = 0;
    for (const Msg& m : msgs) {
      const size_t bytes = m.count * dtypeInfo(m.dt).size;
      toNext.emplace_back(bytes);
      toPrev.emplace_back(bytes);
      fromNext.emplace_back(bytes, 0);
      fromPrev.emplace_back(bytes, 0);
      fillMessage(&toNext.back(), key(ctx.rank, next, i));
      fillMessage(&toPrev.back(), key(ctx.rank, prev, 100 + i));
      ++i;
    }
    if (!ctx.ok(ncclGroupStart(), "ncclGroupStart")) return;
    i = 0;
    for (const Msg& m : msgs) {
      ctx.ok(ncclSend(toNext[i].data(), m.count, m.dt, next, ctx.comm, nullptr), "ncclSend next", ctx.comm);
      ctx.ok(ncclRecv(fromPrev[i].data(), m.count, m.dt, prev, ctx.comm, nullptr), "ncclRecv prev", ctx.comm);
      ctx.ok(ncclSend(toPrev[i].data(), m.count, m.dt, prev, ctx.comm, nullptr), "ncclSend prev", ctx.comm);
      ctx.ok(ncclRecv(fromNext[i].data(), m.count, m.dt, next, ctx.comm, nullptr), "ncclRecv next", ctx.comm);
      ++i;
    }
    if (!ctx.ok(ncclGroupEnd(), "ncclGroupEnd (mixed sizes)", ctx.comm)) return;
    for (size_t j = 0; j < fromPrev.size(); ++j) {
      checkMessage(&ctx, fromPrev[j], key(prev, ctx.rank, static_cast<int>(j)),
                   "message " + std::to_string(j) + " from prev");
      checkMessage(&ctx, fromNext[j], key(next, ctx.rank, 100 + static_cast<int>(j)),
                   "message " + std::to_string(j) + " from next");
    }
  }));
}

// A pipeline stage repeats the same ncclSend/ncclRecv group, and from the second time on the group
// runs the program built the first time (enqueue/group.cc). Repeats broken by groups that differ
// in one thing each (count, type, direction, the calls' order, a send to self) must all arrive
// right: a difference the reuse missed would move one group's data with another's program.
TEST(P2P, RepeatedGroupsStayRightWhenTheirProgramIsReused) {
  EXPECT_RUN_OK(runRanks(kTier, 3, [](RankCtx& ctx) {
    const int next = (ctx.rank + 1) % ctx.nranks, prev = (ctx.rank + ctx.nranks - 1) % ctx.nranks;
    struct Shape {
      size_t count;
      ncclDataType_t dt;
      bool forward;    // send to next, receive from prev (else the other way round)
      bool recvFirst;  // ncclRecv issued before ncclSend
      bool self;       // also a send to self and its receive
    };
    // Each shape differs from the first in one thing; the first comes back after each of them.
    const Shape base{1023, ncclFloat32, true, false, false};
    const Shape variants[] = {
        {1024, ncclFloat32, true, false, false},  {1023, ncclInt8, true, false, false},
        {1023, ncclFloat32, false, false, false}, {1023, ncclFloat32, true, true, false},
        {1023, ncclFloat32, true, false, true},   {300001, ncclFloat32, true, false, false},  // many slots
    };
    std::vector<Shape> plan = {base, base, base};
    for (const Shape& v : variants) plan.insert(plan.end(), {v, v, base});
    int msg = 0;
    for (const Shape& sh : plan) {
      const int to = sh.forward ? next : prev, from = sh.forward ? prev : next;
      const size_t bytes = sh.count * dtypeInfo(sh.dt).size;
      std::vector<unsigned char> out(bytes), in(bytes, 0xEE), selfOut(bytes), selfIn(bytes, 0xEE);
      fillMessage(&out, key(ctx.rank, to, msg));
      fillMessage(&selfOut, key(ctx.rank, ctx.rank, msg));
      if (!ctx.ok(ncclGroupStart(), "ncclGroupStart")) return;
      bool ok = true;
      if (sh.recvFirst)
        ok = ctx.ok(ncclRecv(in.data(), sh.count, sh.dt, from, ctx.comm, nullptr), "ncclRecv", ctx.comm);
      ok = ctx.ok(ncclSend(out.data(), sh.count, sh.dt, to, ctx.comm, nullptr), "ncclSend", ctx.comm) && ok;
      if (!sh.recvFirst)
        ok = ctx.ok(ncclRecv(in.data(), sh.count, sh.dt, from, ctx.comm, nullptr), "ncclRecv", ctx.comm) && ok;
      if (sh.self) {
        ok = ctx.ok(ncclSend(selfOut.data(), sh.count, sh.dt, ctx.rank, ctx.comm, nullptr), "ncclSend self",
                    ctx.comm) &&
             ok;
        ok = ctx.ok(ncclRecv(selfIn.data(), sh.count, sh.dt, ctx.rank, ctx.comm, nullptr), "ncclRecv self", ctx.comm) &&
             ok;
      }
      const std::string what = "group " + std::to_string(msg) + " (" + dtypeInfo(sh.dt).name + " x " +
                               std::to_string(sh.count) + (sh.forward ? ", forward" : ", backward") +
                               (sh.recvFirst ? ", receive first" : "") + (sh.self ? ", to self" : "") + ")";
      if (!ctx.ok(ncclGroupEnd(), (what + ": ncclGroupEnd").c_str(), ctx.comm) || !ok) return;
      checkMessage(&ctx, in, key(from, ctx.rank, msg), what);
      if (sh.self) checkMessage(&ctx, selfIn, key(ctx.rank, ctx.rank, msg), what + " to self");
      ++msg;
    }
  }));
}

TEST(P2P, ZeroCountWithAndWithoutBuffers) {
  EXPECT_RUN_OK(runRanks(kTier, 2, [](RankCtx& ctx) {
    const int peer = 1 - ctx.rank;
    float dummy[4] = {1, 2, 3, 4};
    if (!ctx.ok(ncclGroupStart(), "ncclGroupStart")) return;
    ctx.ok(ncclSend(nullptr, 0, ncclFloat32, peer, ctx.comm, nullptr), "ncclSend(NULL, 0)", ctx.comm);
    ctx.ok(ncclRecv(nullptr, 0, ncclFloat32, peer, ctx.comm, nullptr), "ncclRecv(NULL, 0)", ctx.comm);
    ctx.ok(ncclSend(dummy, 0, ncclFloat32, peer, ctx.comm, nullptr), "ncclSend(buf, 0)", ctx.comm);
    ctx.ok(ncclRecv(dummy + 2, 0, ncclFloat32, peer, ctx.comm, nullptr), "ncclRecv(buf, 0)", ctx.comm);
    ctx.ok(ncclGroupEnd(), "ncclGroupEnd (zero counts)", ctx.comm);
    if (dummy[2] != 3 || dummy[3] != 4) ctx.fail("a zero-count receive wrote into its buffer");
  }));
}

// Without a group, a blocking send of 8 MiB completes once the peer's matching receive drains it.
TEST(P2P, UngroupedBlockingSendRecv) {
  EXPECT_RUN_OK(runRanks(kTier, 2, [](RankCtx& ctx) {
    const size_t bytes = size_t{8} << 20;
    std::vector<unsigned char> buf(bytes, 0);
    for (int round = 0; round < 2; ++round) {
      const int sender = round;  // each rank sends once
      if (ctx.rank == sender) {
        fillMessage(&buf, key(sender, 1 - sender, round));
        if (!ctx.ok(ncclSend(buf.data(), bytes / 8, ncclFloat64, 1 - sender, ctx.comm, nullptr), "ncclSend", ctx.comm))
          return;
      } else {
        if (!ctx.ok(ncclRecv(buf.data(), bytes / 8, ncclFloat64, sender, ctx.comm, nullptr), "ncclRecv", ctx.comm))
          return;
        checkMessage(&ctx, buf, key(sender, ctx.rank, round), "ungrouped message");
      }
    }
  }));
}

}  // namespace
}  // namespace weft_test
