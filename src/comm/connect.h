// Which transport connects two ranks: shared memory between ranks of one host, the network
// between hosts (or between every pair when NCCL_SHM_DISABLE=1); and connecting a set of links
// before use, for the callers that must have them all at once (init under NCCL_RUNTIME_CONNECT=0,
// a GPU launch). The host executor connects lazily from its progress loop instead.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "transports/connection.h"

struct ncclComm;

namespace weft {

// True when this rank reaches `peer` over the network.
bool usesNetwork(const ncclComm* comm, int peer);
// A new, not yet connected connection for one direction of (lane, channel) to or from a peer.
// deliver: a receiving network link whose messages the proxy hands over instead of an executor
// reading them (net::NetLink::deliver); only for peers reached over the network.
using NetDeliver = std::function<void(const unsigned char* data, size_t bytes)>;
std::unique_ptr<Connection> makeConnection(ncclComm* comm, const ConnectionId& id, bool isSender, uint32_t nslots,
                                           NetDeliver deliver = {});
// The communicator's connection for (lane, channel, peer, direction), made on first use.
Connection* getConnection(ncclComm* comm, Lane lane, int channel, int peer, bool isSender, uint32_t nslots);

// How connectAll ended. `link` is the link that failed, or the first one still pending when the
// wait was aborted or timed out; callers word the error, naming what they connected for.
struct ConnectOutcome {
  enum class End { kConnected, kFailed, kAborted, kTimedOut } end = End::kConnected;
  ncclResult_t result = ncclSuccess;  // kFailed: the link's error
  size_t link = 0;
  std::string why;  // kFailed: the link's own text
};
// One attempt at link i (tryConnect's contract); a caller may wrap it, e.g. in its GPU's context.
using ConnectAttempt = std::function<ncclResult_t(size_t i, bool* ready, std::string* why)>;

// Connects every link together: each one not yet connected is tried in every round, 50 us apart,
// since a peer's receive side may wait on our send side's handshake. Ends when all are connected,
// a link fails, the abort flag of the first pending link is set (aborts[i]; empty: none) or
// deadlineNs (base/clock.h) passes. Without `attempt`, links[i]->tryConnect is the attempt.
ConnectOutcome connectAll(std::span<Connection* const> links, std::span<const std::atomic<bool>* const> aborts,
                          int64_t deadlineNs, const ConnectAttempt& attempt = {});

}  // namespace weft
