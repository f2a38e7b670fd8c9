// reduce_scatter_perf: ncclReduceScatter. size = recvcount * nranks * typesize (each rank's input),
// count = recvcount (rounded down to 16 bytes); busbw = algbw * (n-1)/n.
// In place: rank r receives into sendbuff + r * recvcount.
#include "common/harness.h"

namespace {
using namespace weftbench;

ncclResult_t run(const RunArgs& a) {
  return ncclReduceScatter(a.sendbuff, a.recvbuff, a.count, a.type, a.op, a.comm, nullptr);
}

void expect(int rank, int, int, const Counts& c, std::vector<Segment>* segs) {
  segs->push_back({Segment::kReduce, 0, c.param, 0, rank * c.param});
}

}  // namespace

int main(int argc, char** argv) {
  static const CollDesc desc{.name = "reduce_scatter_perf",
                             .call = "ncclReduceScatter",
                             .opUse = OpUse::kReduce,
                             .rooted = false,
                             .inPlace = InPlace::kChecked,
                             .needsPowerOfTwo = false,
                             .counts = scatterCounts,
                             .bandwidth = gatheredBandwidth,
                             .run = run,
                             .expect = expect};
  return benchMain(argc, argv, desc);
}
