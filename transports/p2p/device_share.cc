#include "transports/p2p/device_share.h"

namespace weft {

ncclResult_t publishDeviceMemory(ShmSegment& seg, const std::string& name, int peers, uint64_t magic, void* p,
                                 int device, size_t bytes, uint32_t word0, uint32_t word1, const std::string& what,
                                 std::string* why) {
  dev::IpcHandle handle{};
  if (dev::runtime().ipcGetHandle(p, &handle) != ncclSuccess) {
    *why = "cannot export " + what + " as an IPC handle";
    return ncclUnhandledCudaError;
  }
  ncclResult_t r = seg.create(name, sizeof(DeviceShareRecord), peers, why);
  if (r != ncclSuccess) return r;
  auto* rec = new (seg.data()) DeviceShareRecord();
  rec->magic = magic;
  rec->ownerSpace = dev::runtime().addressSpace();
  rec->ownerDevice = device;
  rec->word0 = word0;
  rec->word1 = word1;
  rec->ownerAddress = reinterpret_cast<uint64_t>(p);
  rec->bytes = bytes;
  rec->handle = handle;
  rec->ready.store(1, std::memory_order_release);
  return ncclSuccess;
}

ncclResult_t tryFetchDeviceShare(ShmSegment& seg, const std::string& name, uint64_t magic,
                                 const DeviceShareRecord** record, const std::string& what, std::string* why) {
  *record = nullptr;
  if (seg.data() == nullptr) {
    bool notYet = false;
    ncclResult_t r = seg.tryOpen(name, sizeof(DeviceShareRecord), &notYet, why);
    if (r != ncclSuccess || notYet) return r;
  }
  const auto* rec = static_cast<const DeviceShareRecord*>(seg.data());
  if (rec->ready.load(std::memory_order_acquire) == 0) return ncclSuccess;
  if (rec->magic != magic) {
    *why = "the rendezvous segment " + name + " of " + what + " has a bad header";
    return ncclInternalError;
  }
  *record = rec;
  return ncclSuccess;
}

ncclResult_t mapDeviceShare(const DeviceShareRecord& record, int device, void** p, bool* ipcMapped,
                            const std::string& what, std::string* why) {
  dev::Runtime& rt = dev::runtime();
  *ipcMapped = false;
  if (record.ownerSpace == rt.addressSpace()) {
    if (record.ownerDevice != device && rt.enablePeerAccess(record.ownerDevice) != ncclSuccess) {
      *why = "GPU " + std::to_string(device) + " cannot access GPU " + std::to_string(record.ownerDevice) + " for " +
             what;
      return ncclUnhandledCudaError;
    }
    *p = reinterpret_cast<void*>(record.ownerAddress);
    return ncclSuccess;
  }
  if (rt.ipcOpen(record.handle, p) != ncclSuccess) {
    *p = nullptr;
    *why = "cannot map " + what + " (IPC handle) on GPU " + std::to_string(device);
    return ncclUnhandledCudaError;
  }
  *ipcMapped = true;
  return ncclSuccess;
}

}  // namespace weft
