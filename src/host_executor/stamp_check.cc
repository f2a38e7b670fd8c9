#include "host_executor/stamp_check.h"

#include "comm/op_stamp.h"

namespace weft {

std::string stampMismatchText(const Task& t, int peer, const OpStamp& theirs) {
  const ncclComm* comm = t.comm;
  return mismatchText(comm->commHash, comm->rank, t.stamp, peer, theirs);
}

std::string messageSizeText(const Task& t, const char* laneNote, int peer, size_t want, size_t got) {
  return "rank " + std::to_string(t.comm->rank) + " expected a message of " + std::to_string(want) +
         " bytes from rank " + std::to_string(peer) + " in " + collName(t.kind) + " #" + std::to_string(t.seq) +
         laneNote + " but got " + std::to_string(got) + " (do the counts and datatypes of matching calls agree?)";
}

}  // namespace weft
