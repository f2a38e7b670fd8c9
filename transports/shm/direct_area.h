// Direct data access between the ranks of one host: every rank owns a staging area in shared
// memory (shm_segment.h) that all its local peers map, so an algorithm can copy its input there once and let every
// peer read it in place (no FIFO, no per-piece handshake). Beside the data, each area carries the
// rank's arrival counter, which the direct barrier uses.
//
// The areas are made lazily, the first time a direct-lane step of the communicator runs, and
// without blocking: the executor calls tryConnect from its progress loop until every peer's area
// is mapped. An area's name is offered to each peer once and is gone when the last has fetched it
// (or when its owner goes, in case a peer never came).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nccl.h"
#include "program/step.h"
#include "transports/fifo.h"
#include "transports/shm/shm_segment.h"

namespace weft {

// The head of every staging area; the data starts kDirectDataOffset bytes after it.
struct alignas(64) DirectHeader {
  uint64_t magic;
  uint32_t owner;
  uint32_t reserved;
  uint64_t dataBytes;
  alignas(64) std::atomic<uint64_t> arrived;  // barriers this rank has reached (only it writes)
  // The rank's op stamp for its barrier k sits in stamps[k % 2], written before the arrival that
  // publishes it: a peer can be at most one barrier ahead, so two slots never collide.
  OpStamp stamps[2];
  // Beside each stamp, the rank's input when it published it at that barrier for its peers to read
  // in place (program/step.h kStepPublish), as below; else 0.
  uint64_t inputs[2];
};

constexpr uint64_t kDirectMagic = 0x5745465444444131ull;  // "WEFTDDA1"
constexpr size_t kDirectDataOffset = 4096;

// What a direct step sees: every rank's staging data and arrival counter, indexed by rank.
struct DirectView {
  int rank = 0;
  int nranks = 0;
  unsigned char* const* data = nullptr;
  std::atomic<uint64_t>* const* arrived = nullptr;
  OpStamp* const* stamps = nullptr;   // every rank's DirectHeader::stamps (null: not compared)
  uint64_t* const* inputs = nullptr;  // every rank's DirectHeader::inputs (null: none published)
  // Turns a window reference that `rank` published into an address here (null: not mapped here).
  // Null: window references are not expected (the unit tests' views).
  const unsigned char* (*resolveWindowRef)(void* ctx, int rank, uint64_t word) = nullptr;
  void* resolveCtx = nullptr;
};

class DirectAreas {
 public:
  // sendbufBytes: the communicator's agreed RCCL_DDA_SENDBUF_BYTES (it outlives this object).
  explicit DirectAreas(const int64_t* sendbufBytes) : sendbufBytes_(sendbufBytes) {}
  DirectAreas(const DirectAreas&) = delete;
  DirectAreas& operator=(const DirectAreas&) = delete;

  // Bytes of staging data per rank (fixed by the first call for the communicator's lifetime, so
  // that programs built before the areas exist agree with them). The parameter is agreed at init,
  // so every rank has the same size; tryConnect checks it.
  size_t dataBytes();
  // Rounds of the direct lane handed out so far; a builder takes the rounds it emits. Each round
  // uses one half of the staging data, alternating, which is what lets a rank write its next round
  // while a slow peer still reads the previous one (see collectives/dda).
  uint64_t takeRounds(uint64_t n) {
    uint64_t first = rounds_;
    rounds_ += n;
    return first;
  }

  // Creates this rank's area and maps every peer's; *ready once all are mapped. Never blocks.
  ncclResult_t tryConnect(uint64_t commHash, int rank, int nranks, bool* ready, std::string* why);
  bool connected() const { return connected_; }
  // Ranks whose areas are not mapped yet (for messages while waiting).
  std::vector<int> unmapped() const;
  DirectView view() const {
    return DirectView{rank_, nranks_, dataPtrs_.data(), arrivedPtrs_.data(), stampPtrs_.data(), inputPtrs_.data()};
  }
  // Shared memory this rank created. Any thread may ask (weftCommDumpState) while the owning
  // thread creates or clears the area, so the figure is published apart from the segment.
  size_t ownedBytes() const { return ownedBytes_.load(std::memory_order_relaxed); }
  // Unmaps everything (the communicator is going away).
  void clear();

 private:
  const int64_t* sendbufBytes_;
  size_t dataBytes_ = 0;
  uint64_t rounds_ = 0;
  int rank_ = -1, nranks_ = 0;
  bool connected_ = false;
  std::unique_ptr<ShmSegment> mine_;
  std::atomic<size_t> ownedBytes_{0};
  std::vector<std::unique_ptr<ShmSegment>> peers_;  // by rank; null for self and not yet tried
  std::vector<unsigned char*> dataPtrs_;
  std::vector<std::atomic<uint64_t>*> arrivedPtrs_;
  std::vector<OpStamp*> stampPtrs_;
  std::vector<uint64_t*> inputPtrs_;
};

// The shared-memory name of a rank's area.
std::string directAreaName(uint64_t commHash, int rank);

}  // namespace weft
