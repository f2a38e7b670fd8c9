// The network backend of a Connection: the FIFO lives in this process's memory and the network
// proxy moves its slots to or from the peer. Setting the link up is a handshake that never blocks
// the executor for long: the receiver listens and sends its handle to the sender over the
// bootstrap (in short attempts, so that a peer that already left costs one attempt per call and the
// executor goes on polling for mismatch reports and failures between them), the sender connects
// with it, the receiver accepts; then the link goes to the proxy.
#pragma once
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "bootstrap/bootstrap.h"
#include "transports/connection.h"
#include "transports/net/network.h"
#include "transports/net/proxy.h"

namespace weft {

struct NetConnectionSpec {
  ConnectionId id;
  bool isSender = false;
  uint32_t nslots = 0, slotBytes = 0;
  net::Network* network = nullptr;
  int device = 0;
  Bootstrap* bootstrap = nullptr;  // outlives the connection (both belong to one communicator)
  RankBlock* ownerBell = nullptr;  // this rank's doorbell, rung by the proxy
  std::string peerHost;            // for messages
  int traceRank = -1;              // the rank this link's trace events carry (trace/trace.h)
  int64_t timeoutMs = 0;
  // Receiving links only: hand each message to this on the proxy's thread instead of to an
  // executor (net::NetLink::deliver).
  std::function<void(const unsigned char* data, size_t bytes)> deliver;
  // The communicator's profiler events on its links (links that deliver have none).
  std::shared_ptr<net::ProxyProfile> proxyProfile;
};

class NetConnection final : public ConnectionBackend {
 public:
  explicit NetConnection(const NetConnectionSpec& spec);
  ~NetConnection() override;
  ncclResult_t tryConnect(FifoView* view, bool* ready, std::string* why) override;
  RankBlock* bell() const override { return net::Proxy::instance().bell(); }
  std::string failure() const override;
  void hostRange(void** base, size_t* bytes) const override {
    *base = mem_;
    *bytes = memBytes_;
  }
  const char* transportName() const override { return "net"; }
  void shutdown() override;

 private:
  enum class State { kStart, kSendHandle, kAwaitHandle, kConnecting, kAccepting, kReady };
  ncclResult_t finish(void* comm, FifoView* view, std::string* why);
  uint64_t handshakeTag() const;
  std::string pendingText(int peer) const;

  NetConnectionSpec spec_;
  State state_ = State::kStart;
  int64_t deadlineNs_ = 0;
  std::string lastSendFailure_;  // why the last attempt to send the handle failed, for the timeout text
  unsigned char handle_[net::kHandleBytes] = {};
  void* listenComm_ = nullptr;
  void* comm_ = nullptr;  // until handed to the proxy
  unsigned char* mem_ = nullptr;
  size_t memBytes_ = 0;
  // Written by the thread that connects, read by one that aborts the communicator (shutdown), so
  // both hold linkMutex_ there; the connecting thread reads it alone everywhere else.
  std::mutex linkMutex_;
  std::shared_ptr<net::NetLink> link_;
  bool shutDown_ = false;
};

}  // namespace weft
