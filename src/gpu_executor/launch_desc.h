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
  uint16_t send[kMaxSeqPeers];
  uint16_t recv[kMaxSeqPeers];
};

struct DevChain {
  uint32_t firstSeq;
  uint32_t nSeq;
};

// What the first failing block writes for the host (mapped host memory). The host turns it into
// an error message naming the rank, the peer and the operation.
enum DevErrorCode : uint32_t {
  kDevOk = 0,
  kDevTimeout = 1,
  kDevAborted = 2,
  kDevSizeMismatch = 3,
  kDevStampMismatch = 4,  // a peer's message came from a different call: mine/theirs hold both stamps
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
  uint32_t pieceBytes;                                   // the communicator's slot size: one message per piece
  uint64_t chainOff, seqOff, stepOff, taskOff, linkOff;  // byte offsets from the header
  int64_t timeoutTicks;  // a wait longer than this fails the launch (WEFT_TIMEOUT_MS, in wait-clock ticks)
  const volatile uint32_t* abortFlag;  // mapped host memory: ncclCommAbort sets it
  DevError* error;                     // mapped host memory
  // Device memory: the first failing block claims the record with an atomic here (atomics on
  // mapped host memory are not available on every platform).
  uint32_t* errorClaim;
  int32_t rank;
  int32_t nranks;
};

}  // namespace weft::gpu
