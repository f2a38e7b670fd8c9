// gather_perf: ncclGather. size = count * nranks * typesize (the root's buffer), count = per rank
// (rounded down to 16 bytes); busbw = algbw * (n-1)/n. In place: rank r sends from
// recvbuff + r * count (at the root, NCCL's in-place rule). Only the root's output is checked.
#include "common/harness.h"

namespace {
using namespace weftbench;

ncclResult_t run(const RunArgs& a) {
  return ncclGather(a.sendbuff, a.recvbuff, a.count, a.type, a.root, a.comm, nullptr);
}

void expect(int rank, int n, int root, const Counts& c, std::vector<Segment>* segs) {
  if (rank != root) return;
  for (int r = 0; r < n; r++) segs->push_back({Segment::kCopy, r * c.param, c.param, r, 0});
}

}  // namespace

int main(int argc, char** argv) {
  static const CollDesc desc{.name = "gather_perf",
                             .call = "ncclGather",
                             .opUse = OpUse::kNone,
                             .rooted = true,
                             .inPlace = InPlace::kChecked,
                             .needsPowerOfTwo = false,
                             .counts = gatherCounts,
                             .bandwidth = gatheredBandwidth,
                             .run = run,
                             .expect = expect};
  return benchMain(argc, argv, desc);
}
