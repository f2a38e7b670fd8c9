// The checks net_check runs on one communicator. Every rank calls the same functions in the same
// order; each verifies only its own output.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "check_data.h"
#include "report.h"

namespace netcheck {

struct Ctx {
  ncclComm_t comm = nullptr;
  int rank = 0;
  int nranks = 1;
  Report* rep = nullptr;
  size_t maxBytes = size_t(16) << 20;  // the largest message size tried (--max-bytes)
  uint32_t nextSeed = 1;               // each check draws a fresh seed, identical on every rank
};

// Messages above this size run only for float32 and ncclSum: they exercise the same code with
// more data, and the full matrix at 16 MiB would cost minutes on a small machine.
inline constexpr size_t kHeavyBytes = size_t(1) << 20;

// Element counts to try for a type: 0, 1, 7, 1000, 1 MiB and 16 MiB worth, up to ctx.maxBytes.
std::vector<size_t> countsFor(const Ctx& ctx, size_t elemBytes);

void runCollectiveChecks(Ctx& ctx);  // coll_checks.cc
void runP2PChecks(Ctx& ctx);         // p2p_checks.cc
void runSplitChecks(Ctx& ctx);       // p2p_checks.cc

// A host buffer of `count` elements followed by guard elements that no call may write, all set
// to a sentinel no result can equal.
template <typename T>
struct Buf {
  static constexpr size_t kGuard = 16;
  static constexpr T kSentinel = T(-777777);
  std::vector<T> v;
  size_t count;
  explicit Buf(size_t n) : v(n + kGuard, kSentinel), count(n) {}
  T* data() { return v.data(); }
  // The index of the first modified guard element, or -1.
  long guardHit() const {
    for (size_t g = 0; g < kGuard; ++g)
      if (!(v[count + g] == kSentinel)) return long(g);
    return -1;
  }
};

// Compares got[0..count) with want(i) and the buffer's guard; records one PASS or FAIL line.
template <typename T, typename Want>
void verify(Ctx& ctx, const std::string& name, const Buf<T>& buf, size_t offset, size_t count, ncclRedOp_t op,
            Want want) {
  size_t bad = 0, first = 0;
  T firstGot{}, firstWant{};
  for (size_t i = 0; i < count; ++i) {
    const T w = want(i);
    const T g = buf.v[offset + i];
    if (!sameValue(op, g, w)) {
      if (bad++ == 0) first = i, firstGot = g, firstWant = w;
    }
  }
  const long hit = buf.guardHit();
  if (bad > 0)
    ctx.rep->fail(name, std::to_string(bad) + " of " + std::to_string(count) + " elements wrong, first at " +
                            std::to_string(first) + ": got " + std::to_string(firstGot) + ", expected " +
                            std::to_string(firstWant));
  else if (hit >= 0)
    ctx.rep->fail(name, "wrote past the end of the output (guard element " + std::to_string(hit) + ")");
  else
    ctx.rep->pass(name);
}

}  // namespace netcheck
