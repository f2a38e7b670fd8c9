// Where a communicator's ranks are, seen from this rank, from the RankInfo that init gathered: which
// share its host, and which its address space (dev::Runtime::addressSpace: ranks of one address
// space reach each other's memory by address, the others through shared memory or IPC handles).
#pragma once

struct ncclComm;

namespace weft {

// Every rank runs on this rank's host (the same answer on every rank).
bool allRanksOnThisHost(const ncclComm* comm);
// How many ranks run on this rank's machine (RankInfo::machineHash), itself included.
int ranksOnThisMachine(const ncclComm* comm);
// How many ranks live in another address space than this rank. Zero on one rank means zero on
// all: whether ranks must exchange handles is the same answer everywhere.
int ranksInOtherAddressSpaces(const ncclComm* comm);

}  // namespace weft
