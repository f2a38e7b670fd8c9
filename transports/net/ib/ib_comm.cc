// The IB network's data path: QP setup, isend/irecv through the receiver-written FIFO, and
// completion polling with failure detection.
#include "transports/net/ib/ib_comm.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/clock.h"
#include "base/log.h"
#include "base/params.h"
#include "sockets/random.h"
#include "transports/net/network.h"

namespace weft::net::ib {

namespace {

constexpr uint64_t kFifoWrite = 1ull << 32;  // wr_id flag: a FIFO entry write (receiver side)
constexpr int64_t kPeerCheckIntervalNs = 20 * 1000 * 1000;
constexpr size_t kFifoBytes = 4096;  // one page: aligned_alloc needs a multiple of the alignment

const VerbsLibrary& verbs() {
  std::string why;
  return *loadVerbs(&why);  // comms exist only when the library loaded
}

}  // namespace

Comm::~Comm() {
  const VerbsLibrary& v = verbs();
  for (ibv_qp* qp : qps_) (void)v.destroyQp(qp);
  // Requests still in flight are abandoned with their QPs: their memory may go.
  for (Request& r : requests_)
    if (r.used) endUse(r.reg);
  if (cq_ != nullptr) (void)v.destroyCq(cq_);
  releaseMemory(fifoReg_);
  std::free(fifo_);
}

ncclResult_t Comm::fail(ncclResult_t code, const std::string& what) {
  if (failure_.empty()) {
    failure_ = std::string("IB connection ") + (isSend_ ? "to " : "from ") + peer_ + " on " + dev_->label() + ": " +
               what;
    // A peer closing is how every connection ends when a job finishes: not a warning by itself.
    // The layer above reports it if an operation needed the connection.
    if (code == ncclRemoteError && what.rfind("the peer closed", 0) == 0)
      WEFT_INFO(kLogNet, "%s", failure_.c_str());
    else
      WEFT_WARN("%s", failure_.c_str());
  }
  setFailureDetail(failure_);
  return code;
}

ncclResult_t Comm::create(int nqps, bool split, QpInfo* mine) {
  const VerbsLibrary& v = verbs();
  nqps_ = nqps;
  split_ = split;
  int cqe = kDepth * (nqps + 1) * 2;
  cq_ = v.createCq(dev_->context, cqe, nullptr, nullptr, 0);
  if (cq_ == nullptr) return fail(ncclSystemError, std::string("ibv_create_cq failed: ") + strerror(errno));
  if (!randomBytes(&psn_, sizeof(psn_))) psn_ = uint32_t(nowNs());
  psn_ &= 0xffffff;
  memset(mine, 0, sizeof(*mine));
  mine->magic = kQpInfoMagic;
  mine->version = kQpInfoVersion;
  mine->nqps = uint32_t(nqps);
  mine->split = split ? 1 : 0;
  mine->psn = psn_;
  memcpy(mine->gid, dev_->gid.raw, 16);
  mine->lid = dev_->portAttr.lid;
  mine->linkLayer = uint8_t(dev_->linkLayer);
  mine->mtu = uint8_t(dev_->portAttr.active_mtu);
  for (int i = 0; i < nqps; ++i) {
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = cq_;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = kDepth * 2;
    init.cap.max_recv_wr = kDepth * 2;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    init.cap.max_inline_data = kWantInline;
    ibv_qp* qp = v.createQp(dev_->pd, &init);
    if (qp == nullptr) {  // some providers take no inline data
      init.cap.max_inline_data = 0;
      qp = v.createQp(dev_->pd, &init);
    }
    if (qp == nullptr) return fail(ncclSystemError, std::string("ibv_create_qp failed: ") + strerror(errno));
    qps_.push_back(qp);
    maxInline_ = int(init.cap.max_inline_data);
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = uint8_t(dev_->port);
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    if (v.modifyQp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0)
      return fail(ncclSystemError, std::string("moving a QP to INIT failed: ") + strerror(errno));
    mine->qpn[i] = qp->qp_num;
  }
  // The sender's FIFO (written remotely); the receiver's staging copy of the entries it writes.
  static_assert(sizeof(FifoEntry) * kDepth <= kFifoBytes, "the FIFO fits its page");
  fifo_ = static_cast<FifoEntry*>(std::aligned_alloc(kFifoBytes, kFifoBytes));
  if (fifo_ == nullptr) return fail(ncclSystemError, "out of memory for the FIFO");
  memset(fifo_, 0, kFifoBytes);
  if (ncclResult_t r = registerMemory(dev_, fifo_, sizeof(FifoEntry) * kDepth, &fifoReg_); r != ncclSuccess)
    return fail(r, "registering the FIFO failed");
  if (isSend_) {
    mine->fifoAddr = reinterpret_cast<uintptr_t>(fifo_);
    mine->fifoRkey = fifoReg_->mr->rkey;
  }
  for (Request& r : requests_) r.comm = this;
  return ncclSuccess;
}

ncclResult_t Comm::connectTo(const QpInfo& peer) {
  const VerbsLibrary& v = verbs();
  if (!isSend_) {
    remoteFifo_ = peer.fifoAddr;
    remoteRkey_ = peer.fifoRkey;
  }
  ibv_mtu mtu = std::min(dev_->portAttr.active_mtu, ibv_mtu(peer.mtu));
  for (int i = 0; i < nqps_; ++i) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = mtu;
    a.dest_qp_num = peer.qpn[i];
    a.rq_psn = peer.psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.port_num = uint8_t(dev_->port);
    a.ah_attr.sl = uint8_t(param::ibSl());
    if (peer.linkLayer == IBV_LINK_LAYER_ETHERNET) {
      a.ah_attr.is_global = 1;
      memcpy(a.ah_attr.grh.dgid.raw, peer.gid, 16);
      a.ah_attr.grh.sgid_index = uint8_t(dev_->gidIndex);
      a.ah_attr.grh.hop_limit = 255;
      a.ah_attr.grh.traffic_class = uint8_t(param::ibTc());
    } else {
      a.ah_attr.dlid = peer.lid;
    }
    int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
               IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    if (int e = v.modifyQp(qps_[size_t(i)], &a, mask); e != 0)
      return fail(ncclSystemError, std::string("moving a QP to RTR failed: ") + strerror(e) +
                                       " (check NCCL_IB_GID_INDEX and that the peer is reachable)");
    ibv_qp_attr s{};
    s.qp_state = IBV_QPS_RTS;
    s.timeout = uint8_t(param::ibTimeout());
    s.retry_cnt = uint8_t(param::ibRetryCnt());
    s.rnr_retry = 7;
    s.sq_psn = psn_;
    s.max_rd_atomic = 1;
    mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
           IBV_QP_MAX_QP_RD_ATOMIC;
    if (int e = v.modifyQp(qps_[size_t(i)], &s, mask); e != 0)
      return fail(ncclSystemError, std::string("moving a QP to RTS failed: ") + strerror(e));
  }
  return ncclSuccess;
}

