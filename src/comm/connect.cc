#include "comm/connect.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/clock.h"
#include "base/params.h"
#include "comm/comm.h"
#include "transports/net/net_connection.h"
#include "transports/p2p/p2p_connection.h"
#include "transports/shm/shm_connection.h"

namespace weft {

namespace {

// GPU ranks of one host map each other's FIFOs unless P2P is disabled (NCCL_P2P_DISABLE, or
// NCCL_P2P_LEVEL=LOC for ranks on different GPUs). Both sides decide from the same settings, so they
// agree. (Path levels between LOC and SYS are not told apart yet: any other level allows P2P.)
bool usesP2p(const ncclComm* comm, int peer) {
  if (comm->hostMode || comm->agreed.p2pDisable) return false;
  const RankInfo& me = comm->ranks[comm->rank];
  const RankInfo& other = comm->ranks[peer];
  const bool sameGpu = me.addressSpace == other.addressSpace ? me.device == other.device : false;
  const std::string& level = comm->agreed.p2pLevel;
  return sameGpu || level != "LOC";
}

}  // namespace

bool usesNetwork(const ncclComm* comm, int peer) {
  return comm->ranks[peer].hostHash != comm->ranks[comm->rank].hostHash || comm->agreed.shmDisable;
}

std::unique_ptr<Connection> makeConnection(ncclComm* comm, const ConnectionId& id, bool isSender, uint32_t nslots,
                                           NetDeliver deliver) {
  const int peer = isSender ? id.receiverRank : id.senderRank;
  std::unique_ptr<ConnectionBackend> backend;
  if (usesNetwork(comm, peer) && comm->network != nullptr) {
    NetConnectionSpec spec;
    spec.id = id;
    spec.isSender = isSender;
    spec.nslots = nslots;
    // The stride of a network FIFO leaves room after each slot's payload for the stamp the proxy
    // sends as a trailer. Pieces are still cut by comm->slotBytes (both executors), so the larger
    // stride only adds room: the payload never reaches the trailer.
    spec.slotBytes = comm->slotBytes + kNetTrailerBytes;
    spec.network = comm->network;
    spec.device = comm->netDeviceOrder.empty() ? 0
                                               : comm->netDeviceOrder[size_t(id.channel) % comm->netDeviceOrder.size()];
    spec.bootstrap = comm->bootstrap.get();
    spec.ownerBell = comm->peers.self();
    spec.peerHost = comm->ranks[peer].hostName;
    spec.timeoutMs = param::timeoutMs();
    spec.traceRank = comm->traceRank;
    spec.deliver = std::move(deliver);
    spec.proxyProfile = comm->proxyProfile;
    backend = std::make_unique<NetConnection>(spec);
  } else if (usesP2p(comm, peer)) {
    P2pSpec spec{id,
                 isSender,
                 comm->p2pRead,
                 nslots,
                 comm->slotBytes,
                 comm->ranks[comm->rank].device,
                 std::min<int64_t>(param::timeoutMs(), 10000)};
    backend = std::make_unique<P2pConnection>(spec);
  } else {
    // The host executor's FIFOs spread their payloads where every rank on the machine can have a
    // core of its own (connection.h: spreadOffset says why, and why not otherwise). The GPU kernel
    // addresses slots itself and does not. Only the receiver's choice counts: it creates the FIFO
    // and writes the choice into its header.
    const bool spread = comm->hostMode && !comm->coresOversubscribed;
    // Host mode's FIFOs also get deep header rings and a small area (fifo.h says why); the GPU
    // kernel addresses one header per payload slot.
    FifoGeometry g{nslots, comm->slotBytes};
    if (comm->hostMode) {
      g.nheaders = nslots * kHeaderSlotsPerPayloadSlot;
      g.smallBytes = kSmallPayloadBytes;
    }
    backend = std::make_unique<ShmConnection>(id, isSender, g, comm->peers.block(peer), spread);
  }
  return std::make_unique<Connection>(id, isSender, std::move(backend));
}

Connection* getConnection(ncclComm* comm, Lane lane, int channel, int peer, bool isSender, uint32_t nslots) {
  ConnectionId id{comm->commHash, lane, channel, isSender ? comm->rank : peer, isSender ? peer : comm->rank};
  if (Connection* c = comm->connections.find(id, isSender)) return c;
  return comm->connections.add(makeConnection(comm, id, isSender, nslots));
}

ConnectOutcome connectAll(std::span<Connection* const> links, std::span<const std::atomic<bool>* const> aborts,
                          int64_t deadlineNs, const ConnectAttempt& attempt) {
  ConnectOutcome out;
  for (;;) {
    size_t pending = links.size();
    for (size_t i = 0; i < links.size(); ++i) {
      if (links[i]->connected()) continue;
      bool ready = false;
      std::string why;
      ncclResult_t r = attempt ? attempt(i, &ready, &why) : links[i]->tryConnect(&ready, &why);
      if (r != ncclSuccess) {
        out.end = ConnectOutcome::End::kFailed;
        out.result = r;
        out.link = i;
        out.why = why;
        return out;
      }
      if (!ready && pending == links.size()) pending = i;
    }
    if (pending == links.size()) return out;
    out.link = pending;
    if (!aborts.empty() && aborts[pending] != nullptr && aborts[pending]->load(std::memory_order_acquire)) {
      out.end = ConnectOutcome::End::kAborted;
      return out;
    }
    if (nowNs() > deadlineNs) {
      out.end = ConnectOutcome::End::kTimedOut;
      return out;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace weft
