// Programs: what an algorithm emits and an executor runs. A Program is a set of Sequences that
// progress concurrently; each Sequence is an ordered list of Steps over at most one send and one
// receive connection, or, for multi-peer sequences (the tree lane), up to kMaxSeqPeers of each.
// Steps move a range of elements; the executor cuts them into FIFO-slot-sized pieces and streams
// them, so consecutive ranks of a ring (or levels of a tree) work on the same step in a pipeline.
#pragma once
#include <cstddef>
#include <compare>
#include <cstdint>
#include <vector>

#include "transports/connection.h"

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

struct Sequence {
  const Task* task;
  Lane lane;
  int channel;
  int sendPeer;  // -1 when no step sends
  int recvPeer;  // -1 when no step receives
  uint32_t firstStep;
  uint32_t nSteps;
  // Multi-peer sequences only (nSendPeers + nRecvPeers > 0): every peer, each way. sendPeer and
  // recvPeer then hold the first of each (or -1), for messages.
  uint8_t nSendPeers = 0, nRecvPeers = 0;
  int sendPeers[kMaxSeqPeers] = {-1, -1, -1};
  int recvPeers[kMaxSeqPeers] = {-1, -1, -1};
  bool multiPeer() const { return nSendPeers + nRecvPeers > 0; }
};

// Sequences of one communicator with equal keys share connections, so they must run one after
// another, in issue order. Every ring sequence of a channel uses that channel's connections to the
// ring neighbours (Broadcast and Reduce only one of the two), so all of them chain together;
// a point-to-point sequence uses exactly one connection, named by its peer and direction. Tree
// sequences of a channel chain like ring ones: trees rooted elsewhere (a Broadcast beside an
// AllReduce) reuse the same links with other roles, so only issue order keeps their messages apart.
struct ChainKey {
  int lane, channel, sendPeer, recvPeer;
  friend bool operator==(const ChainKey&, const ChainKey&) = default;
  friend auto operator<=>(const ChainKey&, const ChainKey&) = default;
};
inline ChainKey chainKeyOf(const Sequence& s) {
  // Ring and tree sequences of a channel share its links, and every direct sequence of a
  // communicator barriers with the same peers: each of these lanes forms one chain per channel,
  // run in issue order (the same order on every rank).
  if (s.lane == Lane::kRing || s.lane == Lane::kTree || s.lane == Lane::kDirect)
    return ChainKey{static_cast<int>(s.lane), s.channel, -2, -2};
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
  // Starts a multi-peer sequence; peers < 0 are skipped, so callers may pass absent tree links.
  void beginMultiPeerSequence(const Task* task, Lane lane, int channel, const int (&sendTo)[kMaxSeqPeers],
                              const int (&recvFrom)[kMaxSeqPeers]) {
    Sequence s{task, lane, channel, -1, -1, static_cast<uint32_t>(steps.size()), 0};
    for (int i = 0; i < kMaxSeqPeers; ++i) {
      if (sendTo[i] >= 0) s.sendPeers[s.nSendPeers++] = sendTo[i];
      if (recvFrom[i] >= 0) s.recvPeers[s.nRecvPeers++] = recvFrom[i];
    }
    s.sendPeer = s.sendPeers[0];
    s.recvPeer = s.recvPeers[0];
    sequences.push_back(s);
  }
  void addStep(StepOp op, uint8_t flags, size_t srcOffset, size_t dstOffset, size_t count) {
    addStep(op, flags, Buf::kSend, srcOffset, Buf::kRecv, dstOffset, count);
  }
  void addStep(StepOp op, uint8_t flags, Buf srcBuf, size_t srcOffset, Buf dstBuf, size_t dstOffset, size_t count) {
    addStep(op, flags, srcBuf, srcOffset, dstBuf, dstOffset, count, 0);
  }
  void addStep(StepOp op, uint8_t flags, Buf srcBuf, size_t srcOffset, Buf dstBuf, size_t dstOffset, size_t count,
               uint16_t peer) {
    steps.push_back(Step{op, flags, srcBuf, dstBuf, 0, 0, peer, srcOffset, dstOffset, count});
    sequences.back().nSteps++;
  }
  // A step of a multi-peer sequence: it receives from the recvMask peers and sends to the
  // sendMask peers (bit i: the sequence's i-th peer of that direction).
  void addPeerStep(StepOp op, uint8_t flags, uint8_t recvMask, uint8_t sendMask, Buf srcBuf, size_t srcOffset,
                   Buf dstBuf, size_t dstOffset, size_t count) {
    steps.push_back(Step{op, flags, srcBuf, dstBuf, recvMask, sendMask, 0, srcOffset, dstOffset, count});
    sequences.back().nSteps++;
  }
};

}  // namespace weft
