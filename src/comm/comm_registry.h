// The set of live communicators of this process, so that the API can tell a communicator from a
// stale or garbage handle without dereferencing it.
#pragma once

struct ncclComm;

namespace weft {

void registerComm(ncclComm* comm);
void unregisterComm(ncclComm* comm);
bool isLiveComm(const ncclComm* comm);

}  // namespace weft
