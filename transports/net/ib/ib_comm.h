// One IB network connection (a send or a receive comm): its reliable-connected QPs, completion
// queue, the FIFO through which the receiver advertises its buffers, the requests in flight, and
// the TCP side channel kept open to see the peer go away.
//
// The data path: irecv posts a receive work request per QP the message will use, then RDMA-writes
// a FIFO entry (buffer address, rkey, size, sequence) into the sender's FIFO. isend waits for the
// entry of its sequence number, RDMA-writes the data straight into the receiver's buffer with an
// immediate carrying the size, and the receiver's completion of that write ends its request. So
// the data moves once, with no copy and no receive-side CPU work until completion.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"
#include "sockets/socket.h"
#include "transports/net/ib/ib_devices.h"

namespace weft::net::ib {

constexpr int kDepth = 32;   // requests in flight per comm (NCCL_NET_MAX_REQUESTS)
constexpr int kMaxQps = 12;  // NCCL_IB_QPS_PER_CONNECTION's limit: the handle holds them all
constexpr int kWantInline = 64;

// One FIFO entry, written by the receiver into the sender's memory.
struct FifoEntry {
  uint64_t addr;
  uint32_t rkey;
  uint32_t size;
  uint64_t seq;  // the sequence number plus one: zero means never written
  uint64_t unused;
};
static_assert(sizeof(FifoEntry) == 32, "FIFO entries are written with one RDMA write each");

// One side's QPs as the other needs them to connect. The receiver's travels in the listen handle
// (the receiver creates its QPs in listen), the sender's over the side channel, so that connect
// completes without waiting for the receiver's accept.
struct QpInfo {
  uint32_t magic;
  uint32_t version;
  uint32_t nqps;
  uint32_t split;  // NCCL_IB_SPLIT_DATA_ON_QPS of the receiver: the sender follows it
  uint64_t token;  // the listen handle's random token, echoed by the sender
  uint32_t qpn[kMaxQps];
  uint32_t psn;
  uint8_t gid[16];
  uint16_t lid;
  uint8_t linkLayer;
  uint8_t mtu;  // enum ibv_mtu
  uint64_t fifoAddr;
  uint32_t fifoRkey;
  uint32_t reserved;
};
constexpr uint32_t kQpInfoMagic = 0x57494251;  // "WIBQ"
constexpr uint32_t kQpInfoVersion = 1;

class Comm;

struct Request {
  Comm* comm = nullptr;
  bool used = false;
  int partsLeft = 0;
  size_t size = 0;
  Registration* reg = nullptr;  // kept registered until the request completes
};

class Comm {
 public:
  Comm(bool isSend, Device* dev, std::string peer) : isSend_(isSend), dev_(dev), peer_(std::move(peer)) {}
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  // Creates the CQ, nqps QPs in INIT and the registered FIFO, and fills *mine.
  ncclResult_t create(int nqps, bool split, QpInfo* mine);
  // Moves every QP to RTR then RTS against the peer's QpInfo.
  ncclResult_t connectTo(const QpInfo& peer);
  void adoptSideChannel(Socket sock) { side_ = std::move(sock); }

  bool isSend() const { return isSend_; }
  Device* device() const { return dev_; }
  const std::string& peer() const { return peer_; }
  void setPeer(std::string peer) { peer_ = std::move(peer); }
  int qpCount() const { return int(qps_.size()); }

  ncclResult_t isend(void* data, size_t size, Registration* reg, Request** out);
  ncclResult_t irecv(void* data, size_t size, Registration* reg, Request** out);
  ncclResult_t test(Request* r, int* done, size_t* size);

 private:
  ncclResult_t fail(ncclResult_t code, const std::string& what);
  ncclResult_t poll();
  ncclResult_t checkPeer();
  ncclResult_t post(ibv_qp* qp, ibv_send_wr* wr, const char* what);

  const bool isSend_;
  Device* const dev_;
  std::string peer_;  // the side channel's address at the other end
  int nqps_ = 1;
  bool split_ = false;
  int maxInline_ = 0;
  ibv_cq* cq_ = nullptr;
  std::vector<ibv_qp*> qps_;
  uint32_t psn_ = 0;
  Socket side_;
  uint64_t seq_ = 0;
  Request requests_[kDepth];
  // Sender: the FIFO the receiver writes. Receiver: where its entries are staged when they cannot
  // go inline, and the address of the sender's FIFO.
  FifoEntry* fifo_ = nullptr;
  Registration* fifoReg_ = nullptr;
  uint64_t remoteFifo_ = 0;
  uint32_t remoteRkey_ = 0;
  std::string failure_;
  int64_t nextPeerCheckNs_ = 0;
};

}  // namespace weft::net::ib
