// Which transport connects two ranks: shared memory between ranks of one host, the network
// between hosts (or between every pair when NCCL_SHM_DISABLE=1).
#pragma once
#include <memory>

#include "transports/connection.h"

struct ncclComm;

namespace weft {

// True when this rank reaches `peer` over the network.
bool usesNetwork(const ncclComm* comm, int peer);
// A new, not yet connected connection for one direction of (lane, channel) to or from a peer.
std::unique_ptr<Connection> makeConnection(ncclComm* comm, const ConnectionId& id, bool isSender, uint32_t nslots);
// The communicator's connection for (lane, channel, peer, direction), made on first use.
Connection* getConnection(ncclComm* comm, Lane lane, int channel, int peer, bool isSender, uint32_t nslots);

}  // namespace weft
