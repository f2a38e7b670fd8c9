#include "gpu_executor/device_direct.h"

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "base/clock.h"
#include "runtime/device_runtime.h"
#include "transports/p2p/device_share.h"

namespace weft::gpu {
namespace {

constexpr uint64_t kRendezvousMagic = 0x5745465447444131ull;  // "WEFTGDA1"

// Areas mapped by address within this process, with their users: the owner and each rank of the
// process that maps it. A rank's kernels are finished when its communicator goes (destroy waits
// for them), but a slower peer's may still read this rank's area then; the memory is freed when
// the last user lets go. (Across processes the IPC mapping holds no such reference: see
// docs/gpu.md.)
std::mutex gSharedMutex;
std::unordered_map<void*, int>& sharedUsers() {
  static auto* users = new std::unordered_map<void*, int>;
  return *users;
}
void holdShared(void* base) {
  std::lock_guard<std::mutex> lock(gSharedMutex);
  ++sharedUsers()[base];
}
// A peer's area, only while its owner still holds it (false: it is gone, or going).
bool holdPeerShared(void* base) {
  std::lock_guard<std::mutex> lock(gSharedMutex);
  auto it = sharedUsers().find(base);
  if (it == sharedUsers().end()) return false;
  ++it->second;
  return true;
}
void releaseShared(void* base) {
  {
    std::lock_guard<std::mutex> lock(gSharedMutex);
    auto it = sharedUsers().find(base);
    if (it != sharedUsers().end() && --it->second > 0) return;
    if (it != sharedUsers().end()) sharedUsers().erase(it);
  }
  dev::runtime().deviceFree(base);
}

DevDirectArea areaAt(void* base) {
  return DevDirectArea{static_cast<unsigned char*>(base) + kDevDirectDataOffset, static_cast<DevDirectHeader*>(base)};
}

}  // namespace

std::string deviceDirectRendezvousName(uint64_t commHash, int rank) {
  char buf[64];
  snprintf(buf, sizeof buf, "/weft-%016" PRIx64 "-g%d", commHash, rank);
  return buf;
}

DeviceDirectAreas::~DeviceDirectAreas() {
  dev::Runtime& rt = dev::runtime();
  for (void* p : ipcMapped_)
    if (p != nullptr) rt.ipcClose(p);
  for (void* p : heldShared_) releaseShared(p);
  if (mine_ != nullptr) releaseShared(mine_);
}

ncclResult_t DeviceDirectAreas::create(uint64_t commHash, int device, size_t dataBytes, std::string* why) {
  dev::Runtime& rt = dev::runtime();
  const size_t bytes = kDevDirectDataOffset + dataBytes;
  // Zero-filled: every arrival counter starts at 0.
  if (rt.deviceAlloc(&mine_, bytes) != ncclSuccess) {
    mine_ = nullptr;
    *why = "rank " + std::to_string(rank_) + " cannot allocate its " + std::to_string(bytes) +
           "-byte direct-access staging area on GPU " + std::to_string(device) + " (RCCL_DDA_SENDBUF_BYTES)";
    return ncclUnhandledCudaError;
  }
  holdShared(mine_);
  ownedBytes_ = bytes;
  table_[rank_] = areaAt(mine_);
  if (nranks_ == 1) return ncclSuccess;
  // dataBytes travels in two words (it may pass 4 GiB).
  return publishDeviceMemory(rendezvous_, deviceDirectRendezvousName(commHash, rank_), nranks_ - 1, kRendezvousMagic,
                             mine_, device, bytes, static_cast<uint32_t>(dataBytes),
                             static_cast<uint32_t>(uint64_t(dataBytes) >> 32),
                             "rank " + std::to_string(rank_) + "'s direct-access staging area", why);
}

ncclResult_t DeviceDirectAreas::tryMapPeer(uint64_t commHash, int p, int device, size_t dataBytes, std::string* why) {
  if (peerRendezvous_[p] == nullptr) peerRendezvous_[p] = std::make_unique<ShmSegment>();
  const std::string what = "rank " + std::to_string(p) + "'s direct-access staging area";
  const DeviceShareRecord* rv = nullptr;
  ncclResult_t r = tryFetchDeviceShare(*peerRendezvous_[p], deviceDirectRendezvousName(commHash, p), kRendezvousMagic,
                                       &rv, what, why);
  if (r != ncclSuccess || rv == nullptr) return r;
  const uint64_t theirBytes = rv->word0 | (uint64_t(rv->word1) << 32);
  if (theirBytes != dataBytes) {
    *why = "rank " + std::to_string(rank_) + " has a direct-access staging area of " + std::to_string(dataBytes) +
           " bytes but rank " + std::to_string(p) + " has " + std::to_string(theirBytes) +
           " (set RCCL_DDA_SENDBUF_BYTES alike on every rank)";
    return ncclInvalidUsage;
  }
  void* base = nullptr;
  bool ipcMapped = false;
  r = mapDeviceShare(*rv, device, &base, &ipcMapped, what, why);
  if (r != ncclSuccess) return r;
  if (ipcMapped) {
    ipcMapped_[p] = base;
  } else {
    if (!holdPeerShared(base)) {
      *why = "rank " + std::to_string(p) + " destroyed its communicator before its direct-access area was mapped";
      return ncclRemoteError;
    }
    heldShared_.push_back(base);
  }
  table_[p] = areaAt(base);
  return ncclSuccess;
}

ncclResult_t DeviceDirectAreas::tryConnect(uint64_t commHash, int rank, int nranks, int device, size_t dataBytes,
                                           bool* ready, std::string* why) {
  *ready = connected_;
  if (connected_) return ncclSuccess;
  if (mine_ == nullptr) {
    rank_ = rank;
    nranks_ = nranks;
    table_.assign(nranks, DevDirectArea{nullptr, nullptr});
    peerRendezvous_.clear();
    peerRendezvous_.resize(nranks);
    ipcMapped_.assign(nranks, nullptr);
    ncclResult_t r = create(commHash, device, dataBytes, why);
    if (r != ncclSuccess) return r;
  }
  bool all = true;
  for (int p = 0; p < nranks_; ++p) {
    if (table_[p].head != nullptr) continue;
    ncclResult_t r = tryMapPeer(commHash, p, device, dataBytes, why);
    if (r != ncclSuccess) return r;
    all = all && table_[p].head != nullptr;
  }
  connected_ = all;
  *ready = all;
  return ncclSuccess;
}

std::vector<int> DeviceDirectAreas::depart(int64_t timeoutMs) {
  std::vector<int> late;
  if (mine_ == nullptr) return late;
  dev::Runtime& rt = dev::runtime();
  DevDirectHeader* head = table_[rank_].head;
  uint64_t n = 0;
  if (rt.copy(&n, &head->arrived, sizeof n) != ncclSuccess) return late;
  ++n;
  if (rt.copy(&head->arrived, &n, sizeof n) != ncclSuccess) return late;
  for (int p = 0; p < nranks_; ++p)
    if (ipcMapped_[p] != nullptr) late.push_back(p);
  const int64_t deadline = nowNs() + timeoutMs * 1000000;
  while (!late.empty()) {
    std::vector<int> still;
    for (int p : late) {
      uint64_t theirs = 0;
      if (rt.copy(&theirs, &table_[p].head->arrived, sizeof theirs) == ncclSuccess && theirs >= n) continue;
      still.push_back(p);
    }
    late.swap(still);
    if (late.empty() || nowNs() > deadline) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return late;
}

std::vector<int> DeviceDirectAreas::unmapped() const {
  std::vector<int> out;
  for (int p = 0; p < nranks_; ++p)
    if (p < static_cast<int>(table_.size()) && table_[p].head == nullptr) out.push_back(p);
  return out;
}

}  // namespace weft::gpu