ncclResult_t Comm::post(ibv_qp* qp, ibv_send_wr* wr, const char* what) {
  ibv_send_wr* bad = nullptr;
  if (int e = ibv_post_send(qp, wr, &bad); e != 0)
    return fail(ncclSystemError, std::string("posting ") + what + " failed: " + strerror(e));
  return ncclSuccess;
}

ncclResult_t Comm::isend(void* data, size_t size, Registration* reg, Request** out) {
  *out = nullptr;
  if (!failure_.empty()) return fail(ncclRemoteError, failure_);
  const int idx = int(seq_ % kDepth);
  Request& r = requests_[idx];
  if (r.used) return ncclSuccess;
  volatile FifoEntry* e = &fifo_[idx];
  if (e->seq != seq_ + 1) return checkPeer();  // the receiver has not posted this one yet
  std::atomic_thread_fence(std::memory_order_acquire);
  const uint64_t raddr = e->addr;
  const uint32_t rkey = e->rkey, rsize = e->size;
  if (size > rsize)
    return fail(ncclInvalidUsage, "a message of " + std::to_string(size) +
                                      " bytes is larger than the receive buffer (" + std::to_string(rsize) + " bytes)");
  const int parts = split_ ? nqps_ : 1;
  const size_t chunk = (size + size_t(parts) - 1) / size_t(parts);
  for (int p = 0; p < parts; ++p) {
    size_t off = std::min(size, chunk * size_t(p));
    size_t len = std::min(chunk, size - off);
    if (len > uint32_t(maxInline_) && reg == nullptr)
      return fail(ncclInvalidArgument, "isend of unregistered memory (no memory handle)");
    ibv_sge sge{};
    sge.addr = reinterpret_cast<uintptr_t>(data) + off;
    sge.length = uint32_t(len);
    sge.lkey = reg != nullptr ? reg->mr->lkey : 0;
    ibv_send_wr wr{};
    wr.wr_id = uint64_t(idx);
    wr.sg_list = len > 0 ? &sge : nullptr;
    wr.num_sge = len > 0 ? 1 : 0;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.imm_data = htonl(uint32_t(size));
    wr.send_flags = IBV_SEND_SIGNALED | (len <= uint32_t(maxInline_) ? IBV_SEND_INLINE : 0);
    wr.wr.rdma.remote_addr = raddr + off;
    wr.wr.rdma.rkey = rkey;
    ibv_qp* qp = qps_[size_t(split_ ? p : int(seq_ % uint64_t(nqps_)))];
    if (ncclResult_t res = post(qp, &wr, "an RDMA write"); res != ncclSuccess) return res;
  }
  r.used = true;
  r.partsLeft = parts;
  r.size = size;
  r.reg = reg;
  beginUse(reg);
  ++seq_;
  *out = &r;
  return ncclSuccess;
}

