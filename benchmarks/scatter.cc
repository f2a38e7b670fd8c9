// scatter_perf: ncclScatter. size = count * nranks * typesize (the root's buffer), count = per rank
// (rounded down to 16 bytes); busbw = algbw * (n-1)/n. In place: rank r receives into
// sendbuff + r * count (at the root, NCCL's in-place rule).
#include "common/harness.h"

namespace {
using namespace weftbench;

ncclResult_t run(const RunArgs& a) {
  return ncclScatter(a.sendbuff, a.recvbuff, a.count, a.type, a.root, a.comm, nullptr);
}

void expect(int rank, int, int root, const Counts& c, std::vector<Segment>* segs) {
  segs->push_back({Segment::kCopy, 0, c.param, root, rank * c.param});
}

}  // namespace

int main(int argc, char** argv) {
  static const CollDesc desc{.name = "scatter_perf",
                             .call = "ncclScatter",
                             .opUse = OpUse::kNone,
                             .rooted = true,
                             .inPlace = InPlace::kChecked,
                             .needsPowerOfTwo = false,
                             .counts = scatterCounts,
                             .bandwidth = gatheredBandwidth,
                             .run = run,
                             .expect = expect};
  return benchMain(argc, argv, desc);
}
