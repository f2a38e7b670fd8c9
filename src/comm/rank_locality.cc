#include "comm/rank_locality.h"

#include "comm/comm.h"

namespace weft {

bool allRanksOnThisHost(const ncclComm* comm) {
  for (const RankInfo& r : comm->ranks)
    if (r.hostHash != comm->ranks[comm->rank].hostHash) return false;
  return true;
}

int ranksOnThisMachine(const ncclComm* comm) {
  int n = 0;
  for (const RankInfo& r : comm->ranks) n += r.machineHash == comm->ranks[comm->rank].machineHash;
  return n;
}

int ranksInOtherAddressSpaces(const ncclComm* comm) {
  int n = 0;
  for (const RankInfo& r : comm->ranks) n += r.addressSpace != comm->ranks[comm->rank].addressSpace;
  return n;
}

}  // namespace weft
