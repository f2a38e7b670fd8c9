// Double binary tree collectives: AllReduce (reduce up the tree, then broadcast down), Reduce and
// Broadcast, over the two complementary trees of tree_shape.h, each carrying half of every
// channel's share. Tree t of channel c runs on tree-lane connection channel 2c + t, so the two
// trees' sequences are separate chains that progress side by side.
//
// Every step streams in FIFO-slot pieces: a node forwards piece i as soon as its children's piece
// i has arrived, so the depth adds latency, not time per byte. A node's sequence does the whole
// reduction upward before the broadcast downward (its data must reach the root and come back
// first anyway); the root in between keeps the result in its receive buffer. Running the two
// phases as separate steps of one sequence is what keeps bounded FIFOs deadlock-free: were the root
// to send down while its children were still sending up, both could block on full FIFOs.
#include <algorithm>

#include "collectives/ring/ring_schedule.h"
#include "collectives/tree/tree.h"
#include "collectives/tree/tree_shape.h"

namespace weft {
namespace {

// A rank's place in one tree as a multi-peer sequence: peer 0 is the parent (when there is one),
// then the children. The masks select them for a step.
struct TreeSeq {
  uint8_t parent = 0, children = 0;  // masks
  bool isRoot() const { return parent == 0; }
  bool isLeaf() const { return children == 0; }
};

TreeSeq beginTree(const Task& t, int channel, const tree::Links& l, Program* p) {
  int peers[kMaxSeqPeers] = {l.parent, l.child[0], l.child[1]};
  p->beginMultiPeerSequence(Lane::kTree, channel, peers, peers);
  TreeSeq s;
  int i = 0;
  if (l.parent >= 0) s.parent = uint8_t(1u << i++);
  for (int c : l.child)
    if (c >= 0) s.children |= uint8_t(1u << i++);
  return s;
}

// Reduce up: children (+) own input -> parent; the root writes the final value.
void reduceUp(const TreeSeq& s, size_t begin, size_t len, Program* p) {
  if (s.isRoot())
    p->addPeerStep(StepOp::kRecvReduceCopy, kStepPre | kStepPost, s.children, 0, Buf::kSend, begin, Buf::kRecv, begin,
                   len);
  else if (s.isLeaf())
    p->addPeerStep(StepOp::kSend, kStepPre, 0, s.parent, Buf::kSend, begin, Buf::kRecv, begin, len);
  else
    p->addPeerStep(StepOp::kRecvReduceSend, kStepPre, s.children, s.parent, Buf::kSend, begin, Buf::kRecv, begin, len);
}

// Broadcast down from the parent into the receive buffer; the root sends `rootSrc`.
void broadcastDown(const TreeSeq& s, Buf rootSrc, size_t begin, size_t len, Program* p) {
  if (s.isRoot())
    p->addPeerStep(rootSrc == Buf::kRecv ? StepOp::kSend : StepOp::kCopySend, 0, 0, s.children, rootSrc, begin,
                   Buf::kRecv, begin, len);
  else if (s.isLeaf())
    p->addPeerStep(StepOp::kRecv, 0, s.parent, 0, Buf::kSend, begin, Buf::kRecv, begin, len);
  else
    p->addPeerStep(StepOp::kRecvCopySend, 0, s.parent, s.children, Buf::kSend, begin, Buf::kRecv, begin, len);
}

// One rank: a local copy, with the reduction's pre and post applied where the kind reduces.
void singleRank(const Task& t, Program* p) {
  p->beginSequence(Lane::kTree, 0, -1, -1);
  const uint8_t flags = t.kind == CollKind::kBroadcast ? 0 : (kStepPre | kStepPost);
  p->addStep(StepOp::kCopy, flags, 0, 0, t.count);
}

}  // namespace

void buildTreeProgram(const CommShape& sh, const Task& t, int nChannels, Program* p) {
  const int n = sh.nranks, r = sh.rank;
  if (n == 1) return singleRank(t, p);
  // AllReduce's trees hang from rank 0; Reduce and Broadcast from the user's root.
  const int root = t.kind == CollKind::kAllReduce ? 0 : t.root;
  for (int ch = 0; ch < nChannels; ++ch) {
    const ring::Range share = ring::split(t.count, nChannels, ch);
    for (int tr = 0; tr < 2; ++tr) {
      const ring::Range half = ring::split(share.count, 2, tr);
      const size_t begin = share.begin + half.begin;
      const TreeSeq s = beginTree(t, 2 * ch + tr, tree::linksOf(n, root, tr, r), p);
      switch (t.kind) {
        case CollKind::kAllReduce:
          reduceUp(s, begin, half.count, p);
          broadcastDown(s, Buf::kRecv, begin, half.count, p);
          break;
        case CollKind::kReduce: reduceUp(s, begin, half.count, p); break;
        case CollKind::kBroadcast: broadcastDown(s, Buf::kSend, begin, half.count, p); break;
        default: break;
      }
    }
  }
}

}  // namespace weft
