// In-memory links and staging areas for the host executor's stepping core
// (src/host_executor/chain_runner.h), so that unit tests run every rank's real executor in one
// thread: a FIFO per (lane, channel, sender, receiver) with as few slots as a test asks for (tiny
// FIFOs are what expose a schedule that needs more room than its peer can free), and every rank's
// direct-lane staging data and arrival counter in plain memory. Nothing here moves data or
// decides anything the executor does; it only stands in for shared memory. Links are connected
// from the start, or, on request, set up by the handshake of a network whose connect completes
// only after the peer's accept (MemHandshake).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "host_executor/direct_exec.h"
#include "host_executor/step_link.h"
#include "program/program.h"
#include "transports/fifo.h"

namespace weft::sim {

// One link's FIFO: nSlots slots of slotBytes, each holding one message, its size and the
// sender's stamp. Messages are written in place, as into a shared-memory slot.
class MemFifo {
 public:
  MemFifo(uint32_t nSlots, uint32_t slotBytes)
      : nSlots_(nSlots), slotBytes_(slotBytes), data_(size_t(nSlots) * slotBytes), sizes_(nSlots), stamps_(nSlots) {}
  bool empty() const { return head_ == tail_; }
  bool full() const { return tail_ - head_ >= nSlots_; }
  uint64_t used() const { return tail_ - head_; }
  uint32_t slots() const { return uint32_t(nSlots_); }
  void* back() { return slot(tail_); }
  void push(size_t bytes, const OpStamp& stamp) {
    sizes_[tail_ % nSlots_] = bytes;
    stamps_[tail_ % nSlots_] = stamp;
    ++tail_;
  }
  const void* front(size_t* bytes) const {
    *bytes = sizes_[head_ % nSlots_];
    return slot(head_);
  }
  const OpStamp& frontStamp() const { return stamps_[head_ % nSlots_]; }
  void pop() { ++head_; }

 private:
  unsigned char* slot(uint64_t i) const {
    return const_cast<unsigned char*>(data_.data()) + (i % nSlots_) * slotBytes_;
  }
  uint64_t nSlots_, slotBytes_;
  std::vector<unsigned char> data_;
  std::vector<size_t> sizes_;
  std::vector<OpStamp> stamps_;
  uint64_t head_ = 0, tail_ = 0;
};

// The setup of one link over a network like aws-ofi-nccl's, where connect completes only after
// the peer's accept has taken the connection: the receiver's first try listens and hands its
// handle over, the sender's first try after that starts connecting, the receiver's next try
// after that accepts, and only the sender's next try after the accept completes. Each of those
// moves counts as an event (progress for the deadlock check) though no message moves.
class MemHandshake {
 public:
  explicit MemHandshake(uint64_t* events) : events_(events) {}
  bool accept() {
    if (!listened_) {
      note(listened_);
      return false;
    }
    if (connecting_ && !accepted_) note(accepted_);
    return accepted_;
  }
  bool connect() {
    if (!listened_) return false;  // no handle yet
    if (!connecting_) {
      note(connecting_);
      return false;
    }
    return accepted_;
  }

 private:
  void note(bool& flag) {
    flag = true;
    ++*events_;
  }
  uint64_t* events_;
  bool listened_ = false, connecting_ = false, accepted_ = false;
};

// One side of a MemFifo, as the stepping core uses a link (step_link.h). Connected from the start
// unless it has a handshake to go through.
class MemLink {
 public:
  MemLink(MemFifo* fifo, int peer, uint64_t* messages, MemHandshake* handshake = nullptr, bool sender = false)
      : fifo_(fifo), peer_(peer), messages_(messages), handshake_(handshake), sender_(sender) {}
  ncclResult_t tryConnect(bool* ready, std::string*) {
    if (!connected_) connected_ = sender_ ? handshake_->connect() : handshake_->accept();
    *ready = connected_;
    return ncclSuccess;
  }
  bool connected() const { return connected_; }
  int peer() const { return peer_; }
  bool canSend(size_t) { return !fifo_->full(); }  // every message takes one of the few slots
  bool canSend() { return !fifo_->full(); }
  void* sendBuffer(size_t) { return fifo_->back(); }
  void publish(size_t bytes, const OpStamp& stamp) {
    fifo_->push(bytes, stamp);
    ++*messages_;
  }
  bool canRecv() const { return !fifo_->empty(); }
  const void* recvBuffer(size_t* bytes) const { return fifo_->front(bytes); }
  const OpStamp& recvStamp() const { return fifo_->frontStamp(); }
  void release() { fifo_->pop(); }

 private:
  MemFifo* fifo_;
  int peer_;
  uint64_t* messages_;
  MemHandshake* handshake_;
  bool sender_;
  bool connected_ = handshake_ == nullptr;
};
static_assert(StepLink<MemLink>);

// Everything the ranks share: the FIFOs, made on first use by either side, and the staging areas.
class MemNetwork {
 public:
  using LinkKey = std::tuple<int, int, int, int>;  // lane, channel, sender, receiver

