// The P2P backend of a Connection between two GPU ranks of one host: the FIFO lives in device
// memory and the other side maps it, through an IPC handle (another process) or directly (another
// thread of this process; peer access is enabled when the GPUs differ). In write mode (default)
// the receiver owns the FIFO and the sender writes into its GPU's memory; in read mode
// (NCCL_P2P_READ_ENABLE=1) the sender owns it, writes locally, and the receiver reads remotely.
// Ranks sharing one GPU are just the case where both sides' memory is the same device's.
//
// The FIFO's address travels through a small shared-memory rendezvous segment named after the
// connection, created by the owner and unlinked by the other side once it attached.
#pragma once
#include <string>

#include "runtime/device_runtime.h"
#include "transports/connection.h"
#include "transports/shm/shm_segment.h"

namespace weft {

struct P2pSpec {
  ConnectionId id;
  bool isSender;
  bool readMode;  // the sender owns the FIFO
  uint32_t nslots, slotBytes;
  int device;              // this rank's GPU
  int64_t drainTimeoutMs;  // read mode: how long destruction waits for the reader to catch up
};

class P2pConnection final : public ConnectionBackend {
 public:
  explicit P2pConnection(const P2pSpec& spec) : spec_(spec) {}
  ~P2pConnection() override;
  ncclResult_t tryConnect(FifoView* view, bool* ready, std::string* why) override;
  RankBlock* bell() const override { return nullptr; }  // GPU kernels poll; nobody sleeps
  const char* transportName() const override { return "p2p"; }
  bool fifoInDeviceMemory() const override { return true; }
  void shutdown() override { abandoned_ = true; }  // failed or aborted: nobody will drain the FIFO

 private:
  bool owner() const { return spec_.isSender == spec_.readMode; }
  ncclResult_t create(FifoView* view, std::string* why);
  ncclResult_t attach(FifoView* view, bool* ready, std::string* why);
  void waitForReader();

  P2pSpec spec_;
  ShmSegment rendezvous_;
  void* fifo_ = nullptr;    // owner: our allocation; other side: the mapping
  bool ipcMapped_ = false;  // the mapping came from ipcOpen (close it)
  size_t fifoBytes_ = 0;
  bool abandoned_ = false;
};

}  // namespace weft
