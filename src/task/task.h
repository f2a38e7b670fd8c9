// One collective or point-to-point call of one rank, as recorded by the API layer and executed at
// the end of its group (or at once outside a group).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "math/reduce_host.h"
#include "nccl.h"
#include "task/algorithm.h"
#include "transports/fifo.h"

struct ncclComm;

namespace weft {

enum class CollKind : uint8_t {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAlltoAll,
  kAlltoAllv,
  kGather,
  kScatter,
  kSend,
  kRecv,
  kCopy,  // a send to self matched with a receive from self
  // Weft's uneven collectives (weft.h): per-rank counts and displacements in Task::vcounts.
  kAllGatherv,
  kReduceScatterv,
};

// How many kinds there are (the last one's value + 1), for code that lists them.
constexpr int kNumCollKinds = static_cast<int>(CollKind::kReduceScatterv) + 1;

const char* collName(CollKind k);
// "nccl", or "weft" for Weft's own operations: how messages name the call (weftAllGatherv).
const char* collApiPrefix(CollKind k);
// The kinds that reduce (they take an op and resolve a ReduceSpec).
bool collReduces(CollKind k);
// The uneven kinds, whose Task::vcounts holds counts then displacements (2 x nranks).
inline bool isVariableKind(CollKind k) { return k == CollKind::kAllGatherv || k == CollKind::kReduceScatterv; }
// The kinds whose Task::vcounts holds per-peer counts: the uneven kinds and AlltoAllv (whose counts
// differ per rank by design). Their programs depend on those counts, not on Task::count alone.
inline bool hasPerPeerCounts(CollKind k) { return isVariableKind(k) || k == CollKind::kAlltoAllv; }

struct Task {
  ncclComm* comm = nullptr;
  CollKind kind = CollKind::kAllReduce;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;  // per-rank count, as the API call defines it; the uneven kinds: the sum of all counts
  ncclDataType_t dtype = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  int root = 0;            // root, or the peer of a send/recv
  void* stream = nullptr;  // the caller's stream (GPU communicators; NULL in host mode)
  uint64_t seq = 0;        // the communicator's operation number, for messages
  // The number of this operation in its sequence space (op_stamp.h): collectives count in one
  // per-communicator space, a Send to P in the space of sends to P, a Recv from P in that of
  // receives from P, so that the n-th send to P meets P's n-th receive from this rank whatever
  // else either rank issued in between.
  uint64_t opNum = 0;
  OpStamp stamp{};          // what this rank called, as its messages carry it (set after selectAlgorithm)
  ReduceSpec spec;          // resolved when the group runs (a device-resident scalar is read then)
  void* scratch = nullptr;  // the communicator's scratch area, for algorithms that need one
  Algorithm algorithm{};    // a registry row (collectives/registry.h), chosen when the group runs
  Protocol protocol = Protocol::kSimple;
  int nChannels = 1;
  // Write the user's output with non-temporal stores (math/reduce_host.h kStreamDst0): set when
  // the operation outgrows the last-level cache. Changes no result and no message, only how this
  // rank writes its memory, so it is decided per rank (it depends on the rank's own buffers).
  bool streamOutput = false;
  // The word this rank publishes at the direct lane's barriers where it may (program/step.h
  // kStepPublish) so that its peers read its input in place instead of a staged copy: the input's
  // address when every rank is a thread of this process, or a reference to it in a window every
  // rank has mapped (transports/shm/direct_area.h); 0: none. Decided per rank: peers learn at each
  // barrier what it published, and read whichever copy it made (comm/shared_input.h).
  uint64_t directInput = 0;
  // What the nccl<Coll>Config calls (ncclCollConfig_t) set for this call alone: the algSelection
  // text until enqueue resolves it (the caller keeps it valid during the call), then the
  // (algorithm, protocol) rows it allows (tuning/call_selection.h; 0: automatic); channel bounds
  // (0: unset); and the profiler tag, which changes nothing that runs.
  const char* algSelection = nullptr;
  bool forceAlgSelection = true;
  uint64_t callRows = 0;
  int callMinChannels = 0, callMaxChannels = 0;
  uint64_t userProfilerTag = 0;
  // The profiler plugin's handle of this call's API event (trace/profiler.h), the parent of its
  // operation event; null without a plugin.
  void* profilerApi = nullptr;
  // Its operation event (Coll or P2p) while it runs, the parent of its KernelCh events on a GPU.
  void* profilerOp = nullptr;
  // AlltoAllv: sendcounts, sdispls, recvcounts, rdispls (4 x nranks). AllGatherv and
  // ReduceScatterv: recvcounts, then displs (2 x nranks), equal on every rank.
  std::vector<size_t> vcounts;
};

}  // namespace weft
