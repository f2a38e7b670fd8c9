#include "transports/shm/direct_area.h"

#include <sys/mman.h>

#include <cinttypes>
#include <cstdio>

#include "base/params.h"

namespace weft {

std::string directAreaName(uint64_t commHash, int rank) {
  char buf[64];
  snprintf(buf, sizeof buf, "/weft-%016" PRIx64 "-d%d", commHash, rank);
  return buf;
}

size_t DirectAreas::dataBytes() {
  // Two halves of whole pages each: rounds alternate between them.
  if (dataBytes_ == 0) dataBytes_ = (static_cast<size_t>(*sendbufBytes_) + 8191) / 8192 * 8192;
  return dataBytes_;
}

ncclResult_t DirectAreas::tryConnect(uint64_t commHash, int rank, int nranks, bool* ready, std::string* why) {
  *ready = connected_;
  if (connected_) return ncclSuccess;
  const size_t bytes = dataBytes();
  if (mine_ == nullptr) {
    rank_ = rank;
    nranks_ = nranks;
    mine_ = std::make_unique<ShmSegment>();
    // Offered to each peer once; with no peers it is never published at all.
    ncclResult_t r = mine_->create(directAreaName(commHash, rank), kDirectDataOffset + bytes, nranks - 1, why);
    if (r != ncclSuccess) {
      *why = "rank " + std::to_string(rank) +
             " cannot create its direct-access staging area (RCCL_DDA_SENDBUF_BYTES=" + std::to_string(bytes) +
             "): " + *why;
      mine_.reset();
      return r;
    }
    ownedBytes_.store(mine_->size(), std::memory_order_relaxed);
    auto* h = new (mine_->data()) DirectHeader();
    h->owner = static_cast<uint32_t>(rank);
    h->dataBytes = bytes;
    h->arrived.store(0, std::memory_order_relaxed);
    // The magic last: a peer that sees it sees a complete header.
    std::atomic_ref<uint64_t>(h->magic).store(kDirectMagic, std::memory_order_release);
    peers_.clear();
    peers_.resize(nranks);
    dataPtrs_.assign(nranks, nullptr);
    arrivedPtrs_.assign(nranks, nullptr);
    stampPtrs_.assign(nranks, nullptr);
    inputPtrs_.assign(nranks, nullptr);
    dataPtrs_[rank] = static_cast<unsigned char*>(mine_->data()) + kDirectDataOffset;
    arrivedPtrs_[rank] = &h->arrived;
    stampPtrs_[rank] = h->stamps;
    inputPtrs_[rank] = h->inputs;
  }
  bool all = true;
  for (int p = 0; p < nranks_; ++p) {
    if (p == rank_ || dataPtrs_[p] != nullptr) continue;
    // The segment object lives from the first try on: a fetch in flight continues in it, and an
    // area fetched before its owner wrote the header is not fetched again (each owner offers its
    // area once per peer).
    if (peers_[p] == nullptr) peers_[p] = std::make_unique<ShmSegment>();
    ShmSegment* seg = peers_[p].get();
    if (seg->data() == nullptr) {
      bool notYet = false;
      // At least the header: a peer with another size is told apart below, with a better message.
      ncclResult_t r = seg->tryOpen(directAreaName(commHash, p), kDirectDataOffset, &notYet, why);
      if (r != ncclSuccess) return r;
      if (notYet) {
        all = false;
        continue;
      }
    }
    auto* h = static_cast<DirectHeader*>(seg->data());
    if (std::atomic_ref<uint64_t>(h->magic).load(std::memory_order_acquire) != kDirectMagic) {
      all = false;
      continue;
    }
    if (h->dataBytes != bytes) {
      *why = "rank " + std::to_string(rank_) + " has a direct-access staging area of " + std::to_string(bytes) +
             " bytes but rank " + std::to_string(p) + " has " + std::to_string(h->dataBytes) +
             " (set RCCL_DDA_SENDBUF_BYTES alike on every rank)";
      return ncclInvalidUsage;
    }
    dataPtrs_[p] = static_cast<unsigned char*>(seg->data()) + kDirectDataOffset;
    arrivedPtrs_[p] = &h->arrived;
    stampPtrs_[p] = h->stamps;
    inputPtrs_[p] = h->inputs;
  }
  connected_ = all;
  *ready = all;
  return ncclSuccess;
}

std::vector<int> DirectAreas::unmapped() const {
  std::vector<int> out;
  for (int p = 0; p < nranks_; ++p)
    if (p != rank_ && (p >= static_cast<int>(dataPtrs_.size()) || dataPtrs_[p] == nullptr)) out.push_back(p);
  return out;
}

void DirectAreas::clear() {
  peers_.clear();
  dataPtrs_.clear();
  arrivedPtrs_.clear();
  stampPtrs_.clear();
  inputPtrs_.clear();
  connected_ = false;
  ownedBytes_.store(0, std::memory_order_relaxed);
  mine_.reset();
}

}  // namespace weft
