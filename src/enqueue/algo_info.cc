#include "enqueue/algo_info.h"

#include <cstring>

#include "collectives/registry.h"
#include "comm/comm.h"
#include "comm/comm_algorithms.h"
#include "tuning/select.h"

namespace weft {
namespace {

constexpr int kNcclTree = 0, kNcclRing = 1, kFirstWeftId = 7;
constexpr const char* kNcclAlgoNames[kFirstWeftId] = {"TREE",      "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS",
                                                      "NVLS_TREE", "PAT"};
constexpr const char* kNcclProtoNames[] = {"LL", "LL128", "SIMPLE"};

bool isNamed(Algorithm a, const char* name) { return strcmp(algorithmName(a), name) == 0; }

// Weft's id of registry row a: NCCL's for the ring and the tree, 7 up for the others.
int idOf(Algorithm a) {
  if (isNamed(a, "Ring")) return kNcclRing;
  if (isNamed(a, "Tree")) return kNcclTree;
  int id = kFirstWeftId;
  for (int i = 0; i < static_cast<int>(a); ++i)
    if (!isNamed(Algorithm(i), "Ring") && !isNamed(Algorithm(i), "Tree")) ++id;
  return id;
}

bool kindOf(int func, CollKind* kind) {
  switch (func) {
    case 0: *kind = CollKind::kBroadcast; return true;
    case 1: *kind = CollKind::kReduce; return true;
    case 2: *kind = CollKind::kAllGather; return true;
    case 3: *kind = CollKind::kReduceScatter; return true;
    case 4: *kind = CollKind::kAllReduce; return true;
    case 8: *kind = CollKind::kAlltoAll; return true;
    case 9: *kind = CollKind::kAlltoAllv; return true;
    case 10: *kind = CollKind::kScatter; return true;
    case 11: *kind = CollKind::kGather; return true;
    default: return false;
  }
}

}  // namespace

ncclResult_t describeChoice(ncclComm* comm, int func, uint64_t count, ncclDataType_t dtype, int* algo, int* protocol,
                            int* nChannels, std::string* why) {
  Task t;
  if (!kindOf(func, &t.kind)) {
    *why = "function " + std::to_string(func) +
           " is not a collective Weft tunes (Broadcast 0, Reduce 1, AllGather 2, ReduceScatter 3, AllReduce 4, "
           "AlltoAll 8, AlltoAllv 9, Scatter 10, Gather 11)";
    return ncclInvalidArgument;
  }
  t.comm = comm;
  t.count = count;
  t.dtype = dtype;
  t.op = ncclSum;
  // Out of place, as the common call is; the buffers are never touched.
  static unsigned char in, out;
  t.sendbuff = &in;
  t.recvbuff = &out;
  if (t.kind == CollKind::kAlltoAllv) {  // the even exchange an AlltoAll of `count` would make
    const size_t n = static_cast<size_t>(comm->nranks);
    t.vcounts.resize(4 * n);
    for (size_t r = 0; r < n; ++r) {
      t.vcounts[r] = t.vcounts[2 * n + r] = count;
      t.vcounts[n + r] = t.vcounts[3 * n + r] = r * count;
    }
  }
  selectAlgorithm(comm->tuner.get(), commShape(comm), &t);
  *algo = idOf(t.algorithm);
  *protocol = static_cast<int>(t.protocol);
  *nChannels = t.nChannels;
  return ncclSuccess;
}

const char* choiceAlgorithmName(int id) {
  if (id >= 0 && id < kFirstWeftId) return kNcclAlgoNames[id];
  for (int a = 0; a < algorithmCount(); ++a)
    if (id >= kFirstWeftId && idOf(Algorithm(a)) == id) return algorithmName(Algorithm(a));
  return nullptr;
}

const char* choiceProtocolName(int id) {
  return id >= 0 && id < static_cast<int>(sizeof kNcclProtoNames / sizeof *kNcclProtoNames) ? kNcclProtoNames[id]
                                                                                            : nullptr;
}

}  // namespace weft
