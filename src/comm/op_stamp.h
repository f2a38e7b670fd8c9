// Op stamps (transports/fifo.h: OpStamp): what one rank called as one operation of a communicator.
// Every message carries its sender's stamp, and the receiver compares it with its own before it
// uses the message, so ranks that called different things as the same operation fail at once with
// both calls named (ARCHITECTURE.md principle 8) instead of hanging or returning wrong data.
//
// Sequence spaces: collectives (every rank calls them) are numbered in one counter per
// communicator; Send/Recv per (peer, direction), so the n-th Send to P meets P's n-th Recv from
// this rank whatever other point-to-point traffic either rank has.
#pragma once
#include <string>

#include "task/task.h"
#include "transports/fifo.h"

namespace weft {

// Gives the task its number in its sequence space (at enqueue, in issue order).
void assignOpNumber(Task* t);
// A stamp's reduction as text: "sum", ..., "avg", "premulsum" (a user op), "?" otherwise.
const char* redopName(uint8_t stampRedop);
// The task's stamp, once its algorithm, protocol and channels are chosen.
OpStamp makeStamp(const Task& t);
// Keeps the stamp in the communicator's short history (ncclComm::recentStamps).
void rememberStamp(ncclComm* comm, const OpStamp& s);
// This rank's stamp for the operation a peer's stamp `theirs` (from peerRank) claims to match:
// the same collective number, or for a Send to us our Recv from it with the same number (and the
// reverse). False when it is not in the history (not issued yet, or too old).
bool findOwnStamp(const ncclComm* comm, const OpStamp& theirs, int peerRank, OpStamp* mine);
// "ncclAllReduce(1000 x float32, sum)": what a stamp says its rank called. The algorithm (and,
// where they differ too, protocol and channels) is added when `other` differs in it.
std::string describeCall(const OpStamp& s, const OpStamp& other);
// The error text of a mismatch between this rank's call `mine` and `theirs`, which peer sent:
// "ncclAllGather: operation #12 of communicator 3f2a...: rank 1 called ncclAllGather(2000 x int32)
// but rank 0 called ncclAllReduce(1000 x float32, sum)".
std::string mismatchText(uint64_t commHash, int rank, const OpStamp& mine, int peer, const OpStamp& theirs);
// Is this (an error text a peer published) a mismatch report? Such reports are passed on with
// ncclInvalidUsage rather than as a remote failure.
bool isMismatchText(const std::string& text);

}  // namespace weft
