// The windows this rank registered (ncclCommWindowRegister): the handles the communicator owns
// (ncclComm::windowHandles; what a program never deregistered goes with the communicator), and
// the table by the id every rank gives the same registration, so that a put arriving over the
// network (src/rma) finds where its bytes go. The network proxy's thread reads the table while the
// application's thread registers and deregisters; a deregistration waits for a put being written
// under the lock, so once it returns no put touches the buffer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "nccl.h"
#include "runtime/device_runtime.h"
#include "transports/shm/shm_segment.h"

namespace weft {

// Another process's device buffer, mapped through its IPC handle (dev::Runtime::ipcOpen) and
// closed when this goes.
class IpcMapping {
 public:
  explicit IpcMapping(void* base) : base_(base) {}
  ~IpcMapping() { dev::runtime().ipcClose(base_); }
  IpcMapping(const IpcMapping&) = delete;
  IpcMapping& operator=(const IpcMapping&) = delete;

 private:
  void* base_;
};

// One rank's window buffer, as that rank's process addresses it.
struct WindowSpan {
  uint64_t addr = 0;
  uint64_t size = 0;
};

struct WindowTable {
  std::mutex mutex;
  std::unordered_map<uint64_t, WindowSpan> windows;  // this rank's, by registration id
  uint64_t registrations = 0;                        // ids handed out; the same sequence on every rank
  // A put that could not be written (its window was gone, or it did not fit), reported by this
  // rank's next ncclWaitSignal; empty when none.
  std::string dropped;
};

}  // namespace weft

// What an ncclWindow_t points to.
struct ncclWindow_vidmem {
  ncclComm* comm;
  void* buff;
  size_t size;
  int flags;
  uint64_t id;  // the registration's number, the same on every rank; 0 until the exchange ran
  // Every rank's buffer, by rank, once the registration's exchange ran (host mode); empty before,
  // and on GPU communicators, which have no one-sided operations yet.
  std::vector<weft::WindowSpan> spans;
  // Host mode, every rank on this host: each rank's buffer as this process addresses it (null where
  // it cannot: memory not from ncclMemAlloc in another process), the mappings of the other
  // processes' buffers (kept until deregistration), and whether every rank reaches this rank's
  // buffer, so that this rank may publish an input in it for its peers to read in place
  // (comm/shared_input.h).
  std::vector<const unsigned char*> mapped;
  std::vector<std::unique_ptr<weft::ShmSegment>> peerSegments;
  bool readableByPeers = false;
  // GPU communicators whose local ranks live in several processes: the row of the device window
  // table (comm/device_window_table.h) that holds every rank's buffer as this process addresses it,
  // and the IPC mappings of the other processes' buffers (closed at deregistration); -1 and empty
  // when the window is not shared that way (rma/device_window.h).
  int gpuSlot = -1;
  std::vector<std::unique_ptr<weft::IpcMapping>> ipcMapped;
};
