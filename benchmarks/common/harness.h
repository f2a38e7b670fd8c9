// Weft perf tools: the shared harness. Each tool (all_reduce_perf, ...) describes its collective
// with a CollDesc and hands it to benchMain, which parses the nccl-tests command line, starts the
// ranks (-N processes, -T threads, or one rank of an mpirun/torchrun launch), times the collective
// over the requested sizes, validates it, and prints nccl-tests' table through rank 0.
#pragma once
#include <cstddef>
#include <vector>

#include "nccl.h"
#include "values.h"

namespace weftbench {

// Element counts for one size, with nccl-tests' meanings:
//   send/recv: elements in each rank's send/recv buffer; param: the count passed to the call;
//   sendInplace/recvInplace: for the in-place variant, rank r's send (recv) pointer is
//   recvbuff + r * sendInplace (recvbuff + r * recvInplace) elements.
struct Counts {
  size_t send = 0, recv = 0, param = 0, sendInplace = 0, recvInplace = 0;
};

// Everything a collective's run function needs for one call.
struct RunArgs {
  const void* sendbuff;
  void* recvbuff;
  size_t count;  // Counts::param
  ncclDataType_t type;
  ncclRedOp_t op;
  int root;
  ncclComm_t comm;
  int rank;
  int nranks;
  // The whole receive allocation recvbuff lies in (iterations walk through it, --rotate): for a
  // tool that registers it once, as a window, rather than every iteration's slice.
  void* recvAlloc;
  size_t recvAllocBytes;
};

// What the tool does with the in-place variant.
enum class InPlace {
  kChecked,    // timed and validated
  kUnchecked,  // timed, #wrong reads N/A (sendrecv, as in nccl-tests)
  kNotRun,     // the library does not define it (Weft rejects in-place AlltoAll): all columns N/A
};

// What the redop column shows and whether the tool loops over -o.
enum class OpUse {
  kReduce,   // a reduction: -o selects the operator(s), data are numeric
  kNone,     // data movement only: the column reads "none"
  kIgnored,  // data movement, but the column shows -o's name(s) like nccl-tests (sendrecv)
  kBlank,    // data movement, empty column (hypercube)
};

struct CollDesc {
  const char* name;  // the tool's name, e.g. "all_reduce_perf"
  const char* call;  // what run() calls, for error messages, e.g. "ncclAllReduce"
  OpUse opUse;
  bool rooted;  // -r selects the root(s); otherwise the root column reads -1
  InPlace inPlace;
  bool needsPowerOfTwo;  // hypercube
  Counts (*counts)(size_t count, size_t eltSize, int nranks);
  // Bandwidths for one call taking sec seconds, from the count passed to the call.
  void (*bandwidth)(size_t paramCount, size_t eltSize, double sec, int nranks, double* algBw, double* busBw);
  ncclResult_t (*run)(const RunArgs& a);
  // The stretches of rank's output (recv buffer, after the in-place offset) that the check compares.
  void (*expect)(int rank, int nranks, int root, const Counts& c, std::vector<Segment>* segs);
};

// nccl-tests' rounding of a per-rank count: down to a multiple of 16 bytes.
size_t alignedPerRank(size_t count, size_t eltSize, int nranks);

// Shapes several tools share (common/shapes.cc). sameCounts: every buffer holds count elements
// (AllReduce, Broadcast, Reduce, SendRecv). gatherCounts: each rank sends a 16-byte-aligned share,
// the receive buffer holds nranks of them (AllGather, Gather). scatterCounts: the reverse
// (ReduceScatter, Scatter).
Counts sameCounts(size_t count, size_t eltSize, int nranks);
Counts gatherCounts(size_t count, size_t eltSize, int nranks);
Counts scatterCounts(size_t count, size_t eltSize, int nranks);
// algbw = count*eltSize/sec, busbw = algbw (Broadcast, Reduce, SendRecv).
void flatBandwidth(size_t count, size_t eltSize, double sec, int nranks, double* algBw, double* busBw);
// algbw = count*eltSize*nranks/sec, busbw = algbw*(n-1)/n (AllGather, ReduceScatter, AlltoAll,
// Gather, Scatter).
void gatheredBandwidth(size_t count, size_t eltSize, double sec, int nranks, double* algBw, double* busBw);

// The whole program; returns the process exit status.
int benchMain(int argc, char** argv, const CollDesc& coll);

}  // namespace weftbench
