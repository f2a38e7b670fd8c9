// A POSIX shared-memory segment: created by one rank, opened by its peers, unlinked as soon as
// every peer has mapped it so that a crash or kill -9 leaves nothing behind in /dev/shm.
#pragma once
#include <cstddef>
#include <string>

#include "nccl.h"

namespace weft {

class ShmSegment {
 public:
  ShmSegment() = default;
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // Creates name with `bytes` bytes, zero-filled. Replaces a stale segment of the same name.
  // Fails with a message naming /dev/shm's free space when the segment does not fit.
  ncclResult_t create(const std::string& name, size_t bytes, std::string* why);
  // Opens an existing segment. *notYet is set (and ncclSuccess returned) when it does not exist yet
  // or is still smaller than minBytes (its creator is between shm_open and ftruncate).
  ncclResult_t tryOpen(const std::string& name, size_t minBytes, bool* notYet, std::string* why);
  // Removes the name (the mapping stays valid). Safe to call twice, and from the opening side.
  void unlink();

  void* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
  std::string name_;
  bool linked_ = false;    // we created the name and must remove it
  bool unlinked_ = false;  // the name is gone already
};

// Bytes free in /dev/shm, or SIZE_MAX when it cannot be determined.
size_t shmBytesFree();

}  // namespace weft
