// sendrecv_perf: a ring of point-to-point transfers. Every rank sends count elements to rank+1 and
// receives count elements from rank-1, both inside one ncclGroupStart/ncclGroupEnd.
// size = count * typesize; busbw = algbw. The in-place variant (sendbuff == recvbuff) is timed but,
// as in nccl-tests, not validated (#wrong reads N/A).
#include "common/harness.h"

namespace {
using namespace weftbench;

ncclResult_t run(const RunArgs& a) {
  const int sendPeer = (a.rank + 1) % a.nranks;
  const int recvPeer = (a.rank - 1 + a.nranks) % a.nranks;
  ncclResult_t r = ncclGroupStart();
  if (r != ncclSuccess) return r;
  r = ncclSend(a.sendbuff, a.count, a.type, sendPeer, a.comm, nullptr);
  if (r == ncclSuccess) r = ncclRecv(a.recvbuff, a.count, a.type, recvPeer, a.comm, nullptr);
  const ncclResult_t e = ncclGroupEnd();
  return r != ncclSuccess ? r : e;
}

void expect(int rank, int n, int, const Counts& c, std::vector<Segment>* segs) {
  segs->push_back({Segment::kCopy, 0, c.param, (rank - 1 + n) % n, 0});
}

}  // namespace

int main(int argc, char** argv) {
  static const CollDesc desc{.name = "sendrecv_perf",
                             .call = "ncclSend/ncclRecv",
                             .opUse = OpUse::kIgnored,
                             .rooted = false,
                             .inPlace = InPlace::kUnchecked,
                             .needsPowerOfTwo = false,
                             .counts = sameCounts,
                             .bandwidth = flatBandwidth,
                             .run = run,
                             .expect = expect};
  return benchMain(argc, argv, desc);
}
