// DDA's two registry entries. DDAFlat and DDATree differ in how they run AllReduce, where the
// model chooses between them (and the ring and the tree) within RCCL_ENABLE_DDA_ALL_REDUCE and
// the flat/tree size limits. AlltoAll has no cost formula: it runs by direct reads only where
// RCCL_ENABLE_DDA_ALL_TO_ALL asks for it, up to its limit (in host mode it measured at most 1.17x
// ahead of the point-to-point pattern, below 1 MiB, and behind above; benchmarks/README.md).
// AllGather and ReduceScatter run so where RCCL_ENABLE_DDA_*=1 asks, and in host mode the model
// may choose them. AllGatherv and ReduceScatterv (DDAFlat) are costed, so the model may choose
// them for small sizes.
#include "collectives/dda/dda.h"

#include <cstdint>

namespace weft {

bool directLaneUsable(const CommShape& sh) {
  // Steps name the peer they read in 16 bits.
  if (sh.nranks < 2 || sh.nranks > 65535 || !sh.allRanksLocal() || sh.mixedExecutors) return false;
  // Host mode stages in shared memory; GPU ranks stage in device memory that their peers map as
  // the P2P transport maps FIFOs (gpu_executor/device_direct.h).
  return sh.hostMode ? !sh.agreed->shmDisable : !sh.agreed->p2pDisable;
}

std::string directLaneRefusal(const CommShape& sh) {
  if (directLaneUsable(sh)) return "";
  const param::Agreed& a = *sh.agreed;
  std::string asked;
  auto add = [&](bool on, const char* name) {
    if (on) asked += (asked.empty() ? "" : ", ") + std::string(name);
  };
  add(a.lowPrecision, "RCCL_LOW_PRECISION_ENABLE=1");
  add(a.lowPrecisionAllReduce == 1, "RCCL_LOW_PRECISION_ENABLE_ALLREDUCE=1");
  add(a.lowPrecisionAllGather == 1, "RCCL_LOW_PRECISION_ENABLE_ALLGATHER=1");
  add(a.lowPrecisionReduceScatter == 1, "RCCL_LOW_PRECISION_ENABLE_REDUCESCATTER=1");
  add(a.lowPrecisionAllToAll == 1, "RCCL_LOW_PRECISION_ENABLE_ALLTOALL=1");
  add(a.ddaAllGather == 1, "RCCL_ENABLE_DDA_ALL_GATHER=1");
  add(a.ddaReduceScatter == 1, "RCCL_ENABLE_DDA_REDUCE_SCATTER=1");
  add(a.ddaAllToAll, "RCCL_ENABLE_DDA_ALL_TO_ALL=1");
  if (asked.empty()) return "";
  std::string why;
  if (sh.nranks < 2)
    why = "the communicator has a single rank";
  else if (!sh.allRanksLocal())
    why = "only " + std::to_string(sh.nLocal) + " of its " + std::to_string(sh.nranks) +
          " ranks share this host, and direct reads need every rank on one host";
  else if (sh.mixedExecutors)
    why = "some of its ranks run on GPUs and others in host mode, and they cannot share staging areas";
  else if (sh.hostMode && a.shmDisable)
    why = "NCCL_SHM_DISABLE=1 turns off the shared memory that direct reads go through";
  else if (!sh.hostMode && a.p2pDisable)
    why = "NCCL_P2P_DISABLE=1 turns off the peer mappings of GPU memory that direct reads go through";
  else
    why = "it has more ranks than the direct lane can address (65535)";
  return asked + " cannot be honoured on this communicator: " + why +
         "; its collectives run the exact ring and tree algorithms instead";
}

namespace {

size_t bytesOf(const Task& t) { return t.count * dataTypeSize(t.dtype); }

Eligibility flatEligible(const CommShape& sh, const Task& t) {
  if (!directLaneUsable(sh)) return Eligibility::kNo;
  const param::Agreed& a = *sh.agreed;
  const size_t bytes = bytesOf(t), all = bytes * size_t(sh.nranks);
  auto forcedIf = [](bool on) { return on ? Eligibility::kForced : Eligibility::kNo; };
  // The -1..1 settings of AllGather and ReduceScatter (below).
  auto forcedOrModel = [&](int64_t setting, int64_t maxBytes) {
    if (setting == 1) return forcedIf(all <= size_t(maxBytes));
    return setting < 0 && sh.hostMode ? Eligibility::kModel : Eligibility::kNo;
  };
  switch (t.kind) {
    case CollKind::kAllReduce:
      return a.ddaAllReduce && bytes <= size_t(a.ddaFlatMaxBytes) ? Eligibility::kModel : Eligibility::kNo;
    // AllGather and ReduceScatter: RCCL_ENABLE_DDA_*=1 forces direct reads up to its limit; left
    // at -1, host mode lets the model weigh them at every size (with 4 ranks on 2 cores AllGather
    // measured 1.5-2.3x ahead of the ring from 128 B to 64 MiB, ReduceScatter 1.5-1.8x up to
    // 64 KiB; benchmarks/README.md), and GPUs keep RCCL's "off".
    case CollKind::kAllGather: return forcedOrModel(a.ddaAllGather, a.ddaAllGatherMaxBytes);
    case CollKind::kReduceScatter: return forcedOrModel(a.ddaReduceScatter, a.ddaReduceScatterMaxBytes);
    case CollKind::kAlltoAll: return forcedIf(a.ddaAllToAll && all <= size_t(a.ddaAllToAllMaxBytes));
    // The uneven kinds (count: the total) follow their even counterparts' settings where those ask
    // for DDA; elsewhere the model weighs DDA against the ring (and, for AllGatherv, the direct
    // point-to-point pattern).
    case CollKind::kAllGatherv:
      return a.ddaAllGather == 1 && bytes <= size_t(a.ddaAllGatherMaxBytes) ? Eligibility::kForced
                                                                            : Eligibility::kModel;
    case CollKind::kReduceScatterv:
      return a.ddaReduceScatter == 1 && bytes <= size_t(a.ddaReduceScatterMaxBytes) ? Eligibility::kForced
                                                                                    : Eligibility::kModel;
    default: return Eligibility::kNo;
  }
}

// RCCL_DDA_ALL_REDUCE_TREE_MAX_BYTES when the user leaves it at -1. On GPUs RCCL's default, which
// Weft's GPU model has not been measured against. In host mode the model decides at every size:
// with 3 and 4 ranks on one host, DDA tree measured up to 1.5x ahead of the better of the ring and
// the tree from 32 MiB, past RCCL's limit (benchmarks/README.md, run_algo_compare).
size_t treeMaxBytes(const CommShape& sh) {
  constexpr size_t kRcclDefault = 30408704;
  const param::Agreed& a = *sh.agreed;
  if (a.ddaTreeMaxBytes >= 0) return size_t(a.ddaTreeMaxBytes);
  return sh.hostMode ? SIZE_MAX : kRcclDefault;
}

Eligibility treeEligible(const CommShape& sh, const Task& t) {
  const param::Agreed& a = *sh.agreed;
  return directLaneUsable(sh) && a.ddaAllReduce && bytesOf(t) <= treeMaxBytes(sh) ? Eligibility::kModel
                                                                                  : Eligibility::kNo;
}

void buildFlat(const CommShape& sh, const Task& t, Program* p) { buildDdaProgram(sh, t, false, p); }
void buildTree(const CommShape& sh, const Task& t, Program* p) { buildDdaProgram(sh, t, true, p); }

// DDA exchanges through shared buffers, not FIFOs: no protocol, no channels. Direct access needs
// every rank on one host.
bool costed(const ModelInput& in, CollKind coll, Protocol proto) {
  return coll == CollKind::kAllReduce && proto == Protocol::kSimple && in.nHosts <= 1;
}

// Copy the input to the staging area, barrier, every rank folds all n inputs of the whole message,
// reading n-1 of them from its peers. Staging halves alternate between operations, so a round
// needs one barrier.
// AllGatherv: a rank stages its block and reads all the others. ReduceScatterv: every rank stages
// the whole vector and folds its own block from every area. The tuner sees only the total, so both
// are costed as the skewed case, one rank's block being nearly all of it (the ring's strength):
// DDA is chosen where the barrier's latency beats the ring's n-1 hops, not for its bandwidth.
double flatCost(const ModelInput& in, const Path& p, CollKind coll, Protocol proto, int, double S) {
  const double n = in.nranks;
  if (proto == Protocol::kSimple && in.nHosts <= 1) {
    // AllGather: a rank stages its own block, and copies all n blocks to their places, n-1 of them
    // read from its peers' areas.
    if (coll == CollKind::kAllGather)
      return S / n * (2 * p.copyPerB + (n - 1) * p.peerReadPerB) * p.workScale + barrierUs(in, p);
    // ReduceScatter: a rank stages its whole input and folds its own block from every area.
    if (coll == CollKind::kReduceScatter)
      return (S * p.copyPerB + (n - 1) / n * S * (p.reducePerB + p.peerReadPerB)) * p.workScale + barrierUs(in, p);
    if (coll == CollKind::kAllGatherv) return S * (p.copyPerB + p.peerReadPerB) * p.workScale + barrierUs(in, p);
    if (coll == CollKind::kReduceScatterv)
      return (S * p.copyPerB + (n - 1) * S * (p.reducePerB + p.peerReadPerB)) * p.workScale + barrierUs(in, p);
  }
  if (!costed(in, coll, proto)) return -1;
  return (S * p.copyPerB + (n - 1) * S * (p.reducePerB + p.peerReadPerB)) * p.workScale + barrierUs(in, p);
}

// Stage, barrier, each rank reduces its 1/n slice from all peers (reduce-scatter by direct reads),
// stages it, barrier, each rank reads the other slices (all-gather by direct reads).
double treeCost(const ModelInput& in, const Path& p, CollKind coll, Protocol proto, int, double S) {
  if (!costed(in, coll, proto)) return -1;
  const double n = in.nranks;
  return (S * p.copyPerB + (n - 1) / n * S * (p.reducePerB + p.peerReadPerB) + (n - 1) / n * S * p.peerReadPerB) *
             p.workScale +
         2 * barrierUs(in, p);
}

}  // namespace

const AlgorithmDesc kDdaFlatAlgorithm = {
    "DDAFlat",
    "",
    "direct reads: every rank stages its input, then folds all staged inputs (AllReduce) or copies them",
    kindBit(CollKind::kAllReduce) | kindBit(CollKind::kAllGather) | kindBit(CollKind::kReduceScatter) |
        kindBit(CollKind::kAlltoAll) | kindBit(CollKind::kAllGatherv) | kindBit(CollKind::kReduceScatterv),
    "every rank on one host (shared memory in host mode, P2P on GPUs); AllReduce up to "
    "RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES "
    "(RCCL_ENABLE_DDA_ALL_REDUCE); AllGather and ReduceScatter where RCCL_ENABLE_DDA_* asks, up to its limit, "
    "and in host mode where the model picks it; AllGatherv and ReduceScatterv where the model picks it; "
    "AlltoAll only where RCCL_ENABLE_DDA_ALL_TO_ALL asks",
    /*lossy=*/false,
    /*channelled=*/false,
    /*reusable=*/false,
    flatEligible,
    nullptr,  // the staging areas, not the scratch
    buildFlat,
    flatCost,
};

const AlgorithmDesc kDdaTreeAlgorithm = {
    "DDATree",
    "",
    "direct reads: AllReduce as a reduce-scatter and an all-gather between the staging areas",
    kindBit(CollKind::kAllReduce),
    "every rank on one host (shared memory in host mode, P2P on GPUs); up to RCCL_DDA_ALL_REDUCE_TREE_MAX_BYTES "
    "(RCCL_ENABLE_DDA_ALL_REDUCE)",
    /*lossy=*/false,
    /*channelled=*/false,
    /*reusable=*/false,
    treeEligible,
    nullptr,
    buildTree,
    treeCost,
};

}  // namespace weft
