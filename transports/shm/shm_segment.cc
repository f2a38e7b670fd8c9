#include "transports/shm/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "transports/shm/fd_service.h"
#include "transports/shm/shm_memory.h"

namespace weft {
namespace {

// How long one tryOpen waits for the creator's answer once connected. It normally comes within
// microseconds; the bound only keeps a stalled creator from stalling the caller's progress loop.
constexpr int kAnswerWaitMs = 200;

std::string noRoom(size_t bytes, const std::string& name, const char* cause) {
  const MemoryRoom room = memoryRoom();
  std::string text = "cannot reserve " + std::to_string(bytes) + " bytes of shared memory for " + name + ": " + cause;
  if (room.bytes != UINT64_MAX) text += " (" + std::to_string(room.bytes) + " bytes available: " + room.source + ")";
  return text + "; lower NCCL_BUFFSIZE or RCCL_DDA_SENDBUF_BYTES, or give the job more memory";
}

}  // namespace

ShmSegment::~ShmSegment() {
  unlink();
  if (data_ != nullptr) munmap(data_, size_);
}

void ShmSegment::populate(size_t offset, size_t bytes) {
  if (data_ == nullptr || offset >= size_) return;
  bytes = std::min(bytes, size_ - offset);
  // Whole pages inside the range only: a page it shares with what lies before (a FIFO's headers,
  // which the peer may be writing) is left to fault in on its own.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t first = (offset + page - 1) / page * page;
  if (first >= offset + bytes) return;
  auto* begin = static_cast<unsigned char*>(data_) + first;
  const size_t len = offset + bytes - first;
#ifdef MADV_POPULATE_WRITE
  // One call for the whole range: faulting the pages in one by one costs several times more.
  madvise(begin, len, MADV_POPULATE_WRITE);
#endif
  // Then write each page's first byte back as it is (nobody else writes there yet: this runs
  // before the segment carries any message). Before kernel 5.14 that is what maps the pages. After
  // the madvise it still matters under a hypervisor that shadows the guest's page tables (such as
  // the 2-core development VM): the first access through each page of a new mapping traps to it,
  // populated or not, at about 7 us a page. Left to the messages, a 2-rank 64 KiB AllGather paid
  // that for its first 32 calls, 100-300 us each, until its spread payloads had visited every
  // position of the FIFO (docs/architecture.md, "Shared-memory transport"); here it is paid once,
  // when the connection is made. On other machines the loop costs tens of nanoseconds a page.
  for (size_t at = 0; at < len; at += page) {
    volatile unsigned char* b = begin + at;
    *b = *b;
  }
}

ncclResult_t ShmSegment::create(const std::string& name, size_t bytes, int peers, std::string* why) {
  name_ = name;
  // Reserving more than there is would not fail: the OOM killer would end some process instead.
  const MemoryRoom room = memoryRoom();
  if (bytes > room.bytes) {
    *why = noRoom(bytes, name, "not enough memory");
    return ncclSystemError;
  }
  // The memfd's own name shows in /proc/<pid>/fd and /proc/<pid>/maps, which helps whoever looks.
  const int fd = memfd_create(name.c_str() + (name[0] == '/' ? 1 : 0), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    *why = "memfd_create for shared memory segment " + name + " failed: " + strerror(errno);
    return ncclSystemError;
  }
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    *why = noRoom(bytes, name, strerror(errno));
    close(fd);
    return ncclSystemError;
  }
  // Reserve every page now, so that running out is an error here and not a SIGBUS in the middle of a
  // collective later.
  if (fallocate(fd, 0, 0, static_cast<off_t>(bytes)) != 0) {
    *why = noRoom(bytes, name, strerror(errno));
    close(fd);
    return ncclSystemError;
  }
  // Nobody, peers included, may resize it under a mapping (shrinking would SIGBUS the others).
  (void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    *why = "mmap of shared memory segment " + name + " (" + std::to_string(bytes) +
           " bytes) failed: " + strerror(errno);
    close(fd);
    return ncclSystemError;
  }
  if (peers > 0) {
    offer_ = offerSegmentFd(name, fd, bytes, peers, why);
    if (offer_ == 0) {
      munmap(p, bytes);
      close(fd);
      return ncclSystemError;
    }
  }
  close(fd);  // the mapping, and the service's copy while it offers it, keep the memory
  data_ = p;
  size_ = bytes;
  return ncclSuccess;
}

ncclResult_t ShmSegment::tryOpen(const std::string& name, size_t minBytes, bool* notYet, std::string* why) {
  *notYet = false;
  int fd = -1;
  uint64_t offered = 0;
  switch (fetch_.step(name, kAnswerWaitMs, &fd, &offered, why)) {
    case FdFetch::State::kNotYet: *notYet = true; return ncclSuccess;
    case FdFetch::State::kFailed: return ncclSystemError;
    case FdFetch::State::kGot: break;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    *why = "fstat of shared memory segment " + name + " failed: " + strerror(errno);
    close(fd);
    return ncclSystemError;
  }
  const size_t bytes = static_cast<size_t>(st.st_size);
  if (bytes < minBytes || bytes != offered) {
    *why = "shared memory segment " + name + " has " + std::to_string(bytes) + " bytes, expected at least " +
           std::to_string(minBytes);
    close(fd);
    return ncclSystemError;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    *why = "mmap of shared memory segment " + name + " (" + std::to_string(bytes) +
           " bytes) failed: " + strerror(errno);
    return ncclSystemError;
  }
  name_ = name;
  data_ = p;
  size_ = bytes;
  return ncclSuccess;
}

void ShmSegment::unlink() {
  withdrawSegmentFd(offer_);
  offer_ = 0;
  fetch_.reset();
}

}  // namespace weft
