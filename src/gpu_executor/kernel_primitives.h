// What the GPU kernels are built from, for step_kernel.cu's FIFO protocol and direct_kernel.h's
// direct lane alike: the wait clock and back-off, volatile flag access, the block-wide copy and
// reduceCopy (reduce_host.h's contract over the threads of a block, with reduce_kernel.h's element
// operations, the host executor's own), the launch descriptor's accessors, and the error record.
// Included by step_kernel.cu only (one translation unit per build: CUDA, HIP or kernel emulation).
#pragma once
#include <cstdint>
#include <cstring>

#if defined(WEFT_KERNEL_EMULATION)
#include "kernel_emulation.h"
#else
#include "runtime/gpu_api.h"
// One object per block, visible to all of its threads.
#define WEFT_BLOCK_SHARED(T, name) __shared__ T name
#endif

#include "gpu_executor/launch_desc.h"
#include "math/reduce_kernel.h"
#include "program/lane.h"
#include "program/piece_plan.h"

namespace weft::gpu {

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
__device__ inline void blockReduceCopy(const ReduceSpec& spec, void* d0, void* d1, const void* partial,
                                       const void* local, size_t n, unsigned flags) {
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
__device__ inline void blockCopy(void* dst0, void* dst1, const void* src, size_t bytes) {
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
__device__ inline void reduceByType(const ReduceSpec& s, void* d0, void* d1, const void* p, const void* l, size_t n,
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
__device__ inline void deviceReduceCopy(const ReduceSpec& s, void* d0, void* d1, const void* partial, const void* local,
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

__device__ inline void* bufferOf(const DevTask& t, Buf b) {
  switch (b) {
    case Buf::kSend: return const_cast<void*>(t.send);
    case Buf::kRecv: return t.recv;
    case Buf::kScratch: return t.scratch;
  }
  return nullptr;
}

template <typename T>
__device__ inline const T* at(const LaunchHeader* h, uint64_t off) {
  return reinterpret_cast<const T*>(reinterpret_cast<const char*>(h) + off);
}

// Thread 0 only. Records the first failure of the launch; later ones are dropped.
__device__ inline void report(const LaunchHeader* h, uint32_t code, const DevSequence& q, const DevTask& t,
                              const Step& st, uint32_t stepIndex, size_t done, int peer, bool receiving, uint64_t got,
                              uint64_t want, const OpStamp* theirs = nullptr) {
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

}  // namespace weft::gpu
