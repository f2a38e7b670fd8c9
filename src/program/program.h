// Programs: what an algorithm emits and an executor runs. A Program is a set of Sequences that
// progress concurrently; each Sequence is an ordered list of Steps over at most one send and one
// receive connection, or, for multi-peer sequences (the tree lane), up to kMaxSeqPeers of each.
// Steps move a range of elements; the executor cuts them into FIFO-slot-sized pieces and streams
// them, so consecutive ranks of a ring (or levels of a tree) work on the same step in a pipeline.
#pragma once
#include <atomic>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "program/lane.h"
#include "program/step.h"

namespace weft {

struct Sequence {
  // The operation the sequence belongs to: its index in the list of operations the program was
  // built from (an executor gets that list beside the program). The format knows nothing else of
  // operations, so it stays plain data that any executor or test harness can interpret.
  uint32_t task;
  // Which connection space the sequence's chain lives in (the executor passes its communicator's
  // address): sequences chain only within one scope. Opaque to the format, never dereferenced.
  uintptr_t scope;
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
  // clang-tidy 14 reports a literal 0 inside the defaulted <=> (fixed in later versions).
  friend auto operator<=>(const ChainKey&, const ChainKey&) = default;  // NOLINT(modernize-use-nullptr)
};
inline ChainKey chainKeyOf(const Sequence& s) {
  // Ring and tree sequences of a channel share its links, and every direct sequence of a
  // communicator barriers with the same peers: each of these lanes forms one chain per channel,
  // run in issue order (the same order on every rank).
  if (s.lane == Lane::kRing || s.lane == Lane::kTree || s.lane == Lane::kDirect)
    return ChainKey{static_cast<int>(s.lane), s.channel, -2, -2};
  return ChainKey{static_cast<int>(s.lane), s.channel, s.sendPeer, s.recvPeer};
}

struct Program;
// The chain of a sequence within a whole program: its scope, then its chain key.
std::pair<uintptr_t, ChainKey> chainOf(const Sequence& s);
// Sorts sequence indices (into prog.sequences) so that each chain's sequences are adjacent and in
// issue order: how both executors turn a program into chains (host cursors, GPU blocks).
void sortIntoChains(const Program& prog, std::vector<uint32_t>* order);

struct Program {
  std::vector<Step> steps;
  std::vector<Sequence> sequences;

  void clear() {
    steps.clear();
    sequences.clear();
    task_ = 0;
    scope_ = 0;
    sealed_ = 0;
  }
  // Marks the program complete: it gets an identity no other program of the process has had, which
  // an executor compares to run a repeat of the same program without rebuilding its chains. Any
  // change through the builders below takes the identity away (0: not sealed).
  void seal() {
    static std::atomic<uint64_t> next{0};
    sealed_ = next.fetch_add(1, std::memory_order_relaxed) + 1;
  }
  uint64_t sealedId() const { return sealed_; }
  // The operation the next sequences belong to (see Sequence::task and ::scope). Whoever builds a
  // program calls this before each algorithm builds, so algorithms need not know either.
  void startTask(uint32_t index, uintptr_t scope) {
    task_ = index;
    scope_ = scope;
  }
  // Starts a new sequence of the current task; subsequent addStep calls append to it.
  void beginSequence(Lane lane, int channel, int sendPeer, int recvPeer) {
    sealed_ = 0;
    sequences.push_back(
        Sequence{task_, scope_, lane, channel, sendPeer, recvPeer, static_cast<uint32_t>(steps.size()), 0});
  }
  // Starts a multi-peer sequence; peers < 0 are skipped, so callers may pass absent tree links.
  void beginMultiPeerSequence(Lane lane, int channel, const int (&sendTo)[kMaxSeqPeers],
                              const int (&recvFrom)[kMaxSeqPeers]) {
    sealed_ = 0;
    Sequence s{task_, scope_, lane, channel, -1, -1, static_cast<uint32_t>(steps.size()), 0};
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
    sealed_ = 0;
    steps.push_back(Step{op, flags, srcBuf, dstBuf, 0, 0, peer, srcOffset, dstOffset, count});
    sequences.back().nSteps++;
  }
  // A step of a multi-peer sequence: it receives from the recvMask peers and sends to the
  // sendMask peers (bit i: the sequence's i-th peer of that direction).
  void addPeerStep(StepOp op, uint8_t flags, uint8_t recvMask, uint8_t sendMask, Buf srcBuf, size_t srcOffset,
                   Buf dstBuf, size_t dstOffset, size_t count) {
    sealed_ = 0;
    steps.push_back(Step{op, flags, srcBuf, dstBuf, recvMask, sendMask, 0, srcOffset, dstOffset, count});
    sequences.back().nSteps++;
  }

 private:
  uint32_t task_ = 0;
  uintptr_t scope_ = 0;
  uint64_t sealed_ = 0;
};

}  // namespace weft
