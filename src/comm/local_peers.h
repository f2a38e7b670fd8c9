// The ranks of a communicator that share this host, seen through their RankBlocks (doorbell, pid,
// abort flag). Set up once at init: every rank creates its block, all map everyone's, and each
// rank removes its block's name once all have mapped it.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "transports/rank_block.h"
#include "transports/shm/shm_segment.h"

namespace weft {

struct RankInfo;

// What peerFailure says, from two reads of a peer's state that it makes in this order: whether the
// process is alive, then the cause it published ("" = none). countAborted: a live peer that
// published a cause counts as failed. Separate so that the order can be tested.
std::string describePeerFailure(int rank, int32_t pid, bool countAborted, const std::function<bool()>& alive,
                                const std::function<std::string()>& publishedCause);

class LocalPeers {
 public:
  ncclResult_t setup(uint64_t commHash, int rank, const std::vector<RankInfo>& ranks, Bootstrap* bootstrap,
                     std::string* why);
  RankBlock* self() const { return self_; }
  RankBlock* block(int rank) const { return blocks_[rank]; }
  bool samePid(int rank) const { return blocks_[rank] != nullptr && blocks_[rank]->pid == self_->pid; }
  // Empty when `rank` is alive (and, with countAborted, has not aborted or failed); otherwise says
  // what happened to it, including the cause it published.
  std::string peerFailure(int rank, bool countAborted = true) const;
  // Marks this rank as failed with a cause (first cause wins) and wakes every local peer so that
  // they stop waiting for it.
  void announceFailure(const char* reason);
  // Clears this rank's failure mark (a communicator made afresh from a failed one starts clean).
  void clearFailure();
  void ringAll();
  int nLocal() const { return nLocal_; }
  // Whether a local peer is queued on the calling thread's CPU (peerQueuedOnThisCpu).
  bool peerNeedsMyCpu() { return self_ != nullptr && peerQueuedOnThisCpu(self_, others_); }

 private:
  ShmSegment mine_;
  std::vector<std::unique_ptr<ShmSegment>> opened_;
  std::vector<RankBlock*> blocks_;
  std::vector<RankBlock*> others_;  // the local peers' blocks, this rank's excluded
  RankBlock* self_ = nullptr;
  int nLocal_ = 0;
};

}  // namespace weft
