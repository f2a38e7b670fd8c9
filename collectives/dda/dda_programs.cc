// DDA (direct data access) collectives for the ranks of one host. Every rank copies its input into
// its own staging area (transports/shm/direct_area.h), the ranks meet at a barrier, and then each
// rank reads what it needs straight from its peers' staging areas. No FIFO, no ring pipeline: the
// latency is a barrier or two whatever the rank count.
//
// Messages larger than half a staging area go in rounds. Round k of the communicator (counted
// across operations) uses half k % 2 of every staging area. A rank reaches the barrier of round
// k+1 only after its reads of round k, so once a rank has passed that barrier no peer still reads
// the half that round k+2 overwrites: one barrier per round suffices, and no closing barrier is
// needed at the end of an operation.
//
// AllReduce reads registered inputs in place (RCCLX's zero-copy path; program/step.h kStepInput):
// a rank whose Task::directInput is set stages nothing and publishes its input at each round's
// barrier, and its peers fold straight from it. Since that input is the user's and not a staging
// half, flat AllReduce then ends with a barrier (kStepIfShared) that keeps every rank until no
// peer still reads its buffer; the tree's second barrier already comes after every input read.
// AllReduce in place never publishes: the rank's fold would write over its input while peers,
// and the fold itself, still read it.
#include <algorithm>

#include "collectives/dda/dda.h"
#include "collectives/dda/dda_rounds.h"

