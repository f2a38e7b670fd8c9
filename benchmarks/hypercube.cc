// hypercube_perf: an AllGather built from point-to-point transfers along the dimensions of a
// hypercube (needs a power-of-two rank count). At step k every rank exchanges the 2^k blocks it
// holds with rank ^ 2^k, one ncclGroupStart/ncclGroupEnd per step.
// size = count * nranks * typesize, count = per rank (rounded down to 16 bytes);
// algbw = count * typesize * (n-1) / time (the bytes each rank receives), busbw = algbw.
#include <cstring>

#include "common/harness.h"

namespace {
using namespace weftbench;

void bandwidth(size_t count, size_t ts, double sec, int n, double* algBw, double* busBw) {
  *algBw = static_cast<double>(count * ts * (n - 1)) / 1e9 / sec;
  *busBw = *algBw;
}

ncclResult_t run(const RunArgs& a) {
  const size_t ts = typeDesc(a.type).size;
  const size_t block = a.count * ts;
  char* rbuff = static_cast<char*>(a.recvbuff);
  // Host mode: the rank's own block is a plain copy (skipped when already in place).
  if (rbuff + a.rank * block != a.sendbuff) std::memmove(rbuff + a.rank * block, a.sendbuff, block);
  for (int mask = 1; mask < a.nranks; mask <<= 1) {
    const int peer = a.rank ^ mask;
    const int mine = a.rank & ~(mask - 1);  // first block this rank holds
    const int theirs = mine ^ mask;         // first block the peer holds
    ncclResult_t r = ncclGroupStart();
    if (r != ncclSuccess) return r;
    r = ncclSend(rbuff + mine * block, a.count * mask, a.type, peer, a.comm, nullptr);
    if (r == ncclSuccess) r = ncclRecv(rbuff + theirs * block, a.count * mask, a.type, peer, a.comm, nullptr);
    const ncclResult_t e = ncclGroupEnd();
    if (r != ncclSuccess) return r;
    if (e != ncclSuccess) return e;
  }
  return ncclSuccess;
}

void expect(int, int n, int, const Counts& c, std::vector<Segment>* segs) {
  for (int r = 0; r < n; r++) segs->push_back({Segment::kCopy, r * c.param, c.param, r, 0});
}

}  // namespace

int main(int argc, char** argv) {
  static const CollDesc desc{.name = "hypercube_perf",
                             .call = "ncclSend/ncclRecv",
                             .opUse = OpUse::kBlank,
                             .rooted = false,
                             .inPlace = InPlace::kChecked,
                             .needsPowerOfTwo = true,
                             .counts = gatherCounts,
                             .bandwidth = bandwidth,
                             .run = run,
                             .expect = expect};
  return benchMain(argc, argv, desc);
}
