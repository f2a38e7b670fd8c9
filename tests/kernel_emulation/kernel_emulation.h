// What step_kernel.cu needs from CUDA, for the host compiler: each block of a launch is one CPU
// thread with a single GPU thread in it (threadIdx.x == 0, blockDim.x == 1). The kernel's FIFO
// protocol, counters, descriptor and piece plan then run for real on CPU threads; what this cannot
// show is anything about several threads of one block (barriers, the block-strided loops' split).
#pragma once
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <functional>

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static thread_local
#define __launch_bounds__(n)

namespace weft::gpu::emulation {

struct Dim {
  unsigned x;
};
extern thread_local Dim blockIdx;  // set by runBlocks for each block's thread
constexpr Dim threadIdx{0};
constexpr Dim blockDim{1};

inline void syncThreads() {}  // one thread per block: nothing to wait for
inline void fence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline unsigned atomicCompareSwap(unsigned* p, unsigned expected, unsigned desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return expected;
}
int64_t clockNs();
inline void yieldBlock() { sched_yield(); }
// Runs fn on `blocks` threads (blockIdx.x = 0..blocks-1) and returns when all are done: 0.
int runBlocks(int blocks, const std::function<void()>& fn);

}  // namespace weft::gpu::emulation

using weft::gpu::emulation::blockDim;
using weft::gpu::emulation::blockIdx;
using weft::gpu::emulation::threadIdx;
#define __syncthreads() ::weft::gpu::emulation::syncThreads()
#define __threadfence() ::weft::gpu::emulation::fence()
#define __threadfence_system() ::weft::gpu::emulation::fence()
#define atomicCAS(p, e, d) ::weft::gpu::emulation::atomicCompareSwap((p), (e), (d))

struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
