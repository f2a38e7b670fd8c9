// The GPU executor's kernel: it interprets the same Programs as the host executor, on the user's
// stream. Block b runs chain b of the launch descriptor (launch_desc.h): its sequences one after
// another, each step cut into slot-sized pieces, the FIFO protocol of transports/connection.h
// spoken from the device (thread 0 waits for a message or for room and publishes; every thread of
// the block moves the piece). What a piece computes comes from piece_plan.h and the element
// operations from reduce_ops.h, the very code the host executor runs.
//
// One source for CUDA and HIP: built by nvcc, or by clang as HIP (WEFT_GPU_HIP). The kernel
// emulation tests (tests/kernel_emulation) also build it with the host compiler, one CPU thread
// per block, so that its protocol and bookkeeping run where no GPU is.
#include <cstdint>
#include <cstring>

#if defined(WEFT_KERNEL_EMULATION)
#include "kernel_emulation.h"
#else
#include "runtime/gpu_api.h"
// One object per block, visible to all of its threads.
#define WEFT_BLOCK_SHARED(T, name) __shared__ T name
#endif

#include "gpu_executor/kernel_entry.h"
#include "gpu_executor/launch_desc.h"
#include "math/reduce_kernel.h"
#include "program/piece_plan.h"

namespace weft::gpu {
namespace {

__device__ __forceinline__ int64_t waitClock() {
#if defined(WEFT_KERNEL_EMULATION)
  return emulation::clockNs();
#elif defined(WEFT_GPU_HIP)
#if defined(__HIP_DEVICE_COMPILE__)
  // The constant-rate real-time counter (100 MHz on gfx9; the runtime reports the rate).
  return static_cast<int64_t>(__builtin_amdgcn_s_memrealtime());
#else
  return 0;  // the host pass parses device functions but never runs them
#endif
#else
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return static_cast<int64_t>(t);
#endif
}

__device__ __forceinline__ void backOff() {
#if defined(WEFT_KERNEL_EMULATION)
  emulation::yieldBlock();
#elif defined(WEFT_GPU_HIP)
  __builtin_amdgcn_s_sleep(1);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  __nanosleep(100);
#endif
}

__device__ __forceinline__ uint64_t loadVolatile(const void* p) { return *static_cast<const volatile uint64_t*>(p); }
__device__ __forceinline__ void storeVolatile(void* p, uint64_t v) { *static_cast<volatile uint64_t*>(p) = v; }

// The spec's scalar words as a T. Little-endian: the value's bits sit at the low end of the first
// word, and a 16-byte complex128 scalar continues into the second, as the host captured it.
template <typename T>
__device__ __forceinline__ T scalarOf(uint64_t lo, uint64_t hi) {
  const uint64_t words[2] = {lo, hi};
  T v;
  memcpy(&v, words, sizeof(T));
  return v;
}

// reduceCopy's contract (reduce_host.h) over the threads of a block.
template <typename T, template <typename> class Op>
__device__ void blockReduceCopy(const ReduceSpec& spec, void* d0, void* d1, const void* partial, const void* local,
                                size_t n, unsigned flags) {
  using M = MemoryType<T>;
  const bool pre = (flags & kApplyPre) && spec.preMul && local != nullptr;
  const bool post = (flags & kApplyPost) && spec.postDiv && spec.divisor > 1;
  const T scalar = scalarOf<T>(spec.preMulScalar, spec.preMulScalarHi);
  const Op<T> op{};
  M* o0 = static_cast<M*>(d0);
  M* o1 = static_cast<M*>(d1);
  const M* p = static_cast<const M*>(partial);
  const M* l = static_cast<const M*>(local);
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
    T v;
    if (l != nullptr) {
      T x = loadElement<T>(l, i);
      if (pre) x = preMultiply(x, scalar);
      v = p != nullptr ? op(loadElement<T>(p, i), x) : x;
    } else {
      v = loadElement<T>(p, i);
    }
    if (post) v = postDivide(v, spec.divisor);
    storeElement<T>(o0, i, v);
    if (o1 != nullptr) storeElement<T>(o1, i, v);
  }
}

// A plain copy: 16-byte words when every pointer allows, bytes otherwise.
__device__ void blockCopy(void* dst0, void* dst1, const void* src, size_t bytes) {
  const uintptr_t align = reinterpret_cast<uintptr_t>(dst0) | reinterpret_cast<uintptr_t>(dst1) |
                          reinterpret_cast<uintptr_t>(src);
  size_t head = 0;
  if ((align & 15) == 0) {
    const size_t words = bytes / 16;
    const uint4* s = static_cast<const uint4*>(src);
    uint4* a = static_cast<uint4*>(dst0);
    uint4* b = static_cast<uint4*>(dst1);
    for (size_t i = threadIdx.x; i < words; i += blockDim.x) {
      const uint4 v = s[i];
      a[i] = v;
      if (b != nullptr) b[i] = v;
    }
    head = words * 16;
  }
  const unsigned char* s = static_cast<const unsigned char*>(src);
  unsigned char* a = static_cast<unsigned char*>(dst0);
  unsigned char* b = static_cast<unsigned char*>(dst1);
  for (size_t i = head + threadIdx.x; i < bytes; i += blockDim.x) {
    a[i] = s[i];
    if (b != nullptr) b[i] = s[i];
  }
}

// Max and Min have no complex instantiation (complex numbers have no order; the API refuses them).
template <template <typename> class Op>
inline constexpr bool kOrderOp = false;
template <>
inline constexpr bool kOrderOp<FuncMax> = true;
template <>
inline constexpr bool kOrderOp<FuncMin> = true;

template <template <typename> class Op>
__device__ void reduceByType(const ReduceSpec& s, void* d0, void* d1, const void* p, const void* l, size_t n,
                             unsigned f) {
  if constexpr (!kOrderOp<Op>) {
    if (s.dtype == weftComplex64) return blockReduceCopy<Complex<float>, Op>(s, d0, d1, p, l, n, f);
    if (s.dtype == weftComplex128) return blockReduceCopy<Complex<double>, Op>(s, d0, d1, p, l, n, f);
  }
  switch (s.dtype) {
    case ncclInt8: return blockReduceCopy<int8_t, Op>(s, d0, d1, p, l, n, f);
    case ncclUint8: return blockReduceCopy<uint8_t, Op>(s, d0, d1, p, l, n, f);
    case ncclInt32: return blockReduceCopy<int32_t, Op>(s, d0, d1, p, l, n, f);
    case ncclUint32: return blockReduceCopy<uint32_t, Op>(s, d0, d1, p, l, n, f);
    case ncclInt64: return blockReduceCopy<int64_t, Op>(s, d0, d1, p, l, n, f);
    case ncclUint64: return blockReduceCopy<uint64_t, Op>(s, d0, d1, p, l, n, f);
    case ncclFloat16: return blockReduceCopy<Float16, Op>(s, d0, d1, p, l, n, f);
    case ncclFloat32: return blockReduceCopy<float, Op>(s, d0, d1, p, l, n, f);
    case ncclFloat64: return blockReduceCopy<double, Op>(s, d0, d1, p, l, n, f);
    case ncclBfloat16: return blockReduceCopy<BFloat16, Op>(s, d0, d1, p, l, n, f);
    case ncclFloat8e4m3: return blockReduceCopy<Float8E4M3, Op>(s, d0, d1, p, l, n, f);
    case ncclFloat8e5m2: return blockReduceCopy<Float8E5M2, Op>(s, d0, d1, p, l, n, f);
    default: return;
  }
}

// The block-wide reduceCopy: a copy when there is a single source and nothing to apply, else the
// element loop of the spec's type and operation.
__device__ void deviceReduceCopy(const ReduceSpec& s, void* d0, void* d1, const void* partial, const void* local,
                                 size_t n, unsigned f) {
  const bool pre = (f & kApplyPre) && s.preMul && local != nullptr;
  const bool post = (f & kApplyPost) && s.postDiv && s.divisor > 1;
  if ((partial == nullptr || local == nullptr) && !pre && !post)
    return blockCopy(d0, d1, local != nullptr ? local : partial, n * dataTypeSize(s.dtype));
  switch (s.op) {
    case BaseOp::kSum: return reduceByType<FuncSum>(s, d0, d1, partial, local, n, f);
    case BaseOp::kProd: return reduceByType<FuncProd>(s, d0, d1, partial, local, n, f);
    case BaseOp::kMax: return reduceByType<FuncMax>(s, d0, d1, partial, local, n, f);
    case BaseOp::kMin: return reduceByType<FuncMin>(s, d0, d1, partial, local, n, f);
  }
}

__device__ void* bufferOf(const DevTask& t, Buf b) {
  switch (b) {
    case Buf::kSend: return const_cast<void*>(t.send);
    case Buf::kRecv: return t.recv;
    case Buf::kScratch: return t.scratch;
  }
  return nullptr;
}

template <typename T>
__device__ const T* at(const LaunchHeader* h, uint64_t off) {
  return reinterpret_cast<const T*>(reinterpret_cast<const char*>(h) + off);
}

// Per-block state that thread 0 fills and the other threads read after a barrier.
struct BlockState {
  const void* ins[kMaxSeqPeers];
  void* outs[kMaxSeqPeers];
  int nIn, nOut;
  int failed;
  uint64_t count[2 * kMaxSeqPeers];  // link counters of the current sequence: recv 0..2, send 3..5
  uint64_t head[kMaxSeqPeers];       // send links: the receiver's consumed count last seen
};

// Thread 0 only. Records the first failure of the launch; later ones are dropped.
__device__ void report(const LaunchHeader* h, uint32_t code, const DevSequence& q, const DevTask& t, const Step& st,
                       uint32_t stepIndex, size_t done, int peer, bool receiving, uint64_t got, uint64_t want,
                       const OpStamp* theirs = nullptr) {
  DevError* e = h->error;
  if (atomicCAS(h->errorClaim, 0u, 1u) != 0u) return;
  e->receiving = receiving ? 1u : 0u;
  e->peer = peer;
  e->channel = q.channel;
  e->step = stepIndex;
  e->nSteps = q.nSteps;
  e->opSeq = t.seq;
  e->done = done;
  e->count = st.count;
  e->gotBytes = got;
  e->wantBytes = want;
  e->lane = q.lane;
  e->kind = t.kind;
  e->stepOp = static_cast<uint8_t>(st.op);
  e->mine = t.stamp;
  if (theirs != nullptr) e->theirs = *theirs;
  __threadfence_system();
  *reinterpret_cast<volatile uint32_t*>(&e->code) = code;
  __threadfence_system();
}

// Thread 0 only: waits until every receive link in rmask has its next message and every send link
// in smask has room. False (reported) on abort, timeout or a message of the wrong size.
__device__ bool waitForPiece(const LaunchHeader* h, const DevLink* links, const DevSequence& q, const DevTask& t,
                             const Step& st, uint32_t stepIndex, size_t done, unsigned rmask, unsigned smask,
                             size_t bytes, BlockState& b) {
  int64_t start = 0;
  unsigned spins = 0;
  for (int i = 0; i < kMaxSeqPeers; ++i) {
    const bool rx = (rmask >> i) & 1u, tx = (smask >> i) & 1u;
    for (int side = 0; side < 2; ++side) {
      if (!(side == 0 ? rx : tx)) continue;
      const DevLink& L = links[side == 0 ? q.recv[i] : q.send[i]];
      uint64_t& cnt = b.count[side == 0 ? i : kMaxSeqPeers + i];
      for (;;) {
        bool ready;
        if (side == 0) {
          ready = loadVolatile(&L.slots[cnt % L.nslots].seq) == cnt + 1;
        } else {
          ready = cnt - b.head[i] < L.nslots;
          if (!ready) {
            b.head[i] = loadVolatile(&L.head->consumed);
            ready = cnt - b.head[i] < L.nslots;
          }
        }
        if (ready) break;
        if ((++spins & 255) == 0) {
          if (*h->abortFlag != 0) {
            report(h, kDevAborted, q, t, st, stepIndex, done, L.peer, side == 0, 0, 0);
            return false;
          }
          const int64_t now = waitClock();
          if (start == 0) start = now;
          if (now - start > h->timeoutTicks) {
            report(h, kDevTimeout, q, t, st, stepIndex, done, L.peer, side == 0, 0, 0);
            return false;
          }
          backOff();
        }
      }
    }
  }
  __threadfence();  // the messages' bytes are read only after their flags were seen
  b.nIn = b.nOut = 0;
  for (int i = 0; i < kMaxSeqPeers; ++i) {
    if ((rmask >> i) & 1u) {
      const DevLink& L = links[q.recv[i]];
      const SlotHeader& s = L.slots[b.count[i] % L.nslots];
      const uint32_t got = *reinterpret_cast<const volatile uint32_t*>(&s.bytes);
      // The sender's stamp sits in the flag's cache line; it is checked before the size, which a
      // different call only changes as a symptom (comm/op_stamp.h). Tested by kernel emulation
      // on CPU threads (KernelEmulation.MismatchedCallsNameBothSides); never run on a GPU yet.
      const OpStamp theirs = s.stamp;
      if (t.checkMismatch != 0 && !stampsAgree(t.stamp, theirs, h->rank, L.peer)) {
        report(h, kDevStampMismatch, q, t, st, stepIndex, done, L.peer, true, got, bytes, &theirs);
        return false;
      }
      if (got != bytes) {
        report(h, kDevSizeMismatch, q, t, st, stepIndex, done, L.peer, true, got, bytes);
        return false;
      }
      b.ins[b.nIn++] = bytes <= kInlineBytes ? static_cast<const void*>(s.inl)
                                             : static_cast<const void*>(L.data + (b.count[i] % L.nslots) * L.slotBytes);
    }
  }
  for (int i = 0; i < kMaxSeqPeers; ++i) {
    if ((smask >> i) & 1u) {
      const DevLink& L = links[q.send[i]];
      const uint64_t c = b.count[kMaxSeqPeers + i];
      b.outs[b.nOut++] = bytes <= kInlineBytes ? static_cast<void*>(L.slots[c % L.nslots].inl)
                                               : static_cast<void*>(L.data + (c % L.nslots) * L.slotBytes);
    }
  }
  return true;
}

// Thread 0 only, after the block's writes are fenced: hands the piece to the send peers and the
// consumed slots back to the receive peers.
__device__ void finishPiece(const DevLink* links, const DevSequence& q, const OpStamp& stamp, unsigned rmask,
                            unsigned smask, size_t bytes, BlockState& b) {
  for (int i = 0; i < kMaxSeqPeers; ++i) {
    if ((smask >> i) & 1u) {
      const DevLink& L = links[q.send[i]];
      uint64_t& c = b.count[kMaxSeqPeers + i];
      SlotHeader& s = L.slots[c % L.nslots];
      *reinterpret_cast<volatile uint32_t*>(&s.bytes) = static_cast<uint32_t>(bytes);
      s.stamp = stamp;  // published by the same fence as the byte count
      __threadfence_system();
      storeVolatile(&s.seq, c + 1);
      ++c;
    }
    if ((rmask >> i) & 1u) {
      const DevLink& L = links[q.recv[i]];
      uint64_t& c = b.count[i];
      ++c;
      storeVolatile(&L.head->consumed, c);
    }
  }
}

__global__ void __launch_bounds__(kKernelThreads) stepKernel(const LaunchHeader* h) {
  WEFT_BLOCK_SHARED(BlockState, b);
  const DevChain chain = at<DevChain>(h, h->chainOff)[blockIdx.x];
  const DevSequence* seqs = at<DevSequence>(h, h->seqOff);
  const Step* steps = at<Step>(h, h->stepOff);
  const DevTask* tasks = at<DevTask>(h, h->taskOff);
  const DevLink* links = at<DevLink>(h, h->linkOff);
  const bool leader = threadIdx.x == 0;

  for (uint32_t si = chain.firstSeq; si < chain.firstSeq + chain.nSeq; ++si) {
    const DevSequence q = seqs[si];
    const DevTask& t = tasks[q.task];
    const bool multi = q.multiPeer != 0;
    if (leader) {
      b.failed = 0;
      for (int i = 0; i < kMaxSeqPeers; ++i) {
        b.count[i] = q.recv[i] != kNoLink ? *links[q.recv[i]].counter : 0;
        b.count[kMaxSeqPeers + i] = q.send[i] != kNoLink ? *links[q.send[i]].counter : 0;
        b.head[i] = q.send[i] != kNoLink ? loadVolatile(&links[q.send[i]].head->consumed) : 0;
      }
    }
    const size_t es = dataTypeSize(t.spec.dtype);
    const size_t pieceElems = h->pieceBytes / es;
    for (uint32_t k = 0; k < q.nSteps; ++k) {
      const Step st = steps[q.firstStep + k];
      if (st.count == 0) continue;
      // Single-peer sequences always use link 0 of each direction; multi-peer ones name theirs.
      unsigned rmask = 0, smask = 0;
      if (stepReceives(st.op)) rmask = multi ? st.recvMask : 1u;
      if (stepSends(st.op)) smask = multi ? st.sendMask : 1u;
      for (size_t done = 0; done < st.count;) {
        const size_t n = st.count - done < pieceElems ? st.count - done : pieceElems;
        const size_t bytes = n * es;
        if (leader && !waitForPiece(h, links, q, t, st, k, done, rmask, smask, bytes, b)) b.failed = 1;
        __syncthreads();
        if (b.failed) return;
        __threadfence();
        const char* src = stepReadsSrc(st.op)
                              ? static_cast<const char*>(bufferOf(t, st.srcBuf)) + (st.srcOffset + done) * es
                              : nullptr;
        char* dst = stepWritesDst(st.op) ? static_cast<char*>(bufferOf(t, st.dstBuf)) + (st.dstOffset + done) * es
                                         : nullptr;
        const PieceOperands ops{src, dst, b.ins, b.nIn, b.outs, b.nOut, n, es, t.nranks, size_t(t.count) * es};
        runPiecePlan(
            st.op, pieceFlags(st.flags), ops,
            [&](void* d0, void* d1, const void* partial, const void* local, size_t cnt, unsigned f) {
              deviceReduceCopy(t.spec, d0, d1, partial, local, cnt, f);
              __syncthreads();  // a later call of the plan reads what this one wrote
            },
            [&](void* d, const void* s, size_t nbytes) {
              blockCopy(d, nullptr, s, nbytes);
              __syncthreads();
            });
        __threadfence_system();  // every thread's writes reach peers and host before the flags
        __syncthreads();
        if (leader) finishPiece(links, q, t.stamp, rmask, smask, bytes, b);
        __syncthreads();
        done += n;
      }
    }
    if (leader) {
      for (int i = 0; i < kMaxSeqPeers; ++i) {
        if (q.recv[i] != kNoLink) *links[q.recv[i]].counter = b.count[i];
        if (q.send[i] != kNoLink) *links[q.send[i]].counter = b.count[kMaxSeqPeers + i];
      }
    }
    __syncthreads();
  }
}

}  // namespace

int launchStepKernel(const dev::KernelLaunch& l, void* stream, const char** what) {
#if defined(WEFT_KERNEL_EMULATION)
  const auto* h = static_cast<const LaunchHeader*>(l.desc);
  return emulation::runBlocks(l.blocks, [h] { stepKernel(h); });
#else
  // clang-format 14 splits a launch's ">>>" into "> > >" in a preprocessor branch after the first.
  // clang-format off
  stepKernel<<<l.blocks, l.threads, 0, static_cast<gpuStream_t>(stream)>>>(static_cast<const LaunchHeader*>(l.desc));
  // clang-format on
  const gpuError_t e = gpuGetLastError();
  if (e != gpuSuccess && what != nullptr) *what = gpuGetErrorString(e);
  return static_cast<int>(e);
#endif
}

}  // namespace weft::gpu
