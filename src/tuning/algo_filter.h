// NCCL_ALGO / NCCL_PROTO with NCCL's syntax, and RCCL_OVERRIDE_ALGO / RCCL_OVERRIDE_PROTO.
//
//   NCCL_ALGO="ring,tree"                       only these, for every collective
//   NCCL_ALGO="^tree"                           everything but these
//   NCCL_ALGO="ring;allreduce:tree,ddaflat"     a first entry for all, then per collective
//   NCCL_PROTO="^LL128;allreduce:LL128"
//
// Entries are ';'-separated; every entry but the first needs a "collective:" prefix (Broadcast,
// Reduce, AllGather, ReduceScatter, AllReduce); a prefix may name several collectives with ','.
// An entry replaces the whole set of the collectives it names. Names are case-insensitive.
// Algorithm names are those of the registry's tuned algorithms (collectives/registry.h: the
// ones with a cost formula) and their aliases. NCCL's algorithm names that Weft does not have
// (CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT) are accepted and select nothing. A token Weft
// does not know is reported with a warning naming it and skipped; the rest of the value still
// applies.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/model/cost_model.h"
#include "task/algorithm.h"

namespace weft {

struct AlgoProtoFilter {
  // Bit i set: Algorithm(i) / Protocol(i) may be chosen for tuned collective c. Every
  // registered algorithm and every protocol until a setting says otherwise.
  uint32_t algos[kNumTunedColls];
  uint32_t protos[kNumTunedColls];
  AlgoProtoFilter();
  bool allows(int coll, Algorithm a, Protocol p) const {
    return (algos[coll] >> int(a) & 1) && (protos[coll] >> int(p) & 1);
  }
  // A setting narrowed collective c (it then wins over a call's own algSelection, as in NCCL).
  bool restricts(int coll) const {
    const AlgoProtoFilter all;
    return algos[coll] != all.algos[coll] || protos[coll] != all.protos[coll];
  }
};

// Applies an NCCL_ALGO-style value to `filter`; each problem becomes one line in *warnings
// (naming the variable and the bad token).
void parseAlgoSetting(const std::string& text, const char* varName, AlgoProtoFilter* filter,
                      std::vector<std::string>* warnings);
void parseProtoSetting(const std::string& text, const char* varName, AlgoProtoFilter* filter,
                       std::vector<std::string>* warnings);

// RCCL_OVERRIDE_ALGO / RCCL_OVERRIDE_PROTO: exactly one name, forced over the model's choice for
// every collective that can run with it. *out stays -1 when `text` is empty; a bad name is a
// warning and leaves -1.
void parseOverrideAlgo(const std::string& text, int* out, std::vector<std::string>* warnings);
void parseOverrideProto(const std::string& text, int* out, std::vector<std::string>* warnings);

}  // namespace weft
