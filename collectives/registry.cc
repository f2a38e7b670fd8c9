// The registration list: one row per algorithm, each row's descriptor defined in the algorithm's
// folder. A row's position is the algorithm's id (Algorithm), so the order matters:
//   - row 0 is what a task holds before selection and the tuner's answer for what it does not
//     tune; the ring, which runs every tuned collective, stays first;
//   - the tuner breaks cost ties in row order, and lists estimates in it (NCCL_DEBUG_SUBSYS=TUNING);
//   - selection falls back on the first row that may run a task when nothing is costed.
// New algorithms go at the end.
#include "collectives/registry.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>

#include "collectives/dda/dda.h"
#include "collectives/doubling/doubling.h"
#include "collectives/lowprec/lowprec.h"
#include "collectives/model/cost_path.h"
#include "collectives/p2p/p2p.h"
#include "collectives/ring/ring.h"
#include "collectives/tree/tree.h"

namespace weft {
namespace {

constexpr const AlgorithmDesc* kRegistry[] = {
    &kRingAlgorithm,             // collectives/ring
    &kTreeAlgorithm,             // collectives/tree
    &kDdaFlatAlgorithm,          // collectives/dda
    &kDdaTreeAlgorithm,          // collectives/dda
    &kLowPrecisionAlgorithm,     // collectives/lowprec
    &kP2pAlgorithm,              // collectives/p2p
    &kDoublingAlgorithm,         // collectives/doubling
    &kHalvingDoublingAlgorithm,  // collectives/doubling
};
constexpr int kCount = static_cast<int>(std::size(kRegistry));
static_assert(kCount <= kMaxAlgorithms, "algorithm masks and the tuner's arrays hold kMaxAlgorithms rows");

}  // namespace

int algorithmCount() { return kCount; }

const AlgorithmDesc& algorithmDesc(Algorithm a) { return *kRegistry[static_cast<int>(a) < kCount ? int(a) : 0]; }

uint32_t allAlgorithmsMask() { return (1u << kCount) - 1; }

const char* algorithmName(Algorithm a) { return static_cast<int>(a) < kCount ? kRegistry[int(a)]->name : "?"; }

bool findAlgorithm(const std::string& text, Algorithm* out) {
  for (int i = 0; i < kCount; ++i) {
    bool match = namesMatch(text, kRegistry[i]->name);
    // Aliases are comma separated; each is compared like the name.
    for (const char* a = kRegistry[i]->aliases; !match && *a != '\0';) {
      const char* end = a;
      while (*end != '\0' && *end != ',') ++end;
      match = namesMatch(text, std::string(a, end).c_str());
      a = *end == ',' ? end + 1 : end;
    }
    if (match) {
      *out = static_cast<Algorithm>(i);
      return true;
    }
  }
  return false;
}

Algorithm algorithmNamed(const char* name) {
  Algorithm a;
  if (findAlgorithm(name, &a)) return a;
  std::fprintf(stderr, "weft: no algorithm named \"%s\" is registered (collectives/registry.cc)\n", name);
  std::abort();
}

Eligibility eligibility(Algorithm a, const CommShape& shape, const Task& task) {
  if (static_cast<int>(a) >= kCount) return Eligibility::kNo;
  const AlgorithmDesc& d = *kRegistry[int(a)];
  return (d.kinds & kindBit(task.kind)) != 0 ? d.eligible(shape, task) : Eligibility::kNo;
}

size_t algorithmScratchBytes(const CommShape& shape, const Task& task) {
  const AlgorithmDesc& d = algorithmDesc(task.algorithm);
  return d.scratchBytes != nullptr ? d.scratchBytes(shape, task) : 0;
}

void buildProgram(const CommShape& shape, const Task& task, Program* prog) {
  algorithmDesc(task.algorithm).build(shape, task, prog);
}

double estimateUs(const ModelInput& in, const HostConstants& hc, CollKind coll, Algorithm algo, Protocol proto,
                  int nChannels, size_t nBytes) {
  if (tunedCollIndex(coll) < 0 || in.nranks < 1) return -1;
  const double S = std::max<double>(1.0, double(nBytes));
  const int c = std::max(1, nChannels);
  const bool multiHost = in.nHosts > 1;
  // What one host's ranks touch: their inputs and outputs (and staging copies of them).
  const double workingSet = 3.0 * S * std::max(1, in.ranksPerHost);
  const Path p = pathFor(in, hc, multiHost, workingSet);
  if (in.nranks == 1) return p.stepUs + S * (p.copyPerB + p.memPerB);  // a local copy whatever the algorithm
  if (int(algo) >= algorithmCount()) return -1;
  const AlgorithmDesc& d = algorithmDesc(algo);
  const double us = d.cost != nullptr ? d.cost(in, p, coll, proto, c, S) : -1;
  return us < 0 ? us : us + S * p.memPerB * p.workScale;
}

}  // namespace weft
