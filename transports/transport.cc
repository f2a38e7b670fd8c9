#include "transports/transport.h"

#include "core/comm.h"
#include "core/params.h"
#include "transports/net/net_connection.h"
#include "transports/shm/shm_connection.h"

namespace weft {

bool usesNetwork(const ncclComm* comm, int peer) {
  return comm->ranks[peer].hostHash != comm->ranks[comm->rank].hostHash || param::shmDisable();
}

std::unique_ptr<Connection> makeConnection(ncclComm* comm, const ConnectionId& id, bool isSender, uint32_t nslots) {
  const int peer = isSender ? id.receiverRank : id.senderRank;
  std::unique_ptr<ConnectionBackend> backend;
  if (usesNetwork(comm, peer) && comm->network != nullptr) {
    NetConnectionSpec spec;
    spec.id = id;
    spec.isSender = isSender;
    spec.nslots = nslots;
    spec.slotBytes = comm->slotBytes;
    spec.network = comm->network;
    spec.device = comm->netDevices > 0 ? id.channel % comm->netDevices : 0;
    spec.bootstrap = comm->bootstrap.get();
    spec.ownerBell = comm->peers.self();
    spec.peerHost = comm->ranks[peer].hostName;
    spec.timeoutMs = param::timeoutMs();
    backend = std::make_unique<NetConnection>(spec);
  } else {
    backend = std::make_unique<ShmConnection>(id, isSender, nslots, comm->slotBytes, comm->peers.block(peer));
  }
  return std::make_unique<Connection>(id, isSender, std::move(backend));
}

Connection* getConnection(ncclComm* comm, Lane lane, int channel, int peer, bool isSender, uint32_t nslots) {
  ConnectionId id{comm->commHash, lane, channel, isSender ? comm->rank : peer, isSender ? peer : comm->rank};
  if (Connection* c = comm->connections.find(id, isSender)) return c;
  return comm->connections.add(makeConnection(comm, id, isSender, nslots));
}

}  // namespace weft
