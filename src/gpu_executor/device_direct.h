// The direct lane's staging areas for a GPU communicator: each rank allocates one area in its own
// GPU's memory (a DevDirectHeader, then the staging data) and every local rank maps every other's:
// by address within one process (enabling peer access between two GPUs), through an IPC handle
// across processes. Where an area is and how to open it is published in a small shared-memory
// rendezvous per rank, as the P2P transport publishes its FIFOs.
//
// Like the host's DirectAreas, the areas are made on first use and connecting never blocks: the GPU
// executor calls tryConnect until every peer's area is mapped, within WEFT_TIMEOUT_MS.
//
// None of this has run on a GPU yet: the kernel-emulation tests run it with "device memory" in host
// memory and ranks as threads, by address within one address space and, with ranks that have
// address spaces of their own, through emulated IPC handles that map the memory again.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpu_executor/launch_desc.h"
#include "nccl.h"
#include "transports/shm/shm_segment.h"

namespace weft::gpu {

class DeviceDirectAreas {
 public:
  DeviceDirectAreas() = default;
  ~DeviceDirectAreas();
  DeviceDirectAreas(const DeviceDirectAreas&) = delete;
  DeviceDirectAreas& operator=(const DeviceDirectAreas&) = delete;

  // Allocates this rank's area (dataBytes of staging, the size the host-side builders cut rounds
  // for) on `device`, the caller's current GPU, and maps every peer's it can; *ready once all are.
  ncclResult_t tryConnect(uint64_t commHash, int rank, int nranks, int device, size_t dataBytes, bool* ready,
                          std::string* why);
  bool connected() const { return connected_; }
  // Ranks whose areas are not mapped yet (for the timeout message).
  std::vector<int> unmapped() const;
  // Every rank's area by rank, as the kernel reads it.
  const std::vector<DevDirectArea>& table() const { return table_; }
  // GPU memory this rank allocated for its area.
  size_t ownedBytes() const { return ownedBytes_; }

  // Before the area is freed, with this rank's kernels finished: a peer in another process may
  // still be reading it after the last barrier they shared. This rank raises its arrival counter
  // once more ("departed") and waits, up to timeoutMs, until each such peer's counter is as high,
  // which it reaches only after its reads (it departed too, or went on to a later barrier). Peers
  // in this process need no wait: they hold a reference to the area instead. Returns the peers
  // that never got there (the caller warns). Run by the emulation's ranks with address spaces of
  // their own; never on a GPU.
  std::vector<int> depart(int64_t timeoutMs);

 private:
  ncclResult_t create(uint64_t commHash, int device, size_t dataBytes, std::string* why);
  ncclResult_t tryMapPeer(uint64_t commHash, int peer, int device, size_t dataBytes, std::string* why);

  int rank_ = -1, nranks_ = 0;
  bool connected_ = false;
  void* mine_ = nullptr;
  size_t ownedBytes_ = 0;
  ShmSegment rendezvous_;
  std::vector<std::unique_ptr<ShmSegment>> peerRendezvous_;  // by rank
  std::vector<void*> ipcMapped_;                             // by rank: mappings to close
  std::vector<void*> heldShared_;                            // same-process areas this rank holds
  std::vector<DevDirectArea> table_;
};

// The shared-memory name under which a rank publishes its GPU staging area.
std::string deviceDirectRendezvousName(uint64_t commHash, int rank);

}  // namespace weft::gpu
