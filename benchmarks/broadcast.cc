// broadcast_perf: ncclBroadcast. size = count * typesize; busbw = algbw.
// In place: sendbuff == recvbuff.
#include "common/harness.h"

namespace {
using namespace weftbench;

ncclResult_t run(const RunArgs& a) {
  return ncclBroadcast(a.sendbuff, a.recvbuff, a.count, a.type, a.root, a.comm, nullptr);
}

void expect(int, int, int root, const Counts& c, std::vector<Segment>* segs) {
  segs->push_back({Segment::kCopy, 0, c.param, root, 0});
}

}  // namespace

int main(int argc, char** argv) {
  static const CollDesc desc{.name = "broadcast_perf",
                             .call = "ncclBroadcast",
                             .opUse = OpUse::kNone,
                             .rooted = true,
                             .inPlace = InPlace::kChecked,
                             .needsPowerOfTwo = false,
                             .counts = sameCounts,
                             .bandwidth = flatBandwidth,
                             .run = run,
                             .expect = expect};
  return benchMain(argc, argv, desc);
}
