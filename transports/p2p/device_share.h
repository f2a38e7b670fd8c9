// A device allocation offered to the other ranks of this host. Its owner publishes where it is in
// a small shared-memory segment: its address space (dev::Runtime::addressSpace, the pid), device and
// address, an IPC handle, its size, and two words the user defines (a FIFO's geometry, say). A rank
// of the same address space uses the address
// (enabling peer access when it runs on another GPU: a process cannot open its own IPC handle); a
// rank of another process opens the handle. Used by the P2P FIFOs and by the GPU direct lane's
// staging areas (src/gpu_executor/device_direct.h).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "nccl.h"
#include "runtime/device_runtime.h"
#include "transports/shm/shm_segment.h"

namespace weft {

struct DeviceShareRecord {
  uint64_t magic;               // the user's: tells one kind of record from another
  std::atomic<uint32_t> ready;  // 1 once the rest is written (release order)
  int32_t ownerDevice;
  int64_t ownerSpace;
  uint32_t word0, word1;  // the user's
  uint64_t ownerAddress;
  uint64_t bytes;
  dev::IpcHandle handle;
};

// The owner: exports p (bytes of device memory on `device`) and publishes it in `seg`, created
// here under `name` and offered to `peers` fetches. `what` names the allocation in messages.
ncclResult_t publishDeviceMemory(ShmSegment& seg, const std::string& name, int peers, uint64_t magic, void* p,
                                 int device, size_t bytes, uint32_t word0, uint32_t word1, const std::string& what,
                                 std::string* why);

// A peer: fetches the record under `name` into `seg` (without blocking). *record stays null while
// the owner has not published it yet; a record of another kind is an error.
ncclResult_t tryFetchDeviceShare(ShmSegment& seg, const std::string& name, uint64_t magic,
                                 const DeviceShareRecord** record, const std::string& what, std::string* why);

// A peer on `device`: the allocation's address here. *ipcMapped says it came from ipcOpen (close it
// with ipcClose); otherwise it is the owner's own address, in this process.
ncclResult_t mapDeviceShare(const DeviceShareRecord& record, int device, void** p, bool* ipcMapped,
                            const std::string& what, std::string* why);

}  // namespace weft
