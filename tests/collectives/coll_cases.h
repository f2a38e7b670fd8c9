// One collective call as a test case: the rank's buffers (with guard bytes on both sides), the
// NCCL call, and a check of every output element against a reference computed on the host from
// the same deterministic inputs (each rank can compute every other rank's input, so no reference
// data has to travel between ranks).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api.h"
#include "harness.h"

namespace weft_test {

enum class Coll {
  kAllReduce,
  kBroadcast,
  kBcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAlltoAll,
  kGather,
  kScatter,
  kAlltoAllv,
  kAllGatherv,     // weftAllGatherv: the layout of vcollLayout (reference.h)
  kReduceScatterv  // weftReduceScatterv: the same layout
};
const char* collName(Coll coll);
// The NCCL and RCCL collectives; Weft's uneven ones (weft.h) are listed apart.
const std::vector<Coll>& allColls();
const std::vector<Coll>& unevenColls();
bool collReduces(Coll coll);
bool collHasRoot(Coll coll);
bool collAllowsInPlace(Coll coll);     // AlltoAll and AlltoAllv do not
bool collAllowsOutOfPlace(Coll coll);  // Bcast is always in place

// Reductions: the five built-in ops and PreMulSum with either scalar residence.
enum class Red { kSum, kProd, kMax, kMin, kAvg, kPreMulImm, kPreMulDev };
const char* redName(Red red);
const std::vector<Red>& allReds();
// The NCCL op of a built-in reduction; false for the PreMulSum ones, which must be created.
bool builtinRedOp(Red red, ncclRedOp_t* op);

struct CollCase {
  Coll coll = Coll::kAllReduce;
  ncclDataType_t dtype = ncclFloat32;
  Red red = Red::kSum;  // ignored unless the collective reduces
  size_t count = 0;     // NCCL's count argument (per rank block for AllGather, ReduceScatter, ...);
                        // the uneven kinds: the largest block of their layout
  bool inPlace = false;
  bool evenRanksOnly = false;  // with inPlace: only even ranks work in place, odd ones out of place
  bool shifted = false;        // buffers aligned to the element size only (64-byte boundary + 1 element)
  int root = 0;                // ignored unless the collective has a root
  uint32_t seed = 1;
  // "AllReduce/float16/sum/c1023/inplace" plus "/root2" where it applies.
  std::string name() const;
};

// One rank's part of one case. Not movable: the PreMulSum scalar lives inside it.
class CaseRun {
 public:
  CaseRun(const CollCase& c, int rank, int nranks);
  ~CaseRun();
  CaseRun(const CaseRun&) = delete;
  CaseRun& operator=(const CaseRun&) = delete;

  // Creates the PreMulSum op when the case uses one. A device-resident scalar holds a wrong value
  // until armScalar(): it must be read when the operation executes, not when the op is created.
  // A host-immediate scalar is overwritten right after creation: it must have been copied.
  bool createOp(ncclComm_t comm, Reporter* rep);
  void armScalar();
  bool destroyOp(ncclComm_t comm, Reporter* rep);
  // The NCCL call itself, nothing else.
  ncclResult_t issue(ncclComm_t comm) const;
  // Checks the outputs, that inputs are untouched and that no byte outside the buffers changed;
  // reports the digest of an AllReduce result for the cross-rank bit-identity check.
  void verify(Reporter* rep) const;
  std::string label() const;  // case name, nranks and rank

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The whole life of one case on one rank of a threads/procs run. False when an NCCL call failed:
// the ranks may now be out of step, so the caller should stop issuing collectives.
bool runCaseOnRank(const CollCase& c, RankCtx& ctx);
// The same for every rank at once from one thread: the calls go in one ncclGroupStart/End.
bool runCaseOnClique(const CollCase& c, CliqueCtx& ctx);

// The roots worth testing for nranks: 0, a middle one and nranks-1 (deduplicated).
std::vector<int> rootsFor(int nranks);

}  // namespace weft_test
