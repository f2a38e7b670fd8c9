// What step_kernel.cu needs from CUDA, for the host compiler: each block of a launch is a group of
// CPU threads (WEFT_KERNEL_EMULATION_THREADS per block, default 4) with a real barrier for
// __syncthreads and one shared object per block for WEFT_BLOCK_SHARED. The kernel's FIFO protocol,
// counters, descriptor, piece plan, barriers and block-strided loops then run for real on CPU
// threads. What this cannot show is GPU memory ordering (x86 orders far more than a GPU does).
#pragma once
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <functional>

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)

namespace weft::gpu::emulation {

struct Dim {
  unsigned x;
};
// Set by runBlocks for each thread.
extern thread_local Dim blockIdx;
extern thread_local Dim threadIdx;
extern thread_local Dim blockDim;

void syncThreads();              // the calling thread's block barrier
void* blockSharedBytes(size_t);  // the calling thread's block's shared object (zeroed at launch)
template <typename T>
T& blockShared() {
  return *static_cast<T*>(blockSharedBytes(sizeof(T)));
}
inline void fence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline unsigned atomicCompareSwap(unsigned* p, unsigned expected, unsigned desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return expected;
}
int64_t clockNs();
inline void yieldBlock() { sched_yield(); }
// Runs fn on every thread of `blocks` blocks and returns when all are done: 0.
int runBlocks(int blocks, const std::function<void()>& fn);

}  // namespace weft::gpu::emulation

using weft::gpu::emulation::blockDim;
using weft::gpu::emulation::blockIdx;
using weft::gpu::emulation::threadIdx;
#define WEFT_BLOCK_SHARED(T, name) T& name = ::weft::gpu::emulation::blockShared<T>()
#define __syncthreads() ::weft::gpu::emulation::syncThreads()
#define __threadfence() ::weft::gpu::emulation::fence()
#define __threadfence_system() ::weft::gpu::emulation::fence()
#define atomicCAS(p, e, d) ::weft::gpu::emulation::atomicCompareSwap((p), (e), (d))

struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
