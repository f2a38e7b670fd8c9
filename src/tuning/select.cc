#include "tuning/select.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include "base/log.h"
#include "collectives/registry.h"

namespace weft {

uint32_t modelCandidates(const CommShape& shape, const Task& task) {
  uint32_t out = 0;
  for (int a = 0; a < algorithmCount(); ++a)
    if (!algorithmDesc(Algorithm(a)).lossy && eligibility(Algorithm(a), shape, task) == Eligibility::kModel)
      out |= 1u << a;
  return out;
}

size_t tunedBytes(int nranks, const Task& t) {
  size_t bytes = t.count * dataTypeSize(t.dtype);
  if (t.kind == CollKind::kAllGather || t.kind == CollKind::kReduceScatter) bytes *= size_t(nranks);
  return bytes;
}

namespace {

// The bytes of one rank's input and of its output.
struct IoBytes {
  size_t in, out;
};
IoBytes ioBytes(int nranks, const Task& t) {
  const size_t bytes = t.count * dataTypeSize(t.dtype);
  return {t.kind == CollKind::kReduceScatter ? bytes * size_t(nranks) : bytes,
          t.kind == CollKind::kAllGather ? bytes * size_t(nranks) : bytes};
}

// Whether the operation's input and output share bytes (in place, or part of it).
bool buffersOverlap(int nranks, const Task& t) {
  const IoBytes io = ioBytes(nranks, t);
  const auto send = reinterpret_cast<uintptr_t>(t.sendbuff), recv = reinterpret_cast<uintptr_t>(t.recvbuff);
  return send < recv + io.out && recv < send + io.in;
}

}  // namespace

namespace {

void chooseFor(const Tuner* tuner, const CommShape& shape, Task* task);

bool memoizable(const Tuner* tuner, const Task& t) {
  return tuner != nullptr && tuner->plugin() == nullptr && t.callRows == 0 && t.callMinChannels == 0 &&
         t.callMaxChannels == 0 && t.op < ncclNumOps;
}

}  // namespace

void selectAlgorithm(const Tuner* tuner, const CommShape& shape, Task* task, SelectionMemo* memo) {
  task->algorithm = Algorithm{};
  task->protocol = Protocol::kSimple;
  task->nChannels = 1;
  // The local ranks share the last-level cache: once their inputs and outputs together outgrow
  // it, the output is not going to be in cache when the user reads it, and streaming it out saves
  // the read a plain store makes of each line first. Counting the outputs alone started streaming
  // a size later, where out-of-place AllReduce ran 40% (4 ranks, 4 MiB each) and 54% (2 ranks,
  // 8 MiB) behind in place; streaming there took 18-29% off, with fresh and with reused buffers.
  // Not in place: there the output's lines were just read as input, so plain stores to them cost
  // nothing (streaming measured 15-30% slower).
  const IoBytes io = ioBytes(shape.nranks, *task);
  task->streamOutput = shape.hostMode && tuner != nullptr && !buffersOverlap(shape.nranks, *task) &&
                       double(io.in + io.out) * std::max(1, shape.nLocal) >= tuner->constants().cacheMiB * 1048576.0;
  if (memo == nullptr || !memoizable(tuner, *task)) {
    chooseFor(tuner, shape, task);
    return;
  }
  const uint64_t serial = tuner->serial();
  for (const SelectionMemo::Entry& e : memo->entries)
    if (e.tunerSerial == serial && e.count == task->count && e.kind == task->kind && e.dtype == task->dtype &&
        e.op == task->op) {
      task->algorithm = e.algorithm;
      task->protocol = e.protocol;
      task->nChannels = e.nChannels;
      return;
    }
  chooseFor(tuner, shape, task);
  memo->entries[memo->next] = SelectionMemo::Entry{serial,   task->count,     task->kind,     task->dtype,
                                                   task->op, task->algorithm, task->protocol, task->nChannels};
  memo->next = (memo->next + 1) % SelectionMemo::kEntries;
}

namespace {

// The selection itself (selectAlgorithm has set the defaults and streamOutput).
void chooseFor(const Tuner* tuner, const CommShape& shape, Task* task) {
  // The settings that ask for an algorithm come first, in RCCL's order: low precision changes
  // results, so it runs only where the user enabled it and then wins; then DDA where
  // RCCL_ENABLE_DDA_ALL_GATHER / _REDUCE_SCATTER / _ALL_TO_ALL forces it. Each algorithm's
  // eligibility is asked once: on small operations these checks are a good part of a call's cost.
  const int nAlgos = algorithmCount();
  uint32_t forced[2] = {0, 0};  // [lossy]: the algorithms a setting forces
  uint32_t candidates = 0;      // modelCandidates
  for (int a = 0; a < nAlgos; ++a) {
    const bool lossy = algorithmDesc(Algorithm(a)).lossy;
    switch (eligibility(Algorithm(a), shape, *task)) {
      case Eligibility::kForced: forced[lossy] |= 1u << a; break;
      case Eligibility::kModel: candidates |= lossy ? 0u : 1u << a; break;
      default: break;
    }
  }
  for (uint32_t f : {forced[1], forced[0]})
    if (f != 0) {
      task->algorithm = Algorithm(std::countr_zero(f));
      return;
    }
  const int ci = tunedCollIndex(task->kind);
  // A call's algSelection (nccl<Coll>Config) narrows the candidates, unless NCCL_ALGO or NCCL_PROTO
  // narrowed this collective: the environment wins, as in NCCL.
  uint64_t rows = task->callRows;
  if (rows != 0 && tuner != nullptr && ci >= 0 && tuner->options().filter.restricts(ci)) rows = 0;
  if (rows != 0) {
    uint32_t algos = 0;
    for (int a = 0; a < nAlgos; ++a)
      if (rows >> (a * kNumProtocols) & ((1u << kNumProtocols) - 1)) algos |= 1u << a;
    if ((candidates & algos) != 0) candidates &= algos;
  }
  auto boundChannels = [&](int n) {
    if (task->callMinChannels > 0) n = std::max(n, task->callMinChannels);
    if (task->callMaxChannels > 0) n = std::min(n, task->callMaxChannels);
    return std::clamp(n, 1, std::max(1, shape.nChannels));
  };
  if (ci < 0 || tuner == nullptr) {
    // Nothing to compare: the first registered algorithm that may run it (point-to-point patterns
    // have one; a collective without a tuner gets the ring).
    if (candidates != 0) task->algorithm = Algorithm(std::countr_zero(candidates));
    task->nChannels = boundChannels(task->nChannels);
    return;
  }
  TunerChoice c = tuner->choose(task->kind, tunedBytes(shape.nranks, *task), candidates, rows);
  task->algorithm = c.algorithm;
  task->protocol = c.protocol;
  task->nChannels = boundChannels(c.nChannels);
}

}  // namespace

double estimateTaskUs(const Tuner& tuner, const CommShape& shape, const Task& t, bool peerOnOtherHost) {
  if (tunedCollIndex(t.kind) >= 0)
    return std::max(0.0, estimateUs(tuner.input(), tuner.constants(), t.kind, t.algorithm, t.protocol, t.nChannels,
                                    tunedBytes(shape.nranks, t)));
  size_t bytes = t.count * dataTypeSize(t.dtype);
  switch (t.kind) {
    case CollKind::kSend:
    case CollKind::kRecv:
    case CollKind::kCopy:
      return estimateP2pUs(tuner.input(), tuner.constants(), bytes, t.kind != CollKind::kCopy && peerOnOtherHost);
    default:
      // AlltoAll(v), Gather, Scatter: one transfer per peer, issued side by side.
      return estimateP2pUs(tuner.input(), tuner.constants(), bytes * size_t(std::max(1, shape.nranks - 1)),
                           tuner.input().nHosts > 1);
  }
}

void logAllReduceChoices(const Tuner& tuner, const CommShape& shape) {
  for (size_t bytes = 8; bytes <= (size_t(1) << 26); bytes *= 2) {
    Task t;
    t.kind = CollKind::kAllReduce;
    t.dtype = ncclFloat32;
    t.count = bytes / sizeof(float);
    selectAlgorithm(&tuner, shape, &t);
    std::string line;
    for (int a = 0; a < algorithmCount(); ++a) {
      float best = -1;
      for (int p = 0; p < kNumProtocols; ++p) {
        float c = tuner.cost(0, Tuner::bucketOf(bytes), Algorithm(a), Protocol(p));
        if (c >= 0 && (best < 0 || c < best)) best = c;
      }
      if (best >= 0) line += std::string(" ") + algorithmName(Algorithm(a)) + "=" + std::to_string(std::lround(best));
    }
    WEFT_INFO(kLogTuning, "tuner: AllReduce %zu B -> %s/%s/%d ch (estimates us:%s)", bytes, algorithmName(t.algorithm),
              protocolName(t.protocol), t.nChannels, line.c_str());
  }
}

}  // namespace weft
