// Steps: the instructions of a Program (program.h). This part is plain data, shared by the host
// executor and the GPU kernel (src/gpu_executor), so it holds nothing a device compiler cannot take.
#pragma once
#include <cstddef>
#include <cstdint>

#include "math/port.h"

namespace weft {

enum class StepOp : uint8_t {
  kSend,                // src -> next
  kRecv,                // prev -> dst
  kRecvReduceSend,      // prev (+) src -> next
  kRecvReduceCopy,      // prev (+) src -> dst
  kRecvReduceCopySend,  // prev (+) src -> dst and next
  kRecvCopySend,        // prev -> dst and next
  kCopySend,            // src -> dst (skipped when the same memory) and next
  kCopy,                // src -> dst, no peer
  kReduceScratch,       // dst = scratch block 0 (+) block 1 (+) ... (+) block nranks-1, in rank order
  // Direct lane (no connection; see direct_step.h). Staging offsets count elements of the task's
  // datatype from the start of a staging area's data, or for the lowp ops 260-byte FP8 blocks.
  kDirectStage,    // src -> own staging at dstOffset (pre-multiplied with kStepPre)
  kDirectBarrier,  // arrive, then wait until every local rank has arrived as often
  kDirectReduce,   // dst = staging[0] (+) ... (+) staging[nranks-1] at srcOffset, in rank order
                   // (with kStepInput, published inputs in place of staging; see StepFlags)
  kDirectCopy,     // staging of rank `peer` at srcOffset -> dst
  kLowpQuantize,   // src -> own staging as FP8 blocks starting at block dstOffset
  kLowpReduce,     // dst = sum in float of every rank's FP8 blocks at srcOffset, rank order;
                   // with kStepRequant the sum is re-quantized over the own blocks it was
                   // read from (only this rank reads them) and dst gets the decoded value
                   // every rank will read
  kLowpDequant,    // FP8 blocks of rank `peer` at srcOffset -> dst
};

WEFT_HOST_DEVICE inline bool stepReceives(StepOp op) {
  return op == StepOp::kRecv || op == StepOp::kRecvReduceSend || op == StepOp::kRecvReduceCopy ||
         op == StepOp::kRecvReduceCopySend || op == StepOp::kRecvCopySend;
}
WEFT_HOST_DEVICE inline bool stepSends(StepOp op) {
  return op == StepOp::kSend || op == StepOp::kRecvReduceSend || op == StepOp::kRecvReduceCopySend ||
         op == StepOp::kRecvCopySend || op == StepOp::kCopySend;
}

enum StepFlags : uint8_t {
  kStepPre = 1,      // this rank's own input enters the reduction here (apply pre-multiply)
  kStepPost = 2,     // the final value is produced here (apply post-divide)
  kStepRequant = 4,  // kLowpReduce: re-quantize the sum into own staging (AllReduce)
  // Registered inputs read in place (DDA AllReduce). At every direct barrier each rank publishes,
  // beside its stamp, either its input's address (the barrier has kStepPublish and the task has a
  // directInput) or nothing. A kDirectReduce with kStepInput reads a publishing rank's element i
  // from its input at dstOffset + i (AllReduce: the element the result's i-th comes from) and the
  // others from staging at srcOffset + i. A kDirectBarrier with kStepIfShared runs only when some
  // rank published at the previous barrier: it holds every rank until no peer still reads its
  // input. The builder omits the stage of a rank that publishes.
  kStepInput = 8,
  kStepPublish = 16,
  kStepIfShared = 32,
};

// What a rank publishes beside a stamp: 0 (nothing: it staged), its input's address (every rank is
// a thread of its process), or a reference into a window every rank has mapped (ranks in several
// processes): kPublishedWindow | id << 40 | the byte offset in the publisher's window buffer. The
// id is the window's registration number in host mode (rma/window.h) and its row of the device
// window table on GPUs (comm/device_window_table.h). Addresses of user space never have the top
// bit set.
constexpr uint64_t kPublishedWindow = 1ull << 63;
constexpr uint64_t kPublishedMaxWindowId = (1ull << 23) - 1;
constexpr uint64_t kPublishedMaxOffset = (1ull << 40) - 1;
WEFT_HOST_DEVICE inline uint64_t publishedWindowRef(uint64_t id, uint64_t offset) {
  return kPublishedWindow | id << 40 | offset;
}
WEFT_HOST_DEVICE inline bool isPublishedWindowRef(uint64_t word) { return (word & kPublishedWindow) != 0; }
WEFT_HOST_DEVICE inline uint64_t publishedWindowId(uint64_t word) { return (word & ~kPublishedWindow) >> 40; }
WEFT_HOST_DEVICE inline uint64_t publishedWindowOffset(uint64_t word) { return word & kPublishedMaxOffset; }

// Which buffer a step offset refers to: the task's send or receive buffer, or the communicator's
// scratch area (used by algorithms that collect every rank's input before reducing it).
enum class Buf : uint8_t { kSend, kRecv, kScratch };

// Multi-peer sequences: a step's ops keep their meaning with "prev" read as "every receive peer
// in recvMask" (their messages are reduced together with src, in mask order, then src last) and
// "next" as "every send peer in sendMask" (each gets the same bytes). Bit i names the sequence's
// sendPeers[i] / recvPeers[i]. Single-peer sequences leave both masks 0 and never read them.
constexpr int kMaxSeqPeers = 3;

struct Step {
  StepOp op;
  uint8_t flags;
  Buf srcBuf;
  Buf dstBuf;
  uint8_t recvMask;  // multi-peer sequences only (fits the padding: Step stays 32 bytes)
  uint8_t sendMask;
  uint16_t peer;     // direct-lane ops: the rank whose staging area is read (fits the padding)
  size_t srcOffset;  // elements from the start of srcBuf
  size_t dstOffset;  // elements from the start of dstBuf
  size_t count;      // elements
};
static_assert(sizeof(Step) == 32, "Step fields beyond the offsets must fit the padding");

WEFT_HOST_DEVICE inline bool stepReadsSrc(StepOp op) {
  return op == StepOp::kSend || op == StepOp::kRecvReduceSend || op == StepOp::kRecvReduceCopy ||
         op == StepOp::kRecvReduceCopySend || op == StepOp::kCopySend || op == StepOp::kCopy ||
         op == StepOp::kReduceScratch;
}
WEFT_HOST_DEVICE inline bool stepWritesDst(StepOp op) {
  return op == StepOp::kRecv || op == StepOp::kRecvReduceCopy || op == StepOp::kRecvReduceCopySend ||
         op == StepOp::kRecvCopySend || op == StepOp::kCopySend || op == StepOp::kCopy || op == StepOp::kReduceScratch;
}

const char* stepName(StepOp op);

}  // namespace weft
