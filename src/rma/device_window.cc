#include "rma/device_window.h"

#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "base/log.h"
#include "bootstrap/bootstrap.h"
#include "comm/rank_locality.h"
#include "runtime/device_runtime.h"

namespace weft {

namespace {

// What a rank tells its peers about its window buffer.
struct Offer {
  uint64_t address;  // the buffer, as this rank's process addresses it
  uint64_t offset;   // from the start of the exported allocation
  uint32_t offered;  // 1: handle exports the allocation
  uint32_t pad;
  dev::IpcHandle handle;
};

// Every rank on one host, P2P allowed (NCCL_P2P_DISABLE is agreed), and more than one address
// space among them: the same answer on every rank, so all take part in the same exchanges.
bool sharesByIpc(const ncclComm* comm) {
  return !comm->agreed.p2pDisable && allRanksOnThisHost(comm) && ranksInOtherAddressSpaces(comm) > 0;
}

// Maps what the other address spaces offered; within this one the addresses are the buffers.
std::vector<uint64_t> mapPeerBuffers(ncclWindow_vidmem* win, const std::vector<Offer>& offers) {
  ncclComm* comm = win->comm;
  std::vector<uint64_t> mapped(size_t(comm->nranks), 0);
  for (int q = 0; q < comm->nranks; ++q) {
    const Offer& o = offers[size_t(q)];
    if (comm->ranks[q].addressSpace == comm->ranks[comm->rank].addressSpace) {
      mapped[size_t(q)] = o.address;
      continue;
    }
    if (o.offered == 0) continue;
    void* base = nullptr;
    if (dev::runtime().ipcOpen(o.handle, &base) != ncclSuccess) {
      WEFT_INFO(kLogReg,
                "comm %p rank %d: cannot map rank %d's window buffer (IPC handle), so its inputs there are staged",
                static_cast<void*>(comm), comm->rank, q);
      continue;
    }
    win->ipcMapped.push_back(std::make_unique<IpcMapping>(base));
    mapped[size_t(q)] = reinterpret_cast<uint64_t>(base) + o.offset;
  }
  return mapped;
}

}  // namespace

ncclResult_t exchangeDeviceWindow(ncclWindow_vidmem* win, void* allocBase, std::string* why) {
  ncclComm* comm = win->comm;
  if (!sharesByIpc(comm)) return ncclSuccess;
  const int n = comm->nranks;
  std::vector<Offer> offers(static_cast<size_t>(n));
  Offer& mine = offers[size_t(comm->rank)];
  mine.address = reinterpret_cast<uint64_t>(win->buff);
  if (allocBase != nullptr && dev::runtime().ipcGetHandle(allocBase, &mine.handle) == ncclSuccess) {
    mine.offered = 1;
    mine.offset = reinterpret_cast<uint64_t>(win->buff) - reinterpret_cast<uint64_t>(allocBase);
  } else {
    WEFT_INFO(kLogReg, "comm %p rank %d: its window buffer %s, so its inputs there are staged",
              static_cast<void*>(comm), comm->rank,
              allocBase == nullptr ? "is not ncclMemAlloc memory" : "cannot be exported (IPC handle)");
  }
  ncclResult_t r = comm->bootstrap->allGather(offers.data(), sizeof(Offer), why);
  if (r != ncclSuccess) return r;
  const std::vector<uint64_t> mapped = mapPeerBuffers(win, offers);

  // Each rank's row and which buffers it reached: a rank may publish in this window when every
  // rank reached its buffer and all claimed the same row.
  if (comm->deviceWindows == nullptr) comm->deviceWindows = std::make_unique<DeviceWindowTable>(n);
  std::string rowWhy;
  const int32_t row = comm->deviceWindows->claim(&rowWhy);
  const size_t stride = sizeof(int32_t) + size_t(n);
  std::vector<unsigned char> reach(stride * size_t(n), 0);
  unsigned char* me = reach.data() + stride * size_t(comm->rank);
  memcpy(me, &row, sizeof row);
  for (int q = 0; q < n; ++q) me[sizeof(int32_t) + size_t(q)] = mapped[size_t(q)] != 0;
  r = comm->bootstrap->allGather(reach.data(), stride, why);
  if (r != ncclSuccess) {
    comm->deviceWindows->release(row);
    return r;
  }
  bool sameRow = row >= 0, readable = true;
  for (int q = 0; q < n; ++q) {
    const unsigned char* theirs = reach.data() + stride * size_t(q);
    int32_t theirRow = -1;
    memcpy(&theirRow, theirs, sizeof theirRow);
    sameRow = sameRow && theirRow == row;
    readable = readable && theirs[sizeof(int32_t) + size_t(comm->rank)] != 0;
  }
  if (!sameRow) {
    comm->deviceWindows->release(row);
    WEFT_INFO(kLogReg,
              "comm %p rank %d: the ranks' device window tables have no common free row (%s), so inputs "
              "in this window are staged",
              static_cast<void*>(comm), comm->rank, rowWhy.empty() ? "the rows differ" : rowWhy.c_str());
    return ncclSuccess;
  }
  r = comm->deviceWindows->fill(row, mapped, why);
  if (r != ncclSuccess) {
    comm->deviceWindows->release(row);
    return r;
  }
  std::lock_guard<std::mutex> lock(comm->regMutex);  // collectives look windows up under it
  win->gpuSlot = row;
  win->readableByPeers = readable;
  return ncclSuccess;
}

void forgetDeviceWindow(ncclWindow_vidmem* win) {
  ncclComm* comm = win->comm;
  int row = -1;
  {
    std::lock_guard<std::mutex> lock(comm->regMutex);
    std::swap(row, win->gpuSlot);
    win->readableByPeers = false;
  }
  if (row >= 0 && comm->deviceWindows != nullptr) comm->deviceWindows->release(row);
  win->ipcMapped.clear();
}

}  // namespace weft