namespace weft {
namespace {

using dda::Rounds;

// The first barrier of an AllReduce round, and the stage before it unless this rank publishes.
void stageOrPublish(bool publish, size_t off, size_t base, size_t len, Program* p) {
  if (!publish) p->addStep(StepOp::kDirectStage, kStepPre, Buf::kSend, off, Buf::kRecv, base, len);
  p->addStep(StepOp::kDirectBarrier, publish ? kStepPublish : 0, 0, 0, 0);
}

// Flat AllReduce pays for a published input with its closing barrier, which costs more than the
// copy it saves below a size. In host mode (thread ranks; benchmarks/run_register_compare.sh, 9 and
// 5 repetitions): 2 ranks ran 1.0x up to 512 B, 1.24x at 2 KiB, 2.5-4.1x from 8 KiB; 4 ranks on
// 2 cores, where a barrier costs microseconds, 0.7x at 2 KiB, 1.0x at 8 KiB, 1.8-2.1x from 32 KiB.
// On GPUs a barrier costs about 1-2 us and one block copies about 100 GB/s
// (collectives/model/gpu_constants.cc), so the copy wins below roughly 128 KiB; that figure is an
// estimate, never measured on a GPU. The tree has no closing barrier and publishes at every size.
constexpr size_t kFlatPublishMinBytesHost = 8192;
constexpr size_t kFlatPublishMinBytesGpu = 128 * 1024;

bool publishesInput(const CommShape& sh, const Task& t, bool flat) {
  const size_t bytes = t.count * dataTypeSize(t.dtype);
  const auto in = reinterpret_cast<uintptr_t>(t.sendbuff), out = reinterpret_cast<uintptr_t>(t.recvbuff);
  if (t.directInput == 0 || (in < out + bytes && out < in + bytes)) return false;
  return !flat || bytes >= (sh.hostMode ? kFlatPublishMinBytesHost : kFlatPublishMinBytesGpu);
}

// Flat AllReduce: stage, barrier, every rank folds all staged inputs in rank order.
void allReduceFlat(const CommShape& sh, const Task& t, Program* p) {
  Rounds rs(*sh.direct, t, t.count, 1);
  const bool publish = publishesInput(sh, t, true);
  p->beginSequence(Lane::kDirect, 0, -1, -1);
  for (uint64_t j = 0; j < rs.count; ++j) {
    const size_t off = rs.offset(j), len = rs.length(j, t.count), base = rs.base(j);
    stageOrPublish(publish, off, base, len, p);
    p->addStep(StepOp::kDirectReduce, kStepPost | kStepInput, Buf::kSend, base, Buf::kRecv, off, len);
  }
  p->addStep(StepOp::kDirectBarrier, kStepIfShared, 0, 0, 0);
}

// Tree AllReduce: rank r reduces slice r of every staged input (a reduce-scatter by direct reads)
// and stages the result in place of its own slice r, which only it reads; after a second barrier
// every rank copies each slice from its owner (an all-gather by direct reads). The owner computed
// each value once, so all ranks hold the same bits.
void allReduceTree(const CommShape& sh, const Task& t, Program* p) {
  const int n = sh.nranks, r = sh.rank;
  Rounds rs(*sh.direct, t, t.count, 1);
  const bool publish = publishesInput(sh, t, false);
  p->beginSequence(Lane::kDirect, 0, -1, -1);
  for (uint64_t j = 0; j < rs.count; ++j) {
    const size_t off = rs.offset(j), len = rs.length(j, t.count), base = rs.base(j);
    const size_t slice = dda::sliceElems(len, n, dataTypeSize(t.dtype));
    auto sBegin = [&](int q) { return std::min(len, size_t(q) * slice); };
    auto sLen = [&](int q) { return std::min(len, size_t(q + 1) * slice) - sBegin(q); };
    stageOrPublish(publish, off, base, len, p);
    p->addStep(StepOp::kDirectReduce, kStepPost | kStepInput, Buf::kSend, base + sBegin(r), Buf::kRecv, off + sBegin(r),
               sLen(r));
    p->addStep(StepOp::kDirectStage, 0, Buf::kRecv, off + sBegin(r), Buf::kRecv, base + sBegin(r), sLen(r));
    p->addStep(StepOp::kDirectBarrier, 0, 0, 0, 0);
    for (int k = 1; k < n; ++k) {
      const int q = (r + k) % n;
      p->addStep(StepOp::kDirectCopy, 0, Buf::kSend, base + sBegin(q), Buf::kRecv, off + sBegin(q), sLen(q),
                 static_cast<uint16_t>(q));
    }
  }
}

// AllGather: stage the input, barrier, copy every rank's staged input to its place.
void allGather(const CommShape& sh, const Task& t, Program* p) {
  const int n = sh.nranks, r = sh.rank;
  Rounds rs(*sh.direct, t, t.count, 1);
  p->beginSequence(Lane::kDirect, 0, -1, -1);
  for (uint64_t j = 0; j < rs.count; ++j) {
    const size_t off = rs.offset(j), len = rs.length(j, t.count), base = rs.base(j);
    p->addStep(StepOp::kDirectStage, 0, Buf::kSend, off, Buf::kRecv, base, len);
    p->addStep(StepOp::kDirectBarrier, 0, 0, 0, 0);
    for (int k = 0; k < n; ++k) {
      const int q = (r + k) % n;
      p->addStep(StepOp::kDirectCopy, 0, Buf::kSend, base, Buf::kRecv, size_t(q) * t.count + off, len,
                 static_cast<uint16_t>(q));
    }
  }
}

// ReduceScatter and AlltoAll stage a piece of each of the n blocks of the input per round, block b
// at b * rs.perBlock; rank r then reads block r from every rank.
void stageBlocks(const CommShape& sh, const Task& t, const Rounds& rs, uint64_t j, uint8_t flags, Program* p) {
  const size_t off = rs.offset(j), len = rs.length(j, t.count), base = rs.base(j);
  for (int b = 0; b < sh.nranks; ++b)
    p->addStep(StepOp::kDirectStage, flags, Buf::kSend, size_t(b) * t.count + off, Buf::kRecv,
               base + size_t(b) * rs.perBlock, len);
  p->addStep(StepOp::kDirectBarrier, 0, 0, 0, 0);
}

void reduceScatter(const CommShape& sh, const Task& t, Program* p) {
  const int n = sh.nranks, r = sh.rank;
  Rounds rs(*sh.direct, t, t.count, n);
  p->beginSequence(Lane::kDirect, 0, -1, -1);
  for (uint64_t j = 0; j < rs.count; ++j) {
    stageBlocks(sh, t, rs, j, kStepPre, p);
    p->addStep(StepOp::kDirectReduce, kStepPost, Buf::kSend, rs.base(j) + size_t(r) * rs.perBlock, Buf::kRecv,
               rs.offset(j), rs.length(j, t.count));
  }
}

void alltoAll(const CommShape& sh, const Task& t, Program* p) {
  const int n = sh.nranks, r = sh.rank;
  Rounds rs(*sh.direct, t, t.count, n);
  p->beginSequence(Lane::kDirect, 0, -1, -1);
  for (uint64_t j = 0; j < rs.count; ++j) {
    stageBlocks(sh, t, rs, j, 0, p);
    for (int k = 0; k < n; ++k) {
      const int q = (r + k) % n;
      p->addStep(StepOp::kDirectCopy, 0, Buf::kSend, rs.base(j) + size_t(r) * rs.perBlock, Buf::kRecv,
                 size_t(q) * t.count + rs.offset(j), rs.length(j, t.count), static_cast<uint16_t>(q));
    }
  }
}

}  // namespace

void buildDdaProgram(const CommShape& sh, const Task& t, bool treeAllReduce, Program* p) {
  if (isVariableKind(t.kind)) return buildDdaVProgram(sh, t, p);
  switch (t.kind) {
    case CollKind::kAllReduce:
      if (treeAllReduce)
        allReduceTree(sh, t, p);
      else
        allReduceFlat(sh, t, p);
      return;
    case CollKind::kAllGather: allGather(sh, t, p); return;
    case CollKind::kReduceScatter: reduceScatter(sh, t, p); return;
    case CollKind::kAlltoAll: alltoAll(sh, t, p); return;
    default: return;
  }
}

}  // namespace weft
