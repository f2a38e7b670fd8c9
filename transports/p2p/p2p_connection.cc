#include "transports/p2p/p2p_connection.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "transports/p2p/device_share.h"

namespace weft {
namespace {

constexpr uint64_t kRendezvousMagic = 0x5745465450325030ull;  // "WEFTP2P0"

std::string rendezvousName(const ConnectionId& id) { return id.shmName() + "-p2p"; }

}  // namespace

// In read mode the receiver reads this FIFO, and writes its consumed count into it, after the
// sender's last kernel has ended; freeing it before the receiver caught up would pull memory from
// under the peer's kernel. (In write mode the owner is the receiver, the last to touch the FIFO.)
// So the sending owner waits, bounded, until every message it sent was consumed. The flags are
// read on a private non-blocking stream: a legacy-stream copy could wait for the very kernel of a
// peer rank that shares this GPU.
void P2pConnection::waitForReader() {
  if (!spec_.readMode || !spec_.isSender || abandoned_) return;
  dev::Runtime& rt = dev::runtime();
  const FifoLayout l = FifoLayout::forGeometry(spec_.nslots, spec_.slotBytes);
  std::vector<unsigned char> lines(l.dataOffset - l.headOffset);
  void* stream = nullptr;
  if (rt.streamCreate(&stream) != ncclSuccess) return;
  const int64_t deadline = nowNs() + spec_.drainTimeoutMs * 1000000;
  for (;;) {
    if (rt.copyAsync(lines.data(), static_cast<char*>(fifo_) + l.headOffset, lines.size(), stream) != ncclSuccess ||
        rt.streamSynchronize(stream) != ncclSuccess)
      break;
    uint64_t consumed = 0, sent = 0;
    memcpy(&consumed, lines.data(), sizeof consumed);
    for (uint32_t i = 0; i < spec_.nslots; ++i) {
      uint64_t seq = 0;
      memcpy(&seq, lines.data() + (l.slotsOffset - l.headOffset) + i * sizeof(SlotHeader), sizeof seq);
      sent = std::max(sent, seq);  // slot flags hold n+1 for the n-th message
    }
    if (consumed >= sent) break;
    if (nowNs() > deadline) {
      WEFT_WARN("%s: the receiver consumed %llu of %llu messages before the P2P FIFO was freed",
                spec_.id.describe().c_str(), static_cast<unsigned long long>(consumed),
                static_cast<unsigned long long>(sent));
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  rt.streamDestroy(stream);
}

P2pConnection::~P2pConnection() {
  if (fifo_ == nullptr) return;
  dev::Runtime& rt = dev::runtime();
  waitForReader();
  if (owner())
    rt.deviceFree(fifo_);
  else if (ipcMapped_)
    rt.ipcClose(fifo_);
}

ncclResult_t P2pConnection::tryConnect(FifoView* view, bool* ready, std::string* why) {
  *ready = false;
  if (owner()) {
    ncclResult_t r = create(view, why);
    *ready = r == ncclSuccess;
    return r;
  }
  return attach(view, ready, why);
}

// The owner allocates the FIFO (zero-filled: every slot's flag says "nothing yet"), then publishes
// where it is. It is ready at once; the other side attaches whenever it gets there.
ncclResult_t P2pConnection::create(FifoView* view, std::string* why) {
  dev::Runtime& rt = dev::runtime();
  const FifoLayout l = FifoLayout::forGeometry(spec_.nslots, spec_.slotBytes);
  fifoBytes_ = l.totalBytes;
  if (rt.deviceAlloc(&fifo_, fifoBytes_) != ncclSuccess) {
    *why = "cannot allocate " + std::to_string(fifoBytes_) + " bytes of GPU memory for the P2P FIFO of " +
           spec_.id.describe();
    fifo_ = nullptr;
    return ncclUnhandledCudaError;
  }
  publishOwnedBytes(fifoBytes_);
  ncclResult_t r = publishDeviceMemory(rendezvous_, rendezvousName(spec_.id), 1, kRendezvousMagic, fifo_, spec_.device,
                                       fifoBytes_, spec_.nslots, spec_.slotBytes,
                                       "the P2P FIFO of " + spec_.id.describe(), why);
  if (r != ncclSuccess) return r;
  *view = FifoView::at(fifo_, spec_.nslots, spec_.slotBytes);
  WEFT_INFO(kLogP2P, "P2P FIFO of %s in GPU %d memory (%u slots x %u bytes, %s mode)", spec_.id.describe().c_str(),
            spec_.device, spec_.nslots, spec_.slotBytes, spec_.readMode ? "read" : "write");
  return ncclSuccess;
}

ncclResult_t P2pConnection::attach(FifoView* view, bool* ready, std::string* why) {
  const std::string what = "the peer's P2P FIFO for " + spec_.id.describe();
  const DeviceShareRecord* rv = nullptr;
  ncclResult_t r = tryFetchDeviceShare(rendezvous_, rendezvousName(spec_.id), kRendezvousMagic, &rv, what, why);
  if (r != ncclSuccess || rv == nullptr) return r;
  r = mapDeviceShare(*rv, spec_.device, &fifo_, &ipcMapped_, what, why);
  if (r != ncclSuccess) {
    fifo_ = nullptr;
    return r;
  }
  // The owner chose the geometry; this side follows it.
  spec_.nslots = rv->word0;
  spec_.slotBytes = rv->word1;
  fifoBytes_ = rv->bytes;
  *view = FifoView::at(fifo_, spec_.nslots, spec_.slotBytes);
  *ready = true;
  return ncclSuccess;
}

}  // namespace weft
