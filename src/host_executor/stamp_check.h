// The checks on every received piece, as the stepping core (chain_runner.h) makes them: the
// in-band half of mismatch detection (comm/op_stamp.h) first, since the message at the head of a
// receive link must belong to the call this rank is making, then the byte count, as a size
// difference is only a symptom of a mismatch. The stamp test is inline, as it runs for every piece
// received; the texts are made only when a check fails.
#pragma once
#include <string>

#include "comm/comm.h"
#include "task/task.h"
#include "transports/fifo.h"

namespace weft {

inline bool stampMatches(const Task& t, int peer, const OpStamp& theirs) {
  const ncclComm* comm = t.comm;
  return !comm->agreed.mismatchCheck || stampsAgree(t.stamp, theirs, comm->rank, peer);
}

// Both calls, named: the error a mismatch fails the operation with.
std::string stampMismatchText(const Task& t, int peer, const OpStamp& theirs);

// A message of another size than the step expects ("do the counts and datatypes agree?").
std::string messageSizeText(const Task& t, const char* laneNote, int peer, size_t want, size_t got);

}  // namespace weft
