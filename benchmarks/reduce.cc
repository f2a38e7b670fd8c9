// reduce_perf: ncclReduce. size = count * typesize; busbw = algbw. Only the root's output is checked.
#include "common/harness.h"

namespace {
using namespace weftbench;

ncclResult_t run(const RunArgs& a) {
  return ncclReduce(a.sendbuff, a.recvbuff, a.count, a.type, a.op, a.root, a.comm, nullptr);
}

void expect(int rank, int, int root, const Counts& c, std::vector<Segment>* segs) {
  if (rank == root) segs->push_back({Segment::kReduce, 0, c.param, 0, 0});
}

}  // namespace

int main(int argc, char** argv) {
  static const CollDesc desc{.name = "reduce_perf",
                             .call = "ncclReduce",
                             .opUse = OpUse::kReduce,
                             .rooted = true,
                             .inPlace = InPlace::kChecked,
                             .needsPowerOfTwo = false,
                             .counts = sameCounts,
                             .bandwidth = flatBandwidth,
                             .run = run,
                             .expect = expect};
  return benchMain(argc, argv, desc);
}
