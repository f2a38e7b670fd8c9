#include "transports/shm/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace weft {

size_t shmBytesFree() {
  struct statvfs st;
  if (statvfs("/dev/shm", &st) != 0) return SIZE_MAX;
  return size_t(st.f_bavail) * st.f_frsize;
}

ShmSegment::~ShmSegment() {
  if (linked_) unlink();
  if (data_ != nullptr) munmap(data_, size_);
}

ncclResult_t ShmSegment::create(const std::string& name, size_t bytes, std::string* why) {
  name_ = name;
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0 && errno == EEXIST) {
    // A leftover of a crashed process that drew the same random id: the name is ours now.
    shm_unlink(name.c_str());
    fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  }
  if (fd < 0) {
    *why = "shm_open(" + name + ") failed: " + strerror(errno);
    return ncclSystemError;
  }
  linked_ = true;
  // posix_fallocate reserves the pages now, so a full /dev/shm is an error here and not a SIGBUS
  // later in the middle of a collective.
  int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (rc != 0) {
    close(fd);
    unlink();
    size_t freeBytes = shmBytesFree();
    *why = "cannot reserve " + std::to_string(bytes) + " bytes in /dev/shm for " + name + ": " + strerror(rc) +
           " (/dev/shm has " + std::to_string(freeBytes) +
           " bytes free; containers often limit it: enlarge it, e.g. docker --shm-size, or lower NCCL_BUFFSIZE)";
    return ncclSystemError;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    unlink();
    *why = "mmap of " + name + " failed: " + strerror(errno);
    return ncclSystemError;
  }
  data_ = p;
  size_ = bytes;
  return ncclSuccess;
}

ncclResult_t ShmSegment::tryOpen(const std::string& name, size_t minBytes, bool* notYet, std::string* why) {
  *notYet = false;
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) {
    if (errno == ENOENT) {
      *notYet = true;
      return ncclSuccess;
    }
    *why = "shm_open(" + name + ") failed: " + strerror(errno);
    return ncclSystemError;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < minBytes) {
    close(fd);
    *notYet = true;
    return ncclSuccess;
  }
  size_t bytes = static_cast<size_t>(st.st_size);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    *why = "mmap of " + name + " failed: " + strerror(errno);
    return ncclSystemError;
  }
  name_ = name;
  data_ = p;
  size_ = bytes;
  return ncclSuccess;
}

void ShmSegment::unlink() {
  if (!unlinked_ && !name_.empty()) shm_unlink(name_.c_str());
  unlinked_ = true;
  linked_ = false;
}

}  // namespace weft
