// alltoall_perf: ncclAlltoAll. size = count * nranks * typesize (each rank's buffer), count = the
// per-peer count (rounded down to 16 bytes); busbw = algbw * (n-1)/n. The in-place variant
// (sendbuff == recvbuff) is timed but, as in nccl-tests, not validated (#wrong reads N/A).
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

void bandwidth(size_t count, size_t ts, double sec, int n, double* algBw, double* busBw) {
  *algBw = static_cast<double>(count * ts * n) / 1e9 / sec;
  *busBw = *algBw * (n - 1) / n;
}

ncclResult_t run(const RunArgs& a) {
  return ncclAlltoAll(a.sendbuff, a.recvbuff, a.count, a.type, a.comm, nullptr);
}

void expect(int rank, int n, int, const Counts& c, std::vector<Segment>* segs) {
  for (int r = 0; r < n; r++) segs->push_back({Segment::kCopy, r * c.param, c.param, r, rank * c.param});
}

}  // namespace

int main(int argc, char** argv) {
  static const CollDesc desc{"alltoall_perf", OpUse::kNone, false, false, false, counts, bandwidth, run, expect};
  return benchMain(argc, argv, desc);
}
