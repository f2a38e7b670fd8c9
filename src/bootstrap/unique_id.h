// Making ncclUniqueIds: where the rendezvous root listens and the secret that admits its ranks.
#pragma once
#include <cstdint>

#include "nccl.h"

namespace weft {

// Fills *id with the root's listen address and a fresh random secret, and starts the root
// service in this process (a detached thread that serves one rendezvous, then exits; it gives
// up after param::timeoutMs() if the ranks never arrive).
// Under NCCL_COMM_ID no root is started: the id then holds that address and a secret derived from
// it, and rank 0 serves the rendezvous inside Bootstrap::create.
ncclResult_t bootstrapGetUniqueId(ncclUniqueId* id);

// Like bootstrapGetUniqueId but always starts a root in this process, whatever NCCL_COMM_ID says.
// For ids Weft makes for itself (ncclCommSplit, ncclCommInitAll): a fixed NCCL_COMM_ID port cannot
// serve several rendezvous at once. Bootstrap::create honours such an id even under NCCL_COMM_ID.
ncclResult_t bootstrapGetLocalUniqueId(ncclUniqueId* id);

// A 64-bit hash of the id's secret and address: the same on every rank of one communicator,
// different for every communicator (names shared-memory segments).
uint64_t bootstrapIdHash(const ncclUniqueId& id);

}  // namespace weft
