// alltoall_perf: ncclAlltoAll. size = count * nranks * typesize (each rank's buffer), count = the
// per-peer count (rounded down to 16 bytes); busbw = algbw * (n-1)/n. In-place AlltoAll
// (sendbuff == recvbuff) is not defined by NCCL and Weft rejects it: the in-place columns read N/A.
#include "common/harness.h"

namespace {
using namespace weftbench;

Counts counts(size_t count, size_t ts, int n) {
  Counts c;
  const size_t base = alignedPerRank(count, ts, n);
  c.param = base;
  c.send = c.recv = base * n;
  return c;
}

ncclResult_t run(const RunArgs& a) { return ncclAlltoAll(a.sendbuff, a.recvbuff, a.count, a.type, a.comm, nullptr); }

void expect(int rank, int n, int, const Counts& c, std::vector<Segment>* segs) {
  for (int r = 0; r < n; r++) segs->push_back({Segment::kCopy, r * c.param, c.param, r, rank * c.param});
}

}  // namespace

int main(int argc, char** argv) {
  static const CollDesc desc{.name = "alltoall_perf",
                             .call = "ncclAlltoAll",
                             .opUse = OpUse::kNone,
                             .rooted = false,
                             .inPlace = InPlace::kNotRun,
                             .needsPowerOfTwo = false,
                             .counts = counts,
                             .bandwidth = gatheredBandwidth,
                             .run = run,
                             .expect = expect};
  return benchMain(argc, argv, desc);
}
