#include "rma/net_puts.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "base/params.h"
#include "base/result.h"
#include "comm/comm.h"
#include "comm/connect.h"
#include "transports/net/proxy.h"
#include "transports/rank_block.h"

namespace weft {
namespace {

// What precedes a message's bytes on the RMA lane. A whole inline slot (32 bytes), so a bare
// signal travels inline.
struct PutHeader {
  uint64_t window;  // the registration id (comm/window_table.h)
  uint64_t offset;  // into the target's window
  uint32_t bytes;   // of payload after the header
  uint32_t flags;   // kSignalAfter
  uint64_t reserved;
};
static_assert(sizeof(PutHeader) == kInlineBytes, "a bare signal travels inline");
constexpr uint32_t kSignalAfter = 1;

ConnectionId linkId(const ncclComm* comm, int sender, int receiver) {
  return ConnectionId{comm->commHash, Lane::kRma, 0, sender, receiver};
}

// Runs on the target's proxy thread: writes one message into its window, then counts the signal.
void deliverPut(WindowTable& table, RankBlock* self, int origin, int rank, const unsigned char* data, size_t bytes) {
  PutHeader h{};
  if (bytes < sizeof h) {
    WEFT_WARN("rank %d: a one-sided message of %zu bytes from rank %d is shorter than its header; dropped", rank, bytes,
              origin);
    return;
  }
  memcpy(&h, data, sizeof h);
  if (h.bytes > 0) {
    std::lock_guard<std::mutex> lock(table.mutex);
    auto it = table.windows.find(h.window);
    const bool fits = it != table.windows.end() && h.offset <= it->second.size &&
                      h.bytes <= it->second.size - h.offset && h.bytes == bytes - sizeof h;
    if (fits) {
      memcpy(reinterpret_cast<void*>(it->second.addr + h.offset), data + sizeof h, h.bytes);
    } else if (table.dropped.empty()) {
      table.dropped = "a put of " + std::to_string(h.bytes) + " bytes from rank " + std::to_string(origin) +
                      " to window #" + std::to_string(h.window) + " at offset " + std::to_string(h.offset) +
                      " of rank " + std::to_string(rank) + " was dropped: " +
                      (it == table.windows.end() ? "the window is not registered (deregistered too early?)"
                                                 : "it does not fit the window");
      WEFT_WARN("%s", table.dropped.c_str());
    }
  }
  if ((h.flags & kSignalAfter) != 0) {
    // Release: the bytes written above are visible to a waiter that reads the new count.
    rankSignals(self)[origin].fetch_add(1, std::memory_order_release);
    ringIfSleeping(self);
  }
}

// Waits for room in the link to `peer`, moving the network from this thread meanwhile.
ncclResult_t waitForRoom(ncclComm* comm, Connection* link, int peer, NetworkPoller* network, std::string* why) {
  const int64_t start = nowNs();
  const int64_t timeoutNs = param::timeoutMs() * 1000000;
  for (int spin = 0; !link->canSend(); ++spin) {
    if (network->progress()) continue;
    const std::string failure = link->backend().failure();
    if (!failure.empty()) {
      *why = failure + " while rank " + std::to_string(comm->rank) + " put to rank " + std::to_string(peer);
      return ncclRemoteError;
    }
    if (comm->abortFlag.load(std::memory_order_acquire)) {
      *why = "the communicator was aborted (ncclCommAbort) while rank " + std::to_string(comm->rank) + " put to rank " +
             std::to_string(peer);
      return ncclInvalidUsage;
    }
    if (nowNs() - start > timeoutNs) {
      *why = "rank " + std::to_string(comm->rank) + " could not send a put to rank " + std::to_string(peer) + " for " +
             std::to_string(param::timeoutMs()) + " ms (WEFT_TIMEOUT_MS): its network link stays full";
      return ncclRemoteError;
    }
    if (spin > 100) sched_yield();
  }
  return ncclSuccess;
}

}  // namespace

bool putsOverNetwork(const ncclComm* comm, int peer) { return peer != comm->rank && usesNetwork(comm, peer); }

ncclResult_t connectPutLinks(ncclComm* comm, std::string* why) {
  std::vector<Connection*> links;
  for (int p = 0; p < comm->nranks; ++p) {
    if (!putsOverNetwork(comm, p)) continue;
    if (comm->network == nullptr) {
      *why = "rank " + std::to_string(p) + " is reached over the network, but this communicator has none";
      return ncclInternalError;
    }
    const uint32_t nslots = comm->laneSlots(Lane::kRma);
    links.push_back(comm->connections.add(makeConnection(comm, linkId(comm, comm->rank, p), true, nslots)));
    auto deliver = [table = comm->windows, self = comm->peers.self(), p,
                    rank = comm->rank](const unsigned char* d, size_t n) { deliverPut(*table, self, p, rank, d, n); };
    links.push_back(comm->connections.add(makeConnection(comm, linkId(comm, p, comm->rank), false, nslots, deliver)));
  }
  if (links.empty()) return ncclSuccess;
  std::vector<const std::atomic<bool>*> aborts(links.size(), &comm->abortFlag);
  const ConnectOutcome out = connectAll(links, aborts, nowNs() + param::timeoutMs() * 1000000);
  const std::string what = "connecting the one-sided links of rank " + std::to_string(comm->rank) + " (" +
                           links[out.link]->id().describe() + ")";
  switch (out.end) {
    case ConnectOutcome::End::kConnected: return ncclSuccess;
    case ConnectOutcome::End::kFailed: *why = what + ": " + out.why; return out.result;
    case ConnectOutcome::End::kAborted: *why = what + ": aborted (ncclCommAbort)"; return ncclInvalidUsage;
    case ConnectOutcome::End::kTimedOut: break;
  }
  *why = what + ": not connected within " + std::to_string(param::timeoutMs()) + " ms (WEFT_TIMEOUT_MS)";
  return ncclRemoteError;
}

ncclResult_t netPut(ncclComm* comm, int peer, uint64_t windowId, uint64_t offset, const void* src, size_t bytes,
                    bool signal, std::string* why) {
  Connection* link = comm->connections.find(linkId(comm, comm->rank, peer), true);
  if (link == nullptr || !link->connected()) {
    *why = "rank " + std::to_string(comm->rank) + " has no one-sided link to rank " + std::to_string(peer) +
           " (no window was registered on this communicator yet)";
    return ncclInvalidUsage;
  }
  const size_t maxPayload = comm->slotBytes - sizeof(PutHeader);
  const auto* from = static_cast<const unsigned char*>(src);
  NetworkPoller network(true);
  size_t done = 0;
  do {
    const size_t chunk = std::min(bytes - done, maxPayload);
    const bool last = done + chunk == bytes;
    WEFT_CHECK(waitForRoom(comm, link, peer, &network, why));
    auto* msg = static_cast<unsigned char*>(link->sendBuffer(sizeof(PutHeader) + chunk));
    const PutHeader h{windowId, offset + done, static_cast<uint32_t>(chunk), last && signal ? kSignalAfter : 0, 0};
    memcpy(msg, &h, sizeof h);
    if (chunk > 0) memcpy(msg + sizeof h, from + done, chunk);
    link->publish(sizeof h + chunk, OpStamp{});
    done += chunk;
  } while (done < bytes);
  // Hand the messages to the network from this thread: a small put then leaves without waiting for
  // the proxy thread to wake. What is still on its way when this returns, the proxy takes over
  // (the poller's end rings it).
  (void)network.progress();
  return ncclSuccess;
}

NetworkPoller::NetworkPoller(bool on) : on_(on) {
  if (on_) net::Proxy::instance().addPoller();
}

NetworkPoller::~NetworkPoller() {
  if (on_ && polling_) net::Proxy::instance().removePoller(true);
}

bool NetworkPoller::progress() { return on_ && net::Proxy::instance().tryProgress(); }

void NetworkPoller::beforeSleep() {
  if (on_ && polling_) net::Proxy::instance().removePoller(false);
  polling_ = false;
}

void NetworkPoller::afterSleep() {
  if (on_ && !polling_) net::Proxy::instance().addPoller();
  polling_ = true;
}

std::string netPutLinkFailure(const ncclComm* comm, int peer) {
  const Connection* link = comm->connections.find(linkId(comm, peer, comm->rank), false);
  return link != nullptr ? link->backend().failure() : std::string();
}

}  // namespace weft
