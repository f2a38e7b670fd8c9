// The direct lane in the GPU kernel (DDA and low precision): the steps of program.h's kDirect* and
// kLowp* ops over every local rank's staging area in device memory (device_direct.h), one block or
// several running the sequence. What each data step computes is the host executor's
// (direct_step.cc): the same reduceCopy contract and rank-order fold, and the same FP8 block
// functions (lowp_quant.h), so a GPU rank and a host-mode rank give the same bits.
//
// The barrier: thread 0 publishes this rank's stamp for the barrier, fences at system scope (the
// block's staging writes reach every peer's GPU first), raises its own arrival counter, and waits
// until every peer's counter is as high. Only the owner writes a counter, so no atomics are needed,
// which also keeps it legal where atomics cannot reach a peer's memory.
//
// Several blocks may run one sequence (DevChain::nParts), each taking its part of every step
// (stepPart). At a barrier they first meet in their own rank's header (an atomic count in the
// rank's own GPU memory); the last to come does the barrier above for all of them and then releases
// the others. Peers see one arrival per rank whatever the number of blocks, so each rank chooses
// its own number (WEFT_DIRECT_BLOCKS).
//
// Never run on a GPU: the kernel-emulation tests run this source on CPU threads, which shows the
// protocol and the arithmetic but not GPU memory ordering.
#pragma once
#include "gpu_executor/kernel_primitives.h"
#include "math/lowp_quant.h"

