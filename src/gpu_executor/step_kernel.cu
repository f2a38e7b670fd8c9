// The GPU executor's kernel: it interprets the same Programs as the host executor, on the user's
// stream. Block b runs chain b of the launch descriptor (launch_desc.h): its sequences one after
// another, each step cut into slot-sized pieces, the FIFO protocol of transports/connection.h
// spoken from the device (thread 0 waits for a message or for room and publishes; every thread of
// the block moves the piece). What a piece computes comes from piece_plan.h and the element
// operations from reduce_ops.h, the very code the host executor runs. A direct-lane sequence (DDA,
// low precision) has no FIFO: direct_kernel.h runs it over the ranks' staging areas, on one or
// several blocks (several chain entries name the same sequences, each with its part).
//
// One source for CUDA and HIP: built by nvcc, or by clang as HIP (WEFT_GPU_HIP). The kernel
// emulation tests (tests/kernel_emulation) also build it with the host compiler, one CPU thread
// per block, so that its protocol and bookkeeping run where no GPU is.
#include "gpu_executor/direct_kernel.h"
#include "gpu_executor/kernel_entry.h"
#include "gpu_executor/kernel_primitives.h"

namespace weft::gpu {
namespace {

// Per-block state that thread 0 fills and the other threads read after a barrier.
struct BlockState {
  const void* ins[kMaxSeqPeers];
  void* outs[kMaxSeqPeers];
  int nIn, nOut;
  int failed;
  uint64_t count[2 * kMaxSeqPeers];  // link counters of the current sequence: recv 0..2, send 3..5
  uint64_t head[kMaxSeqPeers];       // send links: the receiver's consumed count last seen
};

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
    // Only where a profiler plugin asked for kernel events; a failed sequence never gets a stop.
    DevSeqTimes* const times = h->times != nullptr && leader ? &h->times[chain.firstTime + si - chain.firstSeq]
                                                             : nullptr;
    if (times != nullptr) storeVolatile(&times->start, static_cast<uint64_t>(waitClock()));
    if (static_cast<Lane>(q.lane) == Lane::kDirect) {
      // No FIFO: every rank's staging area (direct_kernel.h).
      if (!runDirectSequence(h, q, t, steps, chain.part, chain.nParts, &b.failed, times)) return;
      if (times != nullptr) storeVolatile(&times->stop, static_cast<uint64_t>(waitClock()));
      continue;
    }
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
      if (times != nullptr) storeVolatile(&times->stop, static_cast<uint64_t>(waitClock()));
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