ncclResult_t Comm::irecv(void* data, size_t size, Registration* reg, Request** out) {
  *out = nullptr;
  if (!failure_.empty()) return fail(ncclRemoteError, failure_);
  const int idx = int(seq_ % kDepth);
  Request& r = requests_[idx];
  if (r.used) return ncclSuccess;
  if (size > 0 && reg == nullptr) return fail(ncclInvalidArgument, "irecv into unregistered memory (no memory handle)");
  const int parts = split_ ? nqps_ : 1;
  // The receives first: the sender may write as soon as it sees the FIFO entry.
  for (int p = 0; p < parts; ++p) {
    ibv_recv_wr wr{};
    wr.wr_id = uint64_t(idx);
    ibv_recv_wr* bad = nullptr;
    ibv_qp* qp = qps_[size_t(split_ ? p : int(seq_ % uint64_t(nqps_)))];
    if (int e = ibv_post_recv(qp, &wr, &bad); e != 0)
      return fail(ncclSystemError, std::string("posting a receive failed: ") + strerror(e));
  }
  FifoEntry& entry = fifo_[idx];
  entry.addr = reinterpret_cast<uintptr_t>(data);
  entry.rkey = reg != nullptr ? reg->mr->rkey : 0;
  entry.size = uint32_t(std::min<size_t>(size, UINT32_MAX));
  entry.seq = seq_ + 1;
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(&entry);
  sge.length = sizeof(FifoEntry);
  sge.lkey = fifoReg_->mr->lkey;
  ibv_send_wr wr{};
  wr.wr_id = kFifoWrite | uint64_t(idx);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED | (maxInline_ >= int(sizeof(FifoEntry)) ? IBV_SEND_INLINE : 0);
  wr.wr.rdma.remote_addr = remoteFifo_ + uint64_t(idx) * sizeof(FifoEntry);
  wr.wr.rdma.rkey = remoteRkey_;
  if (ncclResult_t res = post(qps_[0], &wr, "a FIFO entry write"); res != ncclSuccess) return res;
  r.used = true;
  r.partsLeft = parts;
  r.size = 0;
  r.reg = reg;
  beginUse(reg);
  ++seq_;
  *out = &r;
  return ncclSuccess;
}

ncclResult_t Comm::poll() {
  ibv_wc wcs[16];
  for (;;) {
    int n = ibv_poll_cq(cq_, 16, wcs);
    if (n < 0) return fail(ncclSystemError, "polling the completion queue failed");
    for (int i = 0; i < n; ++i) {
      const ibv_wc& wc = wcs[i];
      if (wc.status != IBV_WC_SUCCESS) {
        const char* what = (wc.wr_id & kFifoWrite) ? "a FIFO entry write" : isSend_ ? "an RDMA write" : "a receive";
        // Retry and RNR exhaustion mean the peer stopped answering: a remote failure.
        ncclResult_t code = (wc.status == IBV_WC_RETRY_EXC_ERR || wc.status == IBV_WC_RNR_RETRY_EXC_ERR ||
                             wc.status == IBV_WC_REM_ACCESS_ERR || wc.status == IBV_WC_REM_OP_ERR ||
                             wc.status == IBV_WC_REM_INV_REQ_ERR)
                                ? ncclRemoteError
                                : ncclSystemError;
        return fail(
            code, std::string(what) + " completed with " + verbs().wcStatusStr(wc.status) + " (status " +
                      std::to_string(int(wc.status)) + ", vendor error 0x" +
                      [&] {
                        char b[16];
                        snprintf(b, sizeof(b), "%x", wc.vendor_err);
                        return std::string(b);
                      }() +
                      ")");
      }
      if (wc.wr_id & kFifoWrite) continue;
      Request& r = requests_[wc.wr_id % kDepth];
      if (!r.used || r.partsLeft <= 0) return fail(ncclInternalError, "a completion for no request in flight");
      if (!isSend_) r.size = ntohl(wc.imm_data);
      --r.partsLeft;
    }
    if (n < 16) return ncclSuccess;
  }
}

// The peer's process or host going away: its side channel closes (or keepalive fails), and the
// device may report the port or the QP broken.
ncclResult_t Comm::checkPeer() {
  int64_t now = nowNs();
  if (now < nextPeerCheckNs_) return ncclSuccess;
  nextPeerCheckNs_ = now + kPeerCheckIntervalNs;
  for (ibv_qp* qp : qps_) {
    std::string async = asyncFailure(dev_, qp->qp_num);
    if (!async.empty()) return fail(ncclSystemError, "asynchronous event: " + async);
  }
  if (!side_.valid()) return ncclSuccess;
  char byte = 0;
  ssize_t n = side_.tryRecv(&byte, 1);
  if (n == 0) return fail(ncclRemoteError, "the peer closed the connection (its process ended or closed it)");
  if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
    return fail(ncclRemoteError, "the peer's side channel failed: " + side_.errorText(errno));
  if (n > 0) return fail(ncclRemoteError, "unexpected bytes on the side channel");
  return ncclSuccess;
}

ncclResult_t Comm::test(Request* r, int* done, size_t* size) {
  *done = 0;
  if (ncclResult_t res = poll(); res != ncclSuccess) return res;
  if (r->partsLeft == 0) {
    *done = 1;
    if (size != nullptr) *size = r->size;
    r->used = false;
    endUse(r->reg);
    r->reg = nullptr;
    return ncclSuccess;
  }
  if (!failure_.empty()) return fail(ncclRemoteError, failure_);
  return checkPeer();
}

}  // namespace weft::net::ib