namespace weft::gpu {

// A stamp read from a peer's memory one word at a time, bypassing any cached copy.
__device__ inline OpStamp loadStamp(const OpStamp* p) {
  OpStamp s;
  const volatile uint32_t* w = reinterpret_cast<const volatile uint32_t*>(p);
  uint32_t words[sizeof(OpStamp) / 4];
  for (size_t i = 0; i < sizeof(OpStamp) / 4; ++i) words[i] = w[i];
  memcpy(&s, words, sizeof s);
  return s;
}

// After a barrier (until this rank arrives at the next): what rank `r` published there (0: it
// staged). The owner wrote the slot before the arrival this rank saw and cannot rewrite it sooner.
__device__ inline uint64_t publishedWord(const DevDirectArea* areas, int rank, int r) {
  const uint64_t slot = loadVolatile(&areas[rank].head->arrived) & 1;
  return loadVolatile(&areas[r].head->inputs[slot]);
}

// Where this rank reads the input rank `r` published, or null: it staged, or it published in a
// window this rank does not map (directUnreadable tells the two apart). Ranks in one process
// publish the address; in several, a row of the window table and an offset (program/step.h).
__device__ inline const unsigned char* publishedInput(const LaunchHeader* h, const DevDirectArea* areas, int rank,
                                                      int r) {
  const uint64_t word = publishedWord(areas, rank, r);
  if (!isPublishedWindowRef(word)) return reinterpret_cast<const unsigned char*>(word);
  const uint64_t row = publishedWindowId(word);
  if (row >= h->windowRows) return nullptr;
  const uint64_t base = h->windows[row * uint64_t(h->nranks) + uint64_t(r)];
  return base != 0 ? reinterpret_cast<const unsigned char*>(base + publishedWindowOffset(word)) : nullptr;
}

// The first rank whose published input this rank cannot read, or -1. Such a rank staged nothing,
// so the fold must fail rather than read its stale staging data, as the host executor does.
__device__ inline int directUnreadable(const LaunchHeader* h, const DevDirectArea* areas, int rank) {
  for (int r = 0; r < h->nranks; ++r)
    if (isPublishedWindowRef(publishedWord(areas, rank, r)) && publishedInput(h, areas, rank, r) == nullptr) return r;
  return -1;
}

// Thread 0 only: arrives at the next direct barrier and waits for every peer. False (reported) on
// abort, timeout, or a peer that arrived from a different call.
__device__ inline bool directBarrierLeader(const LaunchHeader* h, const DevDirectArea* areas, const DevSequence& q,
                                           const DevTask& t, const Step& st, uint32_t stepIndex) {
  DevDirectHeader* mine = areas[h->rank].head;
  const uint64_t n = loadVolatile(&mine->arrived) + 1;
  mine->stamps[n & 1] = t.stamp;
  // Every barrier writes its input slot, so a peer never reads one left from an earlier barrier.
  storeVolatile(&mine->inputs[n & 1], (st.flags & kStepPublish) ? t.directInput : uint64_t(0));
  __threadfence_system();  // the stamp, the input and the block's staged data before the arrival
  storeVolatile(&mine->arrived, n);
  int64_t start = 0;
  unsigned spins = 0;
  for (int p = 0; p < h->nranks; ++p) {
    if (p == h->rank) continue;
    while (loadVolatile(&areas[p].head->arrived) < n) {
      if ((++spins & 255) != 0) continue;
      if (*h->abortFlag != 0) {
        report(h, kDevAborted, q, t, st, stepIndex, 0, p, true, 0, 0);
        return false;
      }
      const int64_t now = waitClock();
      if (start == 0) start = now;
      if (now - start > h->timeoutTicks) {
        report(h, kDevTimeout, q, t, st, stepIndex, 0, p, true, 0, 0);
        return false;
      }
      backOff();
    }
  }
  __threadfence();  // what the peers staged is read only after their arrivals were seen
  if (t.checkMismatch == 0) return true;
  for (int p = 0; p < h->nranks; ++p) {
    if (p == h->rank) continue;
    // The peer wrote this stamp before arriving, and cannot overwrite it before this rank arrives
    // at the next barrier.
    const OpStamp theirs = loadStamp(&areas[p].head->stamps[n & 1]);
    if (!stampsAgree(t.stamp, theirs, h->rank, p)) {
      report(h, kDevStampMismatch, q, t, st, stepIndex, 0, p, true, 0, 0, &theirs);
      return false;
    }
  }
  return true;
}

// A count raised by one, returning its value before (atomicCAS is what both vendors and the
// emulation share).
__device__ inline unsigned atomicIncrement(unsigned* p) {
  unsigned seen = *static_cast<volatile unsigned*>(p);
  for (;;) {
    const unsigned prior = atomicCAS(p, seen, seen + 1u);
    if (prior == seen) return prior;
    seen = prior;
  }
}

// Thread 0 of each of the nParts blocks running one sequence: they meet in this rank's header; the
// last to come runs directBarrierLeader for all and releases the rest. False (reported) when the
// ranks' meeting failed, or when this block waited past the timeout for its own rank's others.
__device__ inline bool directBarrierParts(const LaunchHeader* h, const DevDirectArea* areas, const DevSequence& q,
                                          const DevTask& t, const Step& st, uint32_t stepIndex, uint32_t nParts) {
  DevDirectHeader* mine = areas[h->rank].head;
  // Read before arriving: the last block cannot release before this one arrives.
  const uint64_t generation = loadVolatile(&mine->partsRelease);
  if (atomicIncrement(&mine->partsArrived) == nParts - 1u) {
    // Every block of this rank is here, and each fenced its writes before it arrived.
    atomicCAS(&mine->partsArrived, nParts, 0u);  // no block arrives again before the release
    const bool ok = directBarrierLeader(h, areas, q, t, st, stepIndex);
    storeVolatile(&mine->partsFailed, ok ? 0 : 1);
    __threadfence();  // what the meeting saw, before the others go on
    storeVolatile(&mine->partsRelease, generation + 1);
    return ok;
  }
  int64_t start = 0;
  unsigned spins = 0;
  while (loadVolatile(&mine->partsRelease) == generation) {
    if ((++spins & 255) != 0) continue;
    if (*h->abortFlag != 0) {
      report(h, kDevAborted, q, t, st, stepIndex, 0, h->rank, true, 0, 0);
      return false;
    }
    const int64_t now = waitClock();
    if (start == 0) start = now;
    // The last block waits at most this long for a peer, then reports and releases: a block still
    // waiting later than twice that has lost the others of its own rank.
    if (now - start > 2 * h->timeoutTicks) {
      report(h, kDevTimeout, q, t, st, stepIndex, 0, h->rank, true, 0, 0);
      return false;
    }
    backOff();
  }
  __threadfence();  // the peers' staged data only after the release
  return loadVolatile(&mine->partsFailed) == 0;
}

// The barrier that ends a fold of published inputs runs only if a rank published; every rank (and
// every block of it) reads the same words (not what it makes of them), so all skip it or all meet
// at it.
__device__ inline bool barrierNeeded(const LaunchHeader* h, const DevDirectArea* areas, const Step& st) {
  bool needed = (st.flags & kStepIfShared) == 0;
  for (int r = 0; r < h->nranks && !needed; ++r) needed = publishedWord(areas, h->rank, r) != 0;
  return needed;
}

// Every thread of the block: the barrier. *failed is the block's shared failure flag.
__device__ inline bool directBarrier(const LaunchHeader* h, const DevDirectArea* areas, const DevSequence& q,
                                     const DevTask& t, const Step& st, uint32_t stepIndex, uint32_t nParts,
                                     int* failed) {
  __threadfence_system();  // each thread's staging writes, before thread 0 arrives
  __syncthreads();
  if (threadIdx.x == 0) {
    bool ok = true;
    if (barrierNeeded(h, areas, st))
      ok = nParts > 1 ? directBarrierParts(h, areas, q, t, st, stepIndex, nParts)
                      : directBarrierLeader(h, areas, q, t, st, stepIndex);
    *failed = ok ? 0 : 1;
  }
  __syncthreads();
  return *failed == 0;
}

// The part of a direct-lane step that block `part` of `nParts` runs. Cuts fall on multiples of 64
// elements for the DDA ops (whole vectors for every type) and on whole 256-element FP8 blocks for
// the low-precision ones, so each part does exactly what the step does to its elements. A part may
// be empty. Staging offsets of the FP8 ops count blocks, user-buffer offsets elements.
__device__ inline Step stepPart(const Step& st, uint32_t part, uint32_t nParts) {
  if (nParts <= 1) return st;
  const bool lowp = st.op == StepOp::kLowpQuantize || st.op == StepOp::kLowpDequant || st.op == StepOp::kLowpReduce;
  const size_t unit = lowp ? kLowpBlockElems : 64;
  const size_t units = (st.count + unit - 1) / unit;
  const size_t first = units * part / nParts, last = units * (part + 1) / nParts;
  const size_t begin = first * unit, end = last * unit < st.count ? last * unit : st.count;
  Step p = st;
  p.count = end > begin ? end - begin : 0;
  switch (st.op) {
    case StepOp::kLowpQuantize:  // elements -> own FP8 blocks
      p.srcOffset += begin;
      p.dstOffset += first;
      break;
    case StepOp::kLowpDequant:  // a peer's FP8 blocks -> elements
    case StepOp::kLowpReduce:   // every rank's FP8 blocks -> elements
      p.srcOffset += first;
      p.dstOffset += begin;
      break;
    default:
      p.srcOffset += begin;
      p.dstOffset += begin;
      break;
  }
  return p;
}

template <typename T>
__device__ inline void lowpStepOnBlock(const DevTask& t, const Step& st, const DevDirectArea* areas, int rank,
                                       int nranks) {
  using M = MemoryType<T>;
  auto blocksOf = [&](int r, size_t first) { return reinterpret_cast<LowpBlock*>(areas[r].data) + first; };
  const size_t n = st.count;
  // One thread per FP8 block of 256 elements, as lowp_quant.h's start/stride loops allow.
  switch (st.op) {
    case StepOp::kLowpQuantize:
      lowpQuantize<T>(static_cast<const M*>(bufferOf(t, st.srcBuf)) + st.srcOffset, n, blocksOf(rank, st.dstOffset),
                      threadIdx.x, blockDim.x);
      return;
    case StepOp::kLowpDequant:
      lowpDequantize<T>(blocksOf(st.peer, st.srcOffset), n, static_cast<M*>(bufferOf(t, st.dstBuf)) + st.dstOffset,
                        threadIdx.x, blockDim.x);
      return;
    case StepOp::kLowpReduce: {
      M* dst = static_cast<M*>(bufferOf(t, st.dstBuf)) + st.dstOffset;
      for (size_t k = threadIdx.x; k < lowpBlocks(n); k += blockDim.x) {
        const size_t m = n - k * kLowpBlockElems < kLowpBlockElems ? n - k * kLowpBlockElems : kLowpBlockElems;
        // The owner's own block k is re-quantized by the thread that just read every rank's block k.
        LowpBlock* requant = (st.flags & kStepRequant) ? blocksOf(rank, st.srcOffset) + k : nullptr;
        lowpReduceBlock<T>([&](int r) { return blocksOf(r, st.srcOffset) + k; }, nranks, m, requant,
                           dst + k * kLowpBlockElems);
      }
      return;
    }
    default: return;
  }
}

// Every thread of the block: one data step (every direct op but the barrier), then a block barrier
// so that the next step may read what this one wrote with another thread mapping.
__device__ inline void directDataStep(const LaunchHeader* h, const DevTask& t, const Step& st,
                                      const DevDirectArea* areas, int rank, int nranks) {
  const ReduceSpec& spec = t.spec;
  const size_t es = dataTypeSize(spec.dtype);
  switch (st.op) {
    case StepOp::kDirectStage:
      deviceReduceCopy(spec, areas[rank].data + st.dstOffset * es, nullptr, nullptr,
                       static_cast<const char*>(bufferOf(t, st.srcBuf)) + st.srcOffset * es, st.count,
                       (st.flags & kStepPre) ? kApplyPre : 0u);
      break;
    case StepOp::kDirectReduce: {
      // The host's fold: rank 0's staged data, then each next rank's folded in, in rank order on
      // every rank, so every rank computes the same bits.
      char* d = static_cast<char*>(bufferOf(t, st.dstBuf)) + st.dstOffset * es;
      const unsigned post = (st.flags & kStepPost) ? kApplyPost : 0u;
      // A rank that published its input is read there (kStepInput: at the result's own offset).
      auto src = [&](int r) -> const unsigned char* {
        const unsigned char* in = (st.flags & kStepInput) ? publishedInput(h, areas, rank, r) : nullptr;
        return in != nullptr ? in + st.dstOffset * es : areas[r].data + st.srcOffset * es;
      };
      deviceReduceCopy(spec, d, nullptr, src(0), nullptr, st.count, nranks == 1 ? post : 0u);
      for (int r = 1; r < nranks; ++r) {
        __syncthreads();
        deviceReduceCopy(spec, d, nullptr, d, src(r), st.count, r == nranks - 1 ? post : 0u);
      }
      break;
    }
    case StepOp::kDirectCopy:
      blockCopy(static_cast<char*>(bufferOf(t, st.dstBuf)) + st.dstOffset * es, nullptr,
                areas[st.peer].data + st.srcOffset * es, st.count * es);
      break;
    case StepOp::kLowpQuantize:
    case StepOp::kLowpDequant:
    case StepOp::kLowpReduce:
      if (spec.dtype == ncclFloat32) lowpStepOnBlock<float>(t, st, areas, rank, nranks);
      if (spec.dtype == ncclBfloat16) lowpStepOnBlock<BFloat16>(t, st, areas, rank, nranks);
      if (spec.dtype == ncclFloat16) lowpStepOnBlock<Float16>(t, st, areas, rank, nranks);
      break;
    default: break;
  }
  __syncthreads();
}

// Every thread of the block: whether every input published for this fold can be read here. Every
// block of this rank reads the same words and table, so all fail together (the first reports).
__device__ inline bool inputsReadable(const LaunchHeader* h, const DevDirectArea* areas, const DevSequence& q,
                                      const DevTask& t, const Step& st, uint32_t stepIndex, int* failed) {
  __syncthreads();  // every thread has read the flag the last barrier left before thread 0 rewrites it
  if (threadIdx.x == 0) {
    const int lost = directUnreadable(h, areas, h->rank);
    if (lost >= 0) report(h, kDevUnreadableInput, q, t, st, stepIndex, 0, lost, true, 0, 0);
    *failed = lost >= 0 ? 1 : 0;
  }
  __syncthreads();
  return *failed == 0;
}

// Every thread of the block: a whole direct-lane sequence, or block `part` of the nParts that run
// it. False once it failed (reported).
// times (block leader, when a profiler asked for kernel events; else null) gets when the ranks
// first met and when the closing barrier began, the bounds of the KernelPhase events.
__device__ inline bool runDirectSequence(const LaunchHeader* h, const DevSequence& q, const DevTask& t,
                                         const Step* steps, uint32_t part, uint32_t nParts, int* failed,
                                         DevSeqTimes* times) {
  const DevDirectArea* areas = at<DevDirectArea>(h, h->directOff);
  Step fence{};
  fence.op = StepOp::kDirectBarrier;
  bool met = false, computed = false;  // passed a barrier; moved data after it
  auto stamp = [&](uint64_t DevSeqTimes::*field) {
    if (times != nullptr) storeVolatile(&(times->*field), static_cast<uint64_t>(waitClock()));
  };
  if (q.fenced != 0) {
    if (!directBarrier(h, areas, q, t, fence, 0, nParts, failed)) return false;
    met = true;
    stamp(&DevSeqTimes::synced);
  }
  for (uint32_t k = 0; k < q.nSteps; ++k) {
    const Step st = steps[q.firstStep + k];
    if (st.op == StepOp::kDirectBarrier) {
      if (times != nullptr && computed && k + 1 == q.nSteps && q.fenced == 0 && barrierNeeded(h, areas, st))
        stamp(&DevSeqTimes::closing);
      if (!directBarrier(h, areas, q, t, st, k, nParts, failed)) return false;
      if (!met) stamp(&DevSeqTimes::synced);
      met = true;
      continue;
    }
    if ((st.flags & kStepInput) && !inputsReadable(h, areas, q, t, st, k, failed)) return false;
    const Step mine = stepPart(st, part, nParts);
    if (mine.count != 0) directDataStep(h, t, mine, areas, h->rank, h->nranks);
    computed = computed || met;
  }
  if (q.fenced == 0) return true;
  if (computed) stamp(&DevSeqTimes::closing);
  return directBarrier(h, areas, q, t, fence, q.nSteps - 1, nParts, failed);
}

}  // namespace weft::gpu
