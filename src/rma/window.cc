#include "rma/window.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "base/clock.h"
#include "base/log.h"
#include "base/params.h"
#include "bootstrap/bootstrap.h"
#include "comm/comm.h"
#include "comm/rank_locality.h"
#include "rma/net_puts.h"
#include "transports/shm/fd_service.h"
#include "transports/shm/shared_alloc.h"

namespace weft {

namespace {

// What a rank tells its peers about its window: where it is, and, when the buffer lies in memory
// other processes can map (ncclMemAlloc's, transports/shm/shared_alloc.h) and this rank offers
// it, where it starts in that allocation.
struct WindowRecord {
  WindowSpan span;
  uint64_t allocOffset;  // kNotOffered when the buffer is not offered
  uint64_t allocBytes;
};
constexpr uint64_t kNotOffered = UINT64_MAX;

std::string offerName(uint64_t commHash, int rank, uint64_t allocBase) {
  char name[96];
  snprintf(name, sizeof name, "weft-%016llx-w%d-%llx", static_cast<unsigned long long>(commHash), rank,
           static_cast<unsigned long long>(allocBase));
  return name;
}

// How long a rank tries to map a peer's offered buffer. Reading in place only saves a copy, so a
// peer that cannot be reached costs at most this, and the window still works for everything else.
constexpr int64_t kMapWaitMs = 10000;

// Maps what the other processes offered; within this process the addresses are the buffers.
void mapPeerBuffers(ncclWindow_vidmem* win, const std::vector<WindowRecord>& recs) {
  ncclComm* comm = win->comm;
  const int n = comm->nranks;
  win->mapped.assign(n, nullptr);
  win->peerSegments.resize(n);
  const int64_t deadline = nowNs() + std::min<int64_t>(param::timeoutMs(), kMapWaitMs) * 1000000;
  for (int q = 0; q < n; ++q) {
    if (comm->ranks[q].addressSpace == comm->ranks[comm->rank].addressSpace) {
      win->mapped[q] = reinterpret_cast<const unsigned char*>(recs[q].span.addr);
      continue;
    }
    if (recs[q].allocOffset == kNotOffered) continue;
    auto seg = std::make_unique<ShmSegment>();
    const std::string name = offerName(comm->commHash, q, recs[q].span.addr - recs[q].allocOffset);
    std::string why;
    for (;;) {
      bool notYet = false;
      if (seg->tryOpen(name, recs[q].allocBytes, &notYet, &why) != ncclSuccess) break;
      if (!notYet) {
        win->mapped[q] = static_cast<const unsigned char*>(seg->data()) + recs[q].allocOffset;
        win->peerSegments[q] = std::move(seg);
        break;
      }
      if (nowNs() > deadline) {
        why = "not offered within " + std::to_string(kMapWaitMs) + " ms";
        break;
      }
      usleep(200);
    }
    if (win->mapped[q] == nullptr)
      WEFT_INFO(kLogShm,
                "comm %p rank %d: rank %d's window buffer is not mapped here, so its inputs there are staged: %s",
                static_cast<void*>(comm), comm->rank, q, why.c_str());
  }
}

// Host mode, every rank on this host: offers this rank's buffer to the other processes, maps
// theirs, and learns whether every rank reaches this rank's buffer (then it may publish an input
// in this window for its peers to read in place).
ncclResult_t shareWindow(ncclWindow_vidmem* win, WindowRecord* mine, std::vector<WindowRecord>* recs,
                         std::string* why) {
  ncclComm* comm = win->comm;
  SharedAllocation alloc;
  uint64_t offer = 0;
  const int others = ranksInOtherAddressSpaces(comm);
  if (others > 0 && sharedAllocationOf(win->buff, win->size, &alloc)) {
    std::string offerWhy;
    const auto base = reinterpret_cast<uint64_t>(alloc.base);
    offer = offerSegmentFd(offerName(comm->commHash, comm->rank, base), alloc.fd, alloc.size, others, &offerWhy);
    if (offer != 0) {
      mine->allocOffset = reinterpret_cast<uint64_t>(win->buff) - base;
      mine->allocBytes = alloc.size;
    } else {
      WEFT_INFO(kLogShm,
                "comm %p rank %d: its window buffer is not offered to its peers, so its inputs there are "
                "staged: %s",
                static_cast<void*>(comm), comm->rank, offerWhy.c_str());
    }
  }
  (*recs)[comm->rank] = *mine;
  ncclResult_t r = comm->bootstrap->allGather(recs->data(), sizeof(WindowRecord), why);
  if (r == ncclSuccess) {
    mapPeerBuffers(win, *recs);
    // Row q: which ranks' buffers rank q reaches. This rank's buffer is readable by its peers when
    // column `rank` is all ones.
    const int n = comm->nranks;
    std::vector<uint8_t> reached(size_t(n) * n, 0);
    for (int p = 0; p < n; ++p) reached[size_t(comm->rank) * n + p] = win->mapped[p] != nullptr;
    r = comm->bootstrap->allGather(reached.data(), n, why);
    win->readableByPeers = r == ncclSuccess;
    for (int q = 0; q < n; ++q) win->readableByPeers = win->readableByPeers && reached[size_t(q) * n + comm->rank];
  }
  withdrawSegmentFd(offer);  // every peer has fetched it, or given up
  return r;
}

}  // namespace

ncclResult_t exchangeWindow(ncclWindow_vidmem* win, std::string* why) {
  ncclComm* comm = win->comm;
  std::vector<WindowRecord> recs(comm->nranks);
  WindowRecord mine{WindowSpan{reinterpret_cast<uint64_t>(win->buff), win->size}, kNotOffered, 0};
  recs[comm->rank] = mine;
  // Whether every rank shares this host, and NCCL_SHM_DISABLE (agreed), are the same on every rank,
  // so all make the same exchanges.
  const bool share = allRanksOnThisHost(comm) && !comm->agreed.shmDisable;
  ncclResult_t r = share ? shareWindow(win, &mine, &recs, why)
                         : comm->bootstrap->allGather(recs.data(), sizeof(WindowRecord), why);
  if (r != ncclSuccess) {
    *why = "rank " + std::to_string(comm->rank) + " cannot exchange its window with its peers: " + *why;
    return r;
  }
  std::vector<WindowSpan> spans(comm->nranks);
  for (int q = 0; q < comm->nranks; ++q) spans[q] = recs[q].span;
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(comm->windows->mutex);
    // Registrations are collective and issued in the same order on every rank, so the count names
    // the same window everywhere.
    win->id = ++comm->windows->registrations;
    first = win->id == 1;
    comm->windows->windows[win->id] = spans[comm->rank];
  }
  win->spans = std::move(spans);
  if (first && (r = connectPutLinks(comm, why)) != ncclSuccess) {
    forgetWindow(win);
    win->spans.clear();
    return r;
  }
  return ncclSuccess;
}

void* allocShareableHostMemory(size_t bytes, std::string* why) { return sharedAlloc(bytes, why); }

bool freeShareableHostMemory(void* p) { return sharedFree(p); }

void forgetWindow(ncclWindow_vidmem* win) {
  std::lock_guard<std::mutex> lock(win->comm->windows->mutex);
  win->comm->windows->windows.erase(win->id);
}

}  // namespace weft
