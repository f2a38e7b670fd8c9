#include "transports/shm/shm_connection.h"

#include <cinttypes>
#include <cstdio>

#include "base/log.h"

namespace weft {

ncclResult_t ShmConnection::tryConnect(FifoView* view, bool* ready, std::string* why) {
  *ready = false;
  const std::string name = id_.shmName();
  if (!isSender_) {
    // The receiver owns the memory: create it, describe it, then mark it ready for the sender.
    FifoLayout layout = FifoLayout::of(geometry_);
    // Offered to one fetch, the sender's; after that the name is gone.
    ncclResult_t r = seg_.create(name, layout.totalBytes, 1, why);
    if (r != ncclSuccess) {
      *why = "rank " + std::to_string(id_.receiverRank) + " cannot create the shared-memory FIFO of " + id_.describe() +
             ": " + *why;
      return r;
    }
    publishOwnedBytes(seg_.size());
    auto* base = static_cast<unsigned char*>(seg_.data());
    auto* header = reinterpret_cast<FifoHeader*>(base);
    header->magic = kFifoMagic;
    header->nslots = geometry_.nslots;
    header->slotBytes = geometry_.slotBytes;
    header->nheaders = geometry_.headers();
    header->smallBytes = geometry_.smallBytes;
    header->receiverRank = id_.receiverRank;
    header->senderRank = id_.senderRank;
    header->spreadPayload = spread_ ? 1 : 0;
    // Spread messages walk the whole data area within a few hundred messages: map it now, or
    // the first of them pay a minor fault per page on each side.
    if (spread_) seg_.populate(layout.dataOffset, layout.totalBytes - layout.dataOffset);
    *view = FifoView::at(base, geometry_);
    view->spreadPayload = spread_;
    header->ready.store(1, std::memory_order_release);
    ringIfSleeping(peerBell_);
    WEFT_INFO(kLogShm, "connection %s created (%u slots x %u bytes, %u headers, %u small bytes each%s)", name.c_str(),
              geometry_.nslots, geometry_.slotBytes, geometry_.headers(), geometry_.smallBytes,
              spread_ ? ", payloads spread" : "");
    *ready = true;
    return ncclSuccess;
  }
  bool notYet = false;
  FifoLayout minimal = FifoLayout::forGeometry(1, 64);
  if (seg_.data() == nullptr) {
    ncclResult_t r = seg_.tryOpen(name, minimal.totalBytes, &notYet, why);
    if (r != ncclSuccess || notYet) return r;
  }
  auto* base = static_cast<unsigned char*>(seg_.data());
  auto* header = reinterpret_cast<FifoHeader*>(base);
  if (header->ready.load(std::memory_order_acquire) == 0) return ncclSuccess;
  if (header->magic != kFifoMagic) {
    *why = "shared memory segment " + name + " has a bad header";
    return ncclInternalError;
  }
  // The receiver chose the geometry; the sender follows it. Its credits assume at least one header
  // slot per payload slot; the layout the geometry implies is checked against the segment's size.
  geometry_ = FifoGeometry{header->nslots, header->slotBytes, header->nheaders, header->smallBytes};
  if (geometry_.nslots == 0 || geometry_.headers() < geometry_.nslots || geometry_.smallBytes % 64 != 0 ||
      geometry_.smallBytes > geometry_.slotBytes) {
    *why = "shared memory segment " + name + " describes an impossible FIFO (" + std::to_string(geometry_.nslots) +
           " slots x " + std::to_string(geometry_.slotBytes) + " bytes, " + std::to_string(geometry_.headers()) +
           " headers, " + std::to_string(geometry_.smallBytes) + " small bytes)";
    return ncclInternalError;
  }
  FifoLayout layout = FifoLayout::of(geometry_);
  if (seg_.size() < layout.totalBytes) {
    *why = "shared memory segment " + name + " is smaller than its header says";
    return ncclInternalError;
  }
  spread_ = header->spreadPayload == 1;
  if (spread_) seg_.populate(layout.dataOffset, layout.totalBytes - layout.dataOffset);
  *view = FifoView::at(base, geometry_);
  view->spreadPayload = spread_;
  header->attached.store(1, std::memory_order_release);
  WEFT_INFO(kLogShm, "connection %s attached", name.c_str());
  *ready = true;
  return ncclSuccess;
}

}  // namespace weft
