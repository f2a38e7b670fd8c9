// all_gather_perf: ncclAllGather. size = sendcount * nranks * typesize (the gathered buffer),
// count = sendcount (per rank, rounded down to 16 bytes); busbw = algbw * (n-1)/n.
// In place: rank r sends from recvbuff + r * sendcount.
#include "common/harness.h"

namespace {
using namespace weftbench;

ncclResult_t run(const RunArgs& a) { return ncclAllGather(a.sendbuff, a.recvbuff, a.count, a.type, a.comm, nullptr); }

void expect(int, int n, int, const Counts& c, std::vector<Segment>* segs) {
  for (int r = 0; r < n; r++) segs->push_back({Segment::kCopy, r * c.param, c.param, r, 0});
}

}  // namespace

int main(int argc, char** argv) {
  static const CollDesc desc{.name = "all_gather_perf",
                             .call = "ncclAllGather",
                             .opUse = OpUse::kNone,
                             .rooted = false,
                             .inPlace = InPlace::kChecked,
                             .needsPowerOfTwo = false,
                             .counts = gatherCounts,
                             .bandwidth = gatheredBandwidth,
                             .run = run,
                             .expect = expect};
  return benchMain(argc, argv, desc);
}
