#include "comm/local_peers.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/log.h"
#include "base/params.h"
#include "base/result.h"
#include "comm/comm.h"
#include "sockets/deadline.h"

namespace weft {
namespace {
// Field 22 of /proc/<pid>/stat (start time in clock ticks) and the state letter; false when the
// process is gone. A killed process that its parent has not reaped yet is a zombie: kill(pid, 0)
// still succeeds on it, so the state letter is what tells that it is dead.
bool readProcStat(int32_t pid, char* state, uint64_t* startTime) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE* f = fopen(path, "r");
  if (f == nullptr) return false;
  char buf[1024];
  size_t len = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[len] = 0;
  const char* p = strrchr(buf, ')');  // the command name may contain spaces and parentheses
  if (p == nullptr || p[1] == 0) return false;
  *state = p[2];
  // After ") " come fields 3.. ; start time is field 22, i.e. the 20th after the state.
  const char* q = p + 2;
  for (int field = 3; field < 22 && q != nullptr; ++field) {
    q = strchr(q, ' ');
    if (q != nullptr) ++q;
  }
  *startTime = q != nullptr ? strtoull(q, nullptr, 10) : 0;
  return true;
}

bool processAlive(int32_t pid, uint64_t startTime) {
  char state = 0;
  uint64_t now = 0;
  if (!readProcStat(pid, &state, &now)) return kill(pid, 0) == 0 || errno != ESRCH;
  if (state == 'Z' || state == 'X') return false;
  return startTime == 0 || now == startTime;
}

std::string blockName(uint64_t commHash, int rank) {
  char buf[64];
  snprintf(buf, sizeof buf, "/weft-%016" PRIx64 "-b%d", commHash, rank);
  return buf;
}
}  // namespace

ncclResult_t LocalPeers::setup(uint64_t commHash, int rank, const std::vector<RankInfo>& ranks, Bootstrap* bootstrap,
                               std::string* why) {
  const int n = static_cast<int>(ranks.size());
  blocks_.assign(n, nullptr);
  others_.clear();
  opened_.clear();
  int others = 0;
  for (int p = 0; p < n; ++p) others += p != rank && ranks[p].hostHash == ranks[rank].hostHash;
  // Offered to each local peer once: the name is gone when the last has fetched it.
  ncclResult_t r = mine_.create(blockName(commHash, rank), rankBlockBytes(n), others, why);
  if (r != ncclSuccess) {
    *why = "rank " + std::to_string(rank) + " cannot create its shared rank block: " + *why;
    return r;
  }
  self_ = new (mine_.data()) RankBlock();
  self_->magic = kRankBlockMagic;
  self_->pid = static_cast<int32_t>(getpid());
  char state = 0;
  uint64_t start = 0;
  self_->startTime = readProcStat(self_->pid, &state, &start) ? start : 0;
  self_->rank = rank;
  self_->ownerAddress = reinterpret_cast<uint64_t>(self_);
  blocks_[rank] = self_;
  WEFT_CHECK(bootstrap->barrier(why));
  nLocal_ = 1;
  for (int p = 0; p < n; ++p) {
    if (p == rank || ranks[p].hostHash != ranks[rank].hostHash) continue;
    auto seg = std::make_unique<ShmSegment>();
    bool notYet = false;
    // Every block is offered before the barrier; a fetch only waits for the owner's service
    // thread to answer, which a loaded host may delay beyond one tryOpen's bound.
    const Deadline deadline = Deadline::afterMs(param::timeoutMs());
    do {
      r = seg->tryOpen(blockName(commHash, p), rankBlockBytes(n), &notYet, why);
      if (r != ncclSuccess) {
        *why = "rank " + std::to_string(rank) + " cannot map rank " + std::to_string(p) + "'s shared block: " + *why;
        return r;
      }
    } while (notYet && seg->fetching() && !deadline.expired());
    if (notYet) {
      *why = "rank " + std::to_string(rank) + " cannot reach rank " + std::to_string(p) + "'s shared block " +
             blockName(commHash, p) + " although it passed the barrier: " + kShmReachHint;
      return ncclSystemError;
    }
    blocks_[p] = static_cast<RankBlock*>(seg->data());
    others_.push_back(blocks_[p]);
    opened_.push_back(std::move(seg));
    ++nLocal_;
  }
  // Everyone has mapped everyone's block: the names can go.
  WEFT_CHECK(bootstrap->barrier(why));
  mine_.unlink();
  return ncclSuccess;
}

std::string describePeerFailure(int rank, int32_t pid, bool countAborted, const std::function<bool()>& alive,
                                const std::function<std::string()>& publishedCause) {
  // Liveness first, the published cause second. A peer publishes its cause before it exits, so a
  // peer seen dead has its cause visible by the second read; read the other way round, a peer that
  // fails and exits between the two reads would be reported as a bare exit, its cause (which
  // names the rank that really failed) lost.
  const bool gone = !alive();
  const std::string cause = countAborted || gone ? publishedCause() : std::string();
  const std::string who = "rank " + std::to_string(rank);
  if (!cause.empty()) return who + " stopped (" + cause + ")";
  if (gone) return who + " (pid " + std::to_string(pid) + ") has exited";
  return "";
}

std::string LocalPeers::peerFailure(int rank, bool countAborted) const {
  RankBlock* b = blocks_[rank];
  if (b == nullptr) return "";
  return describePeerFailure(
      rank, b->pid, countAborted, [&] { return b->pid == self_->pid || processAlive(b->pid, b->startTime); },
      [&] {
        if (b->aborted.load(std::memory_order_acquire) == 0) return std::string();
        char reason[sizeof b->reason];
        memcpy(reason, b->reason, sizeof reason);
        reason[sizeof reason - 1] = 0;
        return std::string(reason[0] ? reason : "aborted");
      });
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
