// Creating, splitting, shrinking and ending communicators (host mode). The API layer checks the
// arguments; these functions do the work and record messages for ncclGetLastError.
#pragma once
#include "comm/config.h"
#include "nccl.h"

namespace weft {

// Creates *out and joins the rendezvous. Blocking configs return when the communicator is ready;
// non-blocking ones return ncclInProgress at once and finish on a thread (ncclCommGetAsyncError).
ncclResult_t commCreate(ncclComm** out, int nranks, const ncclUniqueId& id, int rank, const CommConfig& cfg);
// The two halves of commCreate, for an init issued inside a group: the handle exists at once (still
// initializing), the rendezvous and setup run at ncclGroupEnd.
ncclComm* commAllocate(int nranks, int rank, const CommConfig& cfg);
ncclResult_t commSetup(ncclComm* comm, const ncclUniqueId& id);
ncclResult_t commSplit(ncclComm* parent, int color, int key, ncclComm** out, const CommConfig& cfg);
ncclResult_t commShrink(ncclComm* parent, const int* exclude, int nExclude, ncclComm** out, const CommConfig& cfg);
// ncclCommGetUniqueId and ncclCommGrow (comm_grow.cc): an id for the ranks that join, then the
// grown communicator. parent is null on a joining rank, which passes its id and rank; a parent's
// ranks pass rank -1, and the one that made the id passes it.
ncclResult_t commGrowId(ncclComm* parent, ncclUniqueId* id);
ncclResult_t commGrow(ncclComm* parent, int nranks, const ncclUniqueId* id, int rank, ncclComm** out,
                      const CommConfig& cfg);
// ncclCommSuspend/ncclCommResume/ncclCommMemStats (comm_suspend.cc). Suspend and resume are
// collective: every rank calls them, with no operation in flight.
ncclResult_t commSuspend(ncclComm* comm, int flags);
ncclResult_t commResume(ncclComm* comm);
ncclResult_t commMemStat(ncclComm* comm, ncclCommMemStat_t stat, uint64_t* value);
// Waits for a non-blocking init to finish (destroy and abort need a settled communicator).
void commJoinInit(ncclComm* comm);
// Frees everything; the handle is invalid afterwards.
void commFree(ncclComm* comm);
// Ends operations in flight, tells the local peers, and frees the communicator.
void commAbort(ncclComm* comm);

}  // namespace weft
