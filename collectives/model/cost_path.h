// The building blocks of every algorithm's cost formula (cost_model.h): what one hop costs on the
// path the algorithm takes, a pipeline over slot-sized pieces, and a barrier of the local ranks.
#pragma once
#include "collectives/model/cost_model.h"

namespace weft {

// The costs of one hop as the algorithm sees it: the slowest link on its path gates a pipeline.
struct Path {
  double latUs;         // exposed wait for a peer's piece
  double copyPerB;      // us per byte copied over the path
  double reducePerB;    // us per byte reduced (read two, write one)
  double peerReadPerB;  // us per byte read from a peer's staging area (direct reads)
  // us per byte of taking a piece out of the slot a peer (or, across hosts, the proxy) just filled:
  // a read of lines another core wrote, on top of the copy or reduction. 0 on GPUs, where the
  // sender writes across the link (never measured there).
  double hopPerB;
  // us per byte of the message, once, for reading the input and writing the output where they
  // outgrow the caches (what a copy at memGBps costs more than one at copyGBps); 0 across hosts,
  // where the per-byte fields above already run at memory speed. estimateUs adds it for every
  // algorithm alike: each reads its input and writes its output once.
  double memPerB;
  double stepUs;     // fixed cost per piece
  double workScale;  // > 1 when ranks outnumber cores: each rank gets a share of a core
  // More ranks than cores: a wait is a switch to the rank waited for, which takes core time from
  // the work instead of overlapping it.
  bool oversubscribed() const { return workScale > 1.0; }
  // A hop between two ranks of one host, for schedules whose hops are not all alike (recursive
  // doubling's rounds within a host). The same as the fields above when all ranks share a host.
  double localLatUs;
  double localCopyPerB;
  double localReducePerB;
};

// workingSet: bytes the operation touches on this host; beyond the caches its input and output
// move at memory bandwidth (memPerB).
Path pathFor(const ModelInput& in, const HostConstants& hc, bool crossesHosts, double workingSet);

// A pipelined schedule over c channels run by one thread per rank. Each channel moves `stepBytes`
// per step in pieces of at most one slot, `stepsPerLoop` steps per pass over its share. A channel
// waits `latUs` for every piece from its predecessor; the thread can fill that wait with other
// channels' pieces, so the time is the larger of the thread's total work and one channel's chain
// of waits, plus the pipeline fill of `fillHops` hops (oversubscribed: the sum of the two, the waits
// being switches that take the core). On GPUs (in.channelsInParallel) each
// channel is a block of its own, and the work is one channel's.
double pipelined(const ModelInput& in, const Path& p, int c, double fillHops, double stepsPerLoop, double stepBytes,
                 double perByte);

// A flat barrier of the local ranks: each posts a counter and waits for all; the last arrival's
// post reaches the others after one handoff, or, when ranks share cores, after every rank of a
// core has had its turn. Between cores, the first read of what the barrier released waits for one
// more handoff (measured with 2 ranks on 2 cores: DDA flat at 8 B took two handoffs, not one).
double barrierUs(const ModelInput& in, const Path& p);

int log2Ceil(int n);

}  // namespace weft
