// Programs: what an algorithm emits and an executor runs. A Program is a set of Sequences that
// progress concurrently; each Sequence is an ordered list of Steps over at most one send and one
// receive connection. Steps move a range of elements; the executor cuts them into FIFO-slot-sized
// pieces and streams them, so consecutive ranks of a ring work on the same step in a pipeline.
#pragma once
#include <cstddef>
#include <compare>
#include <cstdint>
#include <vector>

#include "transports/shm/connection.h"

namespace weft {

struct Task;

enum class StepOp : uint8_t {
  kSend,               // src -> next
  kRecv,               // prev -> dst
  kRecvReduceSend,     // prev (+) src -> next
  kRecvReduceCopy,     // prev (+) src -> dst
  kRecvReduceCopySend, // prev (+) src -> dst and next
  kRecvCopySend,       // prev -> dst and next
  kCopySend,           // src -> dst (skipped when the same memory) and next
  kCopy,               // src -> dst, no peer
  kReduceScratch,      // dst = scratch block 0 (+) block 1 (+) ... (+) block nranks-1, in rank order
  // Direct lane (no connection; see direct_step.h). Staging offsets count elements of the task's
  // datatype from the start of a staging area's data, or for the lowp ops 260-byte FP8 blocks.
  kDirectStage,        // src -> own staging at dstOffset (pre-multiplied with kStepPre)
  kDirectBarrier,      // arrive, then wait until every local rank has arrived as often
  kDirectReduce,       // dst = staging[0] (+) ... (+) staging[nranks-1] at srcOffset, in rank order
  kDirectCopy,         // staging of rank `peer` at srcOffset -> dst
  kLowpQuantize,       // src -> own staging as FP8 blocks starting at block dstOffset
  kLowpReduce,         // dst = sum in float of every rank's FP8 blocks at srcOffset, rank order;
                       // with kStepRequant the sum is re-quantized over the own blocks it was
                       // read from (only this rank reads them) and dst gets the decoded value
                       // every rank will read
  kLowpDequant,        // FP8 blocks of rank `peer` at srcOffset -> dst
};

inline bool stepReceives(StepOp op) {
  return op == StepOp::kRecv || op == StepOp::kRecvReduceSend || op == StepOp::kRecvReduceCopy ||
         op == StepOp::kRecvReduceCopySend || op == StepOp::kRecvCopySend;
}
inline bool stepSends(StepOp op) {
  return op == StepOp::kSend || op == StepOp::kRecvReduceSend || op == StepOp::kRecvReduceCopySend ||
         op == StepOp::kRecvCopySend || op == StepOp::kCopySend;
}
const char* stepName(StepOp op);

enum StepFlags : uint8_t {
  kStepPre = 1,   // this rank's own input enters the reduction here (apply pre-multiply)
  kStepPost = 2,  // the final value is produced here (apply post-divide)
  kStepRequant = 4,  // kLowpReduce: re-quantize the sum into own staging (AllReduce)
};

// Which buffer a step offset refers to: the task's send or receive buffer, or the communicator's
// scratch area (used by algorithms that collect every rank's input before reducing it).
enum class Buf : uint8_t { kSend, kRecv, kScratch };

struct Step {
  StepOp op;
  uint8_t flags;
  Buf srcBuf;
  Buf dstBuf;
  uint16_t peer;     // direct-lane ops: the rank whose staging area is read (fits the padding)
  size_t srcOffset;  // elements from the start of srcBuf
  size_t dstOffset;  // elements from the start of dstBuf
  size_t count;      // elements
};
static_assert(sizeof(Step) == 32, "Step fields beyond the offsets must fit the padding");

struct Sequence {
  const Task* task;
  Lane lane;
  int channel;
  int sendPeer;  // -1 when no step sends
  int recvPeer;  // -1 when no step receives
  uint32_t firstStep;
  uint32_t nSteps;
};

// Sequences of one communicator with equal keys share connections, so they must run one after
// another, in issue order. Every ring sequence of a channel uses that channel's connections to the
// ring neighbours (Broadcast and Reduce only one of the two), so all of them chain together;
// a point-to-point sequence uses exactly one connection, named by its peer and direction.
struct ChainKey {
  int lane, channel, sendPeer, recvPeer;
  friend bool operator==(const ChainKey&, const ChainKey&) = default;
  friend auto operator<=>(const ChainKey&, const ChainKey&) = default;
};
inline ChainKey chainKeyOf(const Sequence& s) {
  // Every direct sequence of a communicator barriers with the same peers, so all of them form one
  // chain, in issue order: the same barriers in the same order on every rank.
  if (s.lane == Lane::kRing || s.lane == Lane::kDirect) return ChainKey{static_cast<int>(s.lane), s.channel, -2, -2};
  return ChainKey{static_cast<int>(s.lane), s.channel, s.sendPeer, s.recvPeer};
}

struct Program {
  std::vector<Step> steps;
  std::vector<Sequence> sequences;

  void clear() {
    steps.clear();
    sequences.clear();
  }
  // Starts a new sequence; subsequent addStep calls append to it.
  void beginSequence(const Task* task, Lane lane, int channel, int sendPeer, int recvPeer) {
    sequences.push_back(Sequence{task, lane, channel, sendPeer, recvPeer, static_cast<uint32_t>(steps.size()), 0});
  }
  void addStep(StepOp op, uint8_t flags, size_t srcOffset, size_t dstOffset, size_t count) {
    addStep(op, flags, Buf::kSend, srcOffset, Buf::kRecv, dstOffset, count);
  }
  void addStep(StepOp op, uint8_t flags, Buf srcBuf, size_t srcOffset, Buf dstBuf, size_t dstOffset, size_t count) {
    addStep(op, flags, srcBuf, srcOffset, dstBuf, dstOffset, count, 0);
  }
  void addStep(StepOp op, uint8_t flags, Buf srcBuf, size_t srcOffset, Buf dstBuf, size_t dstOffset, size_t count,
               uint16_t peer) {
    steps.push_back(Step{op, flags, srcBuf, dstBuf, peer, srcOffset, dstOffset, count});
    sequences.back().nSteps++;
  }
};

}  // namespace weft
