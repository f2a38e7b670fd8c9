// all_reduce_perf: ncclAllReduce. size = count * typesize (each rank's buffer);
// busbw = algbw * 2(n-1)/n.
#include "common/harness.h"

namespace {
using namespace weftbench;

void bandwidth(size_t count, size_t ts, double sec, int n, double* algBw, double* busBw) {
  *algBw = static_cast<double>(count * ts) / 1e9 / sec;
  *busBw = *algBw * 2.0 * (n - 1) / n;
}

ncclResult_t run(const RunArgs& a) {
  return ncclAllReduce(a.sendbuff, a.recvbuff, a.count, a.type, a.op, a.comm, nullptr);
}

void expect(int, int, int, const Counts& c, std::vector<Segment>* segs) {
  segs->push_back({Segment::kReduce, 0, c.param, 0, 0});
}

}  // namespace

int main(int argc, char** argv) {
  static const CollDesc desc{.name = "all_reduce_perf",
                             .call = "ncclAllReduce",
                             .opUse = OpUse::kReduce,
                             .rooted = false,
                             .inPlace = InPlace::kChecked,
                             .needsPowerOfTwo = false,
                             .counts = sameCounts,
                             .bandwidth = bandwidth,
                             .run = run,
                             .expect = expect};
  return benchMain(argc, argv, desc);
}
