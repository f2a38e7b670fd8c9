#include "transports/net/net_connection.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "base/clock.h"
#include "base/log.h"

namespace weft {
namespace {

// The bound of one attempt to send the receiver's handle (see State::kSendHandle).
constexpr int64_t kHandleAttemptMs = 20;

}  // namespace

NetConnection::NetConnection(const NetConnectionSpec& spec) : spec_(spec) {}

NetConnection::~NetConnection() {
  if (link_) {
    net::Proxy::instance().close(link_, /*drain=*/true);
    // Its last messages have been delivered: their events stop, and no hook comes any more.
    if (link_->profileLink != nullptr) link_->profile->dropLink(link_->profileLink);
  }
  link_.reset();
  if (comm_ != nullptr) (void)(spec_.isSender ? spec_.network->closeSend(comm_) : spec_.network->closeRecv(comm_));
  if (listenComm_ != nullptr) (void)spec_.network->closeListen(listenComm_);
  free(mem_);
}

uint64_t NetConnection::handshakeTag() const {
  // Unique per (lane, channel) of one direction between two ranks of one communicator (the
  // bootstrap's mailbox is per communicator and keyed by sender too).
  return (uint64_t(0x4e4554) << 40) | (uint64_t(spec_.id.lane) << 32) | uint32_t(spec_.id.channel);
}

std::string NetConnection::failure() const { return link_ ? net::Proxy::instance().failureOf(*link_) : std::string(); }

void NetConnection::shutdown() {
  std::shared_ptr<net::NetLink> link;
  {
    std::lock_guard<std::mutex> lock(linkMutex_);
    shutDown_ = true;
    link = link_;
  }
  if (link) net::Proxy::instance().shutdown(link);
}

ncclResult_t NetConnection::tryConnect(FifoView* view, bool* ready, std::string* why) {
  *ready = false;
  const int peer = spec_.isSender ? spec_.id.receiverRank : spec_.id.senderRank;
  auto fail = [&](ncclResult_t r, const std::string& what) {
    *why = "network link " + spec_.id.describe() + " (peer on host " + spec_.peerHost + "): " + what;
    return r;
  };
  if (state_ == State::kStart) {
    deadlineNs_ = nowNs() + spec_.timeoutMs * 1000000;
    if (spec_.isSender) {
      state_ = State::kAwaitHandle;
    } else {
      ncclResult_t r = spec_.network->listen(spec_.device, handle_, &listenComm_);
      if (r != ncclSuccess)
        return fail(r, std::string("listen on ") + spec_.network->name() + " device " + std::to_string(spec_.device) +
                           " failed");
      state_ = State::kSendHandle;
    }
  }
  ncclResult_t r;
  switch (state_) {
    case State::kSendHandle: {
      // One short attempt per call: the peer's bootstrap refuses connections once its
      // communicator is gone (it failed on a mismatch and left, say), and a blocking send would
      // retry until WEFT_TIMEOUT_MS without the executor ever looking at that peer's report.
      const int64_t leftMs = (deadlineNs_ - nowNs()) / 1000000;
      const int64_t attemptMs = std::max<int64_t>(1, std::min(kHandleAttemptMs, leftMs));
      if (spec_.bootstrap->sendWithin(peer, handshakeTag(), handle_, sizeof handle_, attemptMs, &lastSendFailure_) !=
          ncclSuccess)
        break;
      state_ = State::kAccepting;  // accept() is tried from the next call on
      break;
    }
    case State::kAwaitHandle: {
      bool got = false;
      std::string detail;
      if ((r = spec_.bootstrap->tryRecv(peer, handshakeTag(), handle_, sizeof handle_, &got, &detail)) != ncclSuccess)
        return fail(r, "receiving the connection handle failed: " + detail);
      if (!got) break;
      state_ = State::kConnecting;
      [[fallthrough]];
    }
    case State::kConnecting: {
      void* comm = nullptr;
      if ((r = spec_.network->connect(spec_.device, handle_, &comm)) != ncclSuccess)
        return fail(r, std::string("connect over ") + spec_.network->name() + " failed");
      if (comm != nullptr) {
        r = finish(comm, view, why);
        *ready = r == ncclSuccess;
        return r;
      }
      break;
    }
    case State::kAccepting: {
      void* comm = nullptr;
      if ((r = spec_.network->accept(listenComm_, &comm)) != ncclSuccess)
        return fail(r, std::string("accept over ") + spec_.network->name() + " failed");
      if (comm != nullptr) {
        (void)spec_.network->closeListen(listenComm_);
        listenComm_ = nullptr;
        r = finish(comm, view, why);
        *ready = r == ncclSuccess;
        return r;
      }
      break;
    }
    default: break;
  }
  if (nowNs() > deadlineNs_) return fail(ncclRemoteError, pendingText(peer));
  return ncclSuccess;
}

// What the handshake still waits for, once it has waited WEFT_TIMEOUT_MS.
std::string NetConnection::pendingText(int peer) const {
  const std::string rank = "rank " + std::to_string(peer);
  const std::string within = " within " + std::to_string(spec_.timeoutMs) + " ms (WEFT_TIMEOUT_MS)";
  const std::string net = spec_.network->name();
  switch (state_) {
    case State::kSendHandle:
      return "sending the connection handle to " + rank + " has not succeeded" + within + ": " + lastSendFailure_;
    case State::kAwaitHandle: return "no connection handle arrived from " + rank + within;
    case State::kConnecting:
      return "the " + net + " network's connect() has not completed within " + std::to_string(spec_.timeoutMs) +
             " ms (WEFT_TIMEOUT_MS; the handle from " + rank + " arrived, the peer has not accepted)";
    default: return "the " + net + " network's accept() has had no connection from " + rank + within;
  }
}

// The network connection is up: allocate and register the local FIFO, hand the link to the proxy.
ncclResult_t NetConnection::finish(void* comm, FifoView* view, std::string* why) {
  comm_ = comm;
  const FifoLayout layout = FifoLayout::forGeometry(spec_.nslots, spec_.slotBytes);
  memBytes_ = (layout.totalBytes + 4095) & ~size_t(4095);
  mem_ = static_cast<unsigned char*>(aligned_alloc(4096, memBytes_));
  if (mem_ == nullptr) {
    *why = "network link " + spec_.id.describe() + ": cannot allocate " + std::to_string(memBytes_) + " bytes";
    return ncclSystemError;
  }
  memset(mem_, 0, memBytes_);
  publishOwnedBytes(memBytes_);
  void* mh = nullptr;
  ncclResult_t r = spec_.network->regMr(comm_, mem_, memBytes_, net::kPtrHost, &mh);
  if (r != ncclSuccess) {
    *why = "network link " + spec_.id.describe() + ": registering " + std::to_string(memBytes_) + " bytes with " +
           spec_.network->name() + " failed";
    return r;
  }
  auto link = std::make_shared<net::NetLink>();
  link->network = spec_.network;
  link->comm = comm_;
  link->mhandle = mh;
  link->isSender = spec_.isSender;
  link->fifo = FifoView::at(mem_, spec_.nslots, spec_.slotBytes);
  link->ownerBell = spec_.ownerBell;
  link->what = "network link " + spec_.id.describe() + " (rank " +
               std::to_string(spec_.isSender ? spec_.id.receiverRank : spec_.id.senderRank) + " on host " +
               spec_.peerHost + ")";
  link->drainTimeoutMs = spec_.timeoutMs;
  link->traceRank = spec_.traceRank;
  link->peer = spec_.isSender ? spec_.id.receiverRank : spec_.id.senderRank;
  link->deliver = spec_.deliver;
  if (spec_.proxyProfile != nullptr && !spec_.deliver) {
    link->profile = spec_.proxyProfile;
    link->profileLink = spec_.proxyProfile->addLink(static_cast<int>(spec_.id.lane), spec_.id.channel, link->peer,
                                                    spec_.isSender,
                                                    static_cast<int>(spec_.slotBytes - kNetTrailerBytes));
  }
  *view = link->fifo;
  comm_ = nullptr;  // the proxy owns it now
  bool shutDown = false;
  {
    std::lock_guard<std::mutex> lock(linkMutex_);
    link_ = link;
    shutDown = shutDown_;
  }
  net::Proxy::instance().add(link_);
  // An abort from another thread came while this link was being set up: it goes down with the rest.
  if (shutDown) net::Proxy::instance().shutdown(link_);
  WEFT_INFO(kLogNet, "%s connected over %s (%u slots x %u bytes)", link_->what.c_str(), spec_.network->name(),
            spec_.nslots, spec_.slotBytes);
  state_ = State::kReady;
  return ncclSuccess;
}

}  // namespace weft
