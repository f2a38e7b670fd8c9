// A chain's cursor, and the two shapes of peer set a sequence can have. The stepping core
// (chain_runner.h) is one function over a peer set: OnePeer is its n = 1 instance (ring and
// point-to-point sequences), whose fixed one-element loops the compiler unrolls into the
// single-link code, so the ring path pays nothing for trees; TreePeers names up to kMaxSeqPeers
// peers each way and lets each step's masks pick among them.
#pragma once
#include <cstddef>
#include <cstdint>

#include "program/program.h"

namespace weft {

// A chain of sequences that share connections: they run one after another, in the order the
// application issued their operations (the same order on every rank).
template <class Link>
struct Cursor {
  uint32_t pos, end;   // into the runner's order of sequences
  uint32_t first = 0;  // pos when the chain starts
  uint32_t step = 0;
  size_t done = 0;  // elements of the current step already moved (a direct step's phase)
  bool finished = false;
  bool multiPeer = false;   // the chain has multi-peer sequences: it steps with TreePeers
  int64_t stepStartNs = 0;  // traced runs: when the current step's first piece moved (trace/trace.h)
  // The current sequence's links by peer index, made on first use (single-peer: index 0).
  Link* sends[kMaxSeqPeers] = {};
  Link* recvs[kMaxSeqPeers] = {};
};

struct OnePeer {
  static constexpr int kMax = 1;
  static int count(const Sequence& s, bool send) { return (send ? s.sendPeer : s.recvPeer) >= 0 ? 1 : 0; }
  static int peer(const Sequence& s, bool send, int) { return send ? s.sendPeer : s.recvPeer; }
  // Every step that receives (sends) uses the one peer of that direction.
  static unsigned mask(const Step&, bool) { return 1u; }
};

struct TreePeers {
  static constexpr int kMax = kMaxSeqPeers;
  static int count(const Sequence& s, bool send) { return send ? s.nSendPeers : s.nRecvPeers; }
  static int peer(const Sequence& s, bool send, int i) { return send ? s.sendPeers[i] : s.recvPeers[i]; }
  static unsigned mask(const Step& st, bool send) { return send ? st.sendMask : st.recvMask; }
};

}  // namespace weft
