#include "core/local_peers.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "core/comm.h"
#include "core/log.h"
#include "core/result.h"

namespace weft {
namespace {
std::string blockName(uint64_t commHash, int rank) {
  char buf[64];
  snprintf(buf, sizeof buf, "/weft-%016" PRIx64 "-b%d", commHash, rank);
  return buf;
}
}  // namespace

ncclResult_t LocalPeers::setup(uint64_t commHash, int rank, const std::vector<RankInfo>& ranks,
                               Bootstrap* bootstrap, std::string* why) {
  const int n = static_cast<int>(ranks.size());
  blocks_.assign(n, nullptr);
  opened_.clear();
  ncclResult_t r = mine_.create(blockName(commHash, rank), sizeof(RankBlock), why);
  if (r != ncclSuccess) return r;
  self_ = new (mine_.data()) RankBlock();
  self_->magic = kRankBlockMagic;
  self_->pid = static_cast<int32_t>(getpid());
  self_->rank = rank;
  blocks_[rank] = self_;
  WEFT_CHECK(bootstrap->barrier(why));
  nLocal_ = 1;
  for (int p = 0; p < n; ++p) {
    if (p == rank || ranks[p].hostHash != ranks[rank].hostHash) continue;
    auto seg = std::make_unique<ShmSegment>();
    bool notYet = false;
    r = seg->tryOpen(blockName(commHash, p), sizeof(RankBlock), &notYet, why);
    if (r != ncclSuccess) return r;
    if (notYet) {
      *why = "rank " + std::to_string(p) + "'s shared block " + blockName(commHash, p) +
             " is missing although it passed the barrier (is /dev/shm shared between the ranks' containers?)";
      return ncclSystemError;
    }
    blocks_[p] = static_cast<RankBlock*>(seg->data());
    opened_.push_back(std::move(seg));
    ++nLocal_;
  }
  // Everyone has mapped everyone's block: the names can go.
  WEFT_CHECK(bootstrap->barrier(why));
  mine_.unlink();
  return ncclSuccess;
}

std::string LocalPeers::peerFailure(int rank, bool countAborted) const {
  RankBlock* b = blocks_[rank];
  if (b == nullptr) return "";
  if (b->pid != self_->pid && kill(b->pid, 0) != 0 && errno == ESRCH)
    return "rank " + std::to_string(rank) + " (pid " + std::to_string(b->pid) + ") has exited";
  if (countAborted && b->aborted.load(std::memory_order_acquire) != 0) {
    char reason[sizeof b->reason];
    memcpy(reason, b->reason, sizeof reason);
    reason[sizeof reason - 1] = 0;
    return "rank " + std::to_string(rank) + " stopped (" + (reason[0] ? reason : "aborted") + ")";
  }
  return "";
}

void LocalPeers::announceFailure(const char* reason) {
  if (self_ == nullptr) return;
  uint32_t expected = 0;
  if (self_->aborted.load(std::memory_order_relaxed) == 0) {
    snprintf(self_->reason, sizeof self_->reason, "%s", reason);
    self_->aborted.compare_exchange_strong(expected, 1, std::memory_order_release);
  }
  ringAll();
}

void LocalPeers::clearFailure() {
  if (self_ != nullptr) self_->aborted.store(0, std::memory_order_release);
}

void LocalPeers::ringAll() {
  for (RankBlock* b : blocks_)
    if (b != nullptr && b != self_) {
      b->doorbell.fetch_add(1);
      futexWakeAll(&b->doorbell);
    }
}

}  // namespace weft
