// The slow path of mismatch detection. In-band stamps (op_stamp.h) meet only where a message
// moves; when ranks that called different things wait on each other without a message ever
// arriving (they picked different lanes because their sizes differ, or both only send, as two
// Broadcast "roots" do), the executor, once idle for a short while, sends its stamp to the
// peers it waits on as a bootstrap point-to-point message, answers the stamps peers send it (from
// its short history when it has finished that operation), and compares. Nothing of this runs
// while messages move: the fast path pays nothing.
//
// A rank that finds a mismatch (in-band or here) also sends the text to every other rank of the
// communicator, so that ranks that cannot read its shared-memory announcement (other hosts, or
// NCCL_SHM_DISABLE=1 peers) fail at once with the same two-sided text.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "task/task.h"

namespace weft {

// One stuck cursor: its task and the ranks it waits on.
struct StampWait {
  const Task* task;
  std::vector<int> peers;
};

class StampExchange {
 public:
  void reset() { sent_.clear(); }
  // The rank is stuck in w.task waiting on w.peers: send each its stamp, once per operation.
  void offer(const StampWait& w);
  // Reads what peers sent this rank of comm: stamps (compared with this rank's own calls, in
  // `current` first, else the history) and mismatch reports. True with *why set on a mismatch;
  // *reported tells whether another rank found it (its report) or this rank did.
  bool poll(ncclComm* comm, const std::vector<StampWait>& current, std::string* why, bool* reported);

 private:
  struct Sent {
    const ncclComm* comm;
    int peer;
    uint8_t kind;
    uint32_t op;
  };
  bool sendOnce(ncclComm* comm, int peer, const OpStamp& s);
  std::vector<Sent> sent_;
};

// A rank that never waits long never polls, yet the peers that wait on it send it their stamps: at
// most every 100 ms (the executor asks every few runs) it takes the pending messages
// off its bootstrap listener, whose backlog would otherwise fill up over a long run and make every
// later note cost its sender a connect timeout. The mailbox keeps only the latest note per peer.
void drainStampNotesIfDue(ncclComm* comm, int64_t nowNs);

// Sends a mismatch text to every other rank of comm (best effort: a peer that is gone is skipped).
void reportMismatch(ncclComm* comm, const std::string& text);

}  // namespace weft
