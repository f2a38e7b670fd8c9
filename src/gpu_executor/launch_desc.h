// The launch descriptor: a Program flattened into plain arrays that the step-interpreter kernel
// reads from device memory. The host side (gpu_executor.cc) builds one per communicator and
// launch; block b of the kernel runs chain b (the sequences that share connections, in issue
// order), exactly as one cursor of the host executor does.
#pragma once
#include <cstddef>
#include <cstdint>

#include "math/reduce_host.h"
#include "program/step.h"
#include "transports/fifo.h"

namespace weft::gpu {

constexpr uint16_t kNoLink = 0xffff;
constexpr int kKernelThreads = 512;

// One FIFO endpoint as the kernel sees it (device-accessible addresses).
struct DevLink {
  SlotHeader* slots;
  FifoHead* head;
  unsigned char* data;
  uint64_t* counter;  // device-resident: messages this endpoint sent or consumed so far
  uint32_t nslots;
  uint32_t slotBytes;
  int32_t peer;
  uint32_t isSender;
};

struct DevTask {
  ReduceSpec spec;
  const void* send;
  void* recv;
  void* scratch;
  uint64_t count;  // per-rank count, as the API defines it
  uint64_t seq;    // the communicator's operation number, for error reports
  int32_t nranks;
  uint8_t kind;           // CollKind
  uint8_t checkMismatch;  // the communicator's WEFT_MISMATCH_CHECK
  uint8_t pad[2];
  OpStamp stamp;  // what this rank called: written into every slot it publishes, compared on receive
  // Task::directInput: the input's address for peers to read in place (program/step.h
  // kStepPublish): the address itself when every rank is in this process, else a window
  // reference (row and offset; LaunchHeader::windows); 0 when the input is staged.
  uint64_t directInput;
};

struct DevSequence {
  uint32_t task;
  uint32_t firstStep;
  uint32_t nSteps;
  int32_t channel;
  uint8_t lane;
  uint8_t nSend;  // links used: single-peer sequences use index 0 of each
  uint8_t nRecv;
  uint8_t multiPeer;  // steps name their links by recvMask/sendMask (tree lane)
  // Direct lane, captured into a graph: a barrier before the first step and after the last. A
  // replay reuses the staging halves its capture chose, so it must not start writing them while a
  // peer still reads them for an earlier operation, nor leave a peer reading when it returns.
  uint8_t fenced;
  uint8_t pad[3];
  uint16_t send[kMaxSeqPeers];
  uint16_t recv[kMaxSeqPeers];
};

// The direct lane's staging area of one rank in device memory (gpu_executor/device_direct.h): a
// header, then the data (kDevDirectDataOffset bytes in). Every local rank maps every other's.
struct DevDirectHeader {
  uint64_t arrived;  // direct barriers this rank's kernels have reached (only they write it)
  // Beside stamps[k % 2], the input this rank published at barrier k for its peers to read in
  // place (program/step.h kStepPublish), or 0, as in the host's DirectHeader.
  uint64_t inputs[2];
  // When several blocks of this rank run one direct sequence (DevChain::nParts), they meet here,
  // in this rank's own GPU memory, and the last to come meets the peers for all of them: the
  // counter above keeps one arrival per rank, and no atomic ever touches a peer's memory.
  uint32_t partsArrived;  // blocks at the current barrier (atomic, own GPU only)
  uint32_t pad32;
  uint64_t partsRelease;  // raised by that last block once the ranks have met
  uint64_t partsFailed;   // 1: that meeting failed (the last block reported why)
  uint64_t pad[2];        // the stamps on a cache line of their own
  // This rank's op stamp for its barrier k sits in stamps[k % 2], written before the arrival that
  // publishes it (a peer is at most one barrier ahead), as in the host's DirectHeader.
  OpStamp stamps[2];
};
constexpr size_t kDevDirectDataOffset = 256;
static_assert(sizeof(DevDirectHeader) <= kDevDirectDataOffset, "the header fits before the data");
static_assert(offsetof(DevDirectHeader, stamps) == 64, "the stamps start a cache line");

struct DevDirectArea {
  unsigned char* data;  // device-accessible from this rank's GPU
  DevDirectHeader* head;
};

// One block's share of the launch: block b runs chains[b]. A direct-lane chain may be run by
// several blocks (nParts entries, part 0..nParts-1), each taking its part of every step.
struct DevChain {
  uint32_t firstSeq;
  uint32_t nSeq;
  uint32_t part;
  uint32_t nParts;
  uint32_t firstTime;  // LaunchHeader::times entry of this block's first sequence (one per sequence)
  uint32_t pad;
};

// When a block started and finished one of its sequences, in wait-clock ticks (0: not reached),
// written for the profiler's KernelCh events (gpu_executor/kernel_profile.h). A direct-lane
// sequence also marks when its ranks first met and when its closing barrier began (0: it has
// none): the KernelPhase events initial_sync, compute and final_sync lie between these.
struct DevSeqTimes {
  uint64_t start;
  uint64_t synced;
  uint64_t closing;
  uint64_t stop;
};
// Direct-lane blocks per 16 KiB of a chain's largest step, up to WEFT_DIRECT_BLOCKS.
constexpr size_t kDirectPartBytes = 16 * 1024;

// What the first failing block writes for the host (mapped host memory). The host turns it into
// an error message naming the rank, the peer and the operation.
enum DevErrorCode : uint32_t {
  kDevOk = 0,
  kDevTimeout = 1,
  kDevAborted = 2,
  kDevSizeMismatch = 3,
  kDevStampMismatch = 4,    // a peer's message came from a different call: mine/theirs hold both stamps
  kDevUnreadableInput = 5,  // peer published its input in a window this rank does not map
};
struct DevError {
  uint32_t code;
  uint32_t receiving;  // 1: waiting for a message; 0: waiting for room to send
  int32_t peer;
  int32_t channel;
  uint32_t step;
  uint32_t nSteps;
  uint64_t opSeq;
  uint64_t done;                 // elements of the step already moved
  uint64_t count;                // elements of the step
  uint64_t gotBytes, wantBytes;  // kDevSizeMismatch
  uint8_t lane, kind, stepOp, pad;
  OpStamp mine, theirs;  // kDevStampMismatch
};

struct LaunchHeader {
  uint32_t nChains, nSeqs, nSteps, nTasks, nLinks;
  uint32_t pieceBytes;  // the communicator's slot size: one message per piece
  uint32_t nDirect;     // entries of the direct table: nranks when a direct-lane sequence runs, else 0
  uint32_t windowRows;  // rows of `windows` (0: the communicator shares no window by IPC)
  // Byte offsets from the header. The direct table holds every rank's DevDirectArea, by rank.
  uint64_t chainOff, seqOff, stepOff, taskOff, linkOff, directOff;
  int64_t timeoutTicks;  // a wait longer than this fails the launch (WEFT_TIMEOUT_MS, in wait-clock ticks)
  // Device memory: the communicator's device window table (comm/device_window_table.h), windowRows
  // rows of nranks addresses: where a peer's input published by row and offset is read.
  const uint64_t* windows;
  const volatile uint32_t* abortFlag;  // mapped host memory: ncclCommAbort sets it
  DevError* error;                     // mapped host memory
  // Device memory: the first failing block claims the record with an atomic here (atomics on
  // mapped host memory are not available on every platform).
  uint32_t* errorClaim;
  // Mapped host memory, nTimes entries (DevChain::firstTime), or null when no profiler plugin
  // wants kernel events for this launch.
  DevSeqTimes* times;
  uint32_t nTimes;
  int32_t rank;
  int32_t nranks;
};

}  // namespace weft::gpu
