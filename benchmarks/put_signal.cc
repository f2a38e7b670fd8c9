// put_signal_perf: the ring of sendrecv_perf with one-sided puts. Every rank tells rank-1 that its
// receive buffer (a window) is free (ncclSignal), waits until rank+1 says the same, puts count
// elements into rank+1's buffer with ncclPutSignal, then waits in ncclWaitSignal for rank-1's put.
// The "free" signal is what a receive posts implicitly in sendrecv_perf: without it a put could
// land while its target still reads (or, when checking, resets) the previous iteration's data.
// Between processes of a host the put is one process_vm_writev (a single copy, no FIFO); over the
// network (NCCL_SHM_DISABLE=1, or other hosts) it goes through the proxies. Run it beside
// sendrecv_perf to see what the single copy gives. size = count * typesize; busbw = algbw. In place
// is timed, not validated (a rank's buffer is read and written at once).
#include "common/harness.h"

namespace {
using namespace weftbench;

// The whole receive allocation is one window, registered (collectively) on the first call: every
// iteration's buffer lies in it, wherever --rotate puts it.
ncclResult_t windowFor(const RunArgs& a, ncclWindow_t* win) {
  static ncclWindow_t window = nullptr;
  static ncclComm_t owner = nullptr;
  if (window == nullptr || owner != a.comm) {
    const ncclResult_t r = ncclCommWindowRegister(a.comm, a.recvAlloc, a.recvAllocBytes, &window, NCCL_WIN_DEFAULT);
    if (r != ncclSuccess) return r;
    owner = a.comm;
  }
  *win = window;
  return ncclSuccess;
}

ncclResult_t run(const RunArgs& a) {
  ncclWindow_t win = nullptr;
  ncclResult_t r = windowFor(a, &win);
  if (r != ncclSuccess) return r;
  const int next = (a.rank + 1) % a.nranks;
  const int prev = (a.rank - 1 + a.nranks) % a.nranks;
  // Signals from one rank arrive in order and only count, so with 2 ranks (next == prev) the two
  // waits below consume "free" and "data" in turn.
  if ((r = ncclSignal(prev, 0, 0, 0, a.comm, nullptr)) != ncclSuccess) return r;
  ncclWaitSignalDesc_t free = {1, next, 0, 0};
  if ((r = ncclWaitSignal(1, &free, a.comm, nullptr)) != ncclSuccess) return r;
  // Every rank's buffers sit at the same offsets in its allocations, so this rank's recvbuff offset
  // is where rank+1's receive buffer is in its window.
  const size_t offset = static_cast<size_t>(static_cast<char*>(a.recvbuff) - static_cast<char*>(a.recvAlloc));
  r = ncclPutSignal(a.sendbuff, a.count, a.type, next, win, offset, 0, 0, 0, a.comm, nullptr);
  if (r != ncclSuccess) return r;
  ncclWaitSignalDesc_t data = {1, prev, 0, 0};
  return ncclWaitSignal(1, &data, a.comm, nullptr);
}

void expect(int rank, int n, int, const Counts& c, std::vector<Segment>* segs) {
  segs->push_back({Segment::kCopy, 0, c.param, (rank - 1 + n) % n, 0});
}

}  // namespace

int main(int argc, char** argv) {
  static const CollDesc desc{.name = "put_signal_perf",
                             .call = "ncclPutSignal/ncclWaitSignal",
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
