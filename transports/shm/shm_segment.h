// A shared-memory segment: memory made by one rank (a memfd, never a file in /dev/shm), fetched
// by its peers by name through the creator's per-process service (fd_service.h, fd_passing.h). The
// name is an abstract Unix socket that lives only while the creator offers it: until the peers it
// expects have fetched it, unlink() or the creator's death. Nothing outlives the processes, even
// after SIGKILL, and a host without /dev/shm (or with a small one) works the same.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "nccl.h"
#include "transports/shm/fd_passing.h"

namespace weft {

class ShmSegment {
 public:
  ShmSegment() = default;
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // Creates `bytes` zero-filled bytes, all reserved now (so that no SIGBUS can come later), and
  // offers them under `name` to `peers` fetches (0: nobody; the name is never published). Fails
  // with a message naming the bytes, the name and the memory available when they cannot be had.
  ncclResult_t create(const std::string& name, size_t bytes, int peers, std::string* why);
  // Fetches a segment by name. *notYet is set (and ncclSuccess returned) while nobody offers it;
  // never blocks for long: a fetch in flight is continued by the next call on this object. Keep
  // the object until the segment is usable: every fetch uses up one of the creator's `peers`, so
  // fetching again from a new object could leave a later peer without it. A segment smaller than
  // minBytes, or one offered by another user, is an error.
  ncclResult_t tryOpen(const std::string& name, size_t minBytes, bool* notYet, std::string* why);
  // The creator withdraws the name now (the mapping stays valid); on the fetching side it drops a
  // fetch in flight. Safe to call twice.
  void unlink();
  // A fetch is in flight: the creator offers the name and has not answered yet.
  bool fetching() const { return fetch_.pending(); }

  // Maps the whole pages of [offset, offset + bytes) in this process's view now, writable, and
  // touches each, rather than page by page on first touch (the pages themselves exist from
  // create). For memory every page of which the hot path will walk soon: a minor fault costs
  // about as much as copying the page. Only before the segment carries data: it writes each
  // page's first byte back as it is.
  void populate(size_t offset, size_t bytes);

  void* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
  std::string name_;
  uint64_t offer_ = 0;  // the service's handle while we offer the name
  FdFetch fetch_;
};

}  // namespace weft