  // acceptFirst: every link goes through a MemHandshake before it carries messages.
  MemNetwork(int nranks, uint32_t nSlots, uint32_t slotBytes, size_t stagingBytes, bool acceptFirst = false)
      : nranks_(nranks), nSlots_(nSlots), slotBytes_(slotBytes), stagingBytes_(stagingBytes),
        acceptFirst_(acceptFirst) {}

  // The side of the (lane, channel, sender -> receiver) FIFO that `rank` uses.
  MemLink* endpoint(Lane lane, int channel, int sender, int receiver, int rank) {
    const LinkKey key{int(lane), channel, sender, receiver};
    auto f = fifos_.find(key);
    if (f == fifos_.end()) f = fifos_.emplace(key, std::make_unique<MemFifo>(nSlots_, slotBytes_)).first;
    MemHandshake* handshake = nullptr;
    if (acceptFirst_) {
      auto h = handshakes_.find(key);
      if (h == handshakes_.end()) h = handshakes_.emplace(key, std::make_unique<MemHandshake>(&events_)).first;
      handshake = h->second.get();
    }
    auto e = ends_.find({key, rank == sender});
    if (e == ends_.end())
      e = ends_
              .emplace(std::make_pair(key, rank == sender),
                       std::make_unique<MemLink>(f->second.get(), rank == sender ? receiver : sender, &messages_,
                                                 handshake, rank == sender))
              .first;
    return e->second.get();
  }
  const std::map<LinkKey, std::unique_ptr<MemFifo>>& fifos() const { return fifos_; }
  uint64_t messages() const { return messages_; }
  uint64_t handshakeEvents() const { return events_; }

  // Every rank's staging data (filled with a pattern no result has) and arrival counter, made on
  // the first direct step: programs of the other lanes never pay for them.
  DirectView directView(int rank) {
    if (data_.empty()) {
      arrived_ = std::make_unique<std::atomic<uint64_t>[]>(nranks_);
      stamps_.assign(size_t(nranks_) * 2, OpStamp{});
      inputs_.assign(size_t(nranks_) * 2, 0);
      for (int r = 0; r < nranks_; ++r) {
        staging_.emplace_back(stagingBytes_ / 8 + 1, 0xdeadbeefdeadbeefull);
        data_.push_back(reinterpret_cast<unsigned char*>(staging_.back().data()));
        arrived_[r].store(0);
        arrivedPtrs_.push_back(&arrived_[r]);
        stampPtrs_.push_back(&stamps_[size_t(r) * 2]);
        inputPtrs_.push_back(&inputs_[size_t(r) * 2]);
      }
    }
    return DirectView{rank, nranks_, data_.data(), arrivedPtrs_.data(), stampPtrs_.data(), inputPtrs_.data()};
  }

 private:
  int nranks_;
  uint32_t nSlots_, slotBytes_;
  size_t stagingBytes_;
  bool acceptFirst_;
  std::map<LinkKey, std::unique_ptr<MemFifo>> fifos_;
  std::map<LinkKey, std::unique_ptr<MemHandshake>> handshakes_;
  std::map<std::pair<LinkKey, bool>, std::unique_ptr<MemLink>> ends_;
  uint64_t messages_ = 0, events_ = 0;
  std::vector<std::vector<uint64_t>> staging_;
  std::vector<unsigned char*> data_;
  std::unique_ptr<std::atomic<uint64_t>[]> arrived_;
  std::vector<std::atomic<uint64_t>*> arrivedPtrs_;
  std::vector<OpStamp> stamps_;  // two per rank, as in DirectHeader::stamps
  std::vector<OpStamp*> stampPtrs_;
  std::vector<uint64_t> inputs_;  // two per rank, as in DirectHeader::inputs
  std::vector<uint64_t*> inputPtrs_;
};

// One rank's view of the network: the fabric its stepping core runs over (step_link.h).
class MemFabric {
 public:
  using Link = MemLink;
  MemFabric(MemNetwork* net, int rank) : net_(net), rank_(rank) {}
  MemLink* link(ncclComm*, const Sequence& s, int peer, bool sender) {
    return net_->endpoint(s.lane, s.channel, sender ? rank_ : peer, sender ? peer : rank_, rank_);
  }
  // One communicator per rank here, so one list.
  std::vector<MemLink*>& handshakes(ncclComm*) { return handshakes_; }
  // The executor's own direct step over the areas; peers need no waking, they are polled.
  DirectProgress direct(const Task& t, const Step& st, size_t* phase, std::string* why) {
    return stepDirect(t, st, net_->directView(rank_), phase, why, [](ncclComm*) {});
  }
  std::string describeDirect(const Task&, const Step&, size_t, std::vector<int>* waitingOn) {
    return describeDirectBarrier(net_->directView(rank_), waitingOn);
  }

 private:
  MemNetwork* net_;
  int rank_;
  std::vector<MemLink*> handshakes_;
};
static_assert(StepFabric<MemFabric>);

}  // namespace weft::sim
