// How a shared-memory segment's descriptor travels between processes: over a Linux *abstract*
// Unix-domain socket named after the segment ("@weft-shm/weft-..."). An abstract name lives exactly
// as long as the socket bound to it, so nothing is left on any file system, even after SIGKILL, and
// nothing depends on /dev/shm. The creator's side is fd_service.h; this file holds the address, the
// one message the creator sends, and the fetching side.
#pragma once
#include <sys/socket.h>
#include <sys/un.h>

#include <cstdint>
#include <string>

namespace weft {

// The abstract address of a segment name, as /proc/net/unix shows it without the leading '@'.
std::string shmSocketName(const std::string& segmentName);
// Fills addr with the abstract address; false (with *why) when the name does not fit.
bool shmSocketAddress(const std::string& segmentName, sockaddr_un* addr, socklen_t* len, std::string* why);

// The one message the creator sends on each accepted connection; the descriptor rides along as
// SCM_RIGHTS when status is kOffered.
struct FdOffer {
  static constexpr uint32_t kMagic = 0x4d485357;  // "WSHM"
  enum Status : uint32_t { kOffered = 0, kRefusedUid = 1 };
  uint32_t magic = kMagic;
  uint32_t status = kOffered;
  uint64_t bytes = 0;
};

// Appended to a timeout while a segment was never reached: the abstract socket exists only in the
// creator's network namespace.
inline constexpr const char* kShmReachHint =
    "ranks on one host must share a network namespace to use shared memory (or set NCCL_SHM_DISABLE=1)";

// The fetching side of one segment. step() never blocks longer than waitMs: a connection whose
// offer has not arrived yet is kept and continued on the next call, so a slow creator is never
// asked twice.
class FdFetch {
 public:
  enum class State { kNotYet, kGot, kFailed };
  FdFetch() = default;
  ~FdFetch() { reset(); }
  FdFetch(const FdFetch&) = delete;
  FdFetch& operator=(const FdFetch&) = delete;

  // kNotYet: nobody offers the name yet (or the creator withdrew it before answering);
  // kGot: *fd (close-on-exec, ours to close) and *bytes as the creator announced them;
  // kFailed: *why says what (refused, offered by another user, a socket error).
  State step(const std::string& name, int waitMs, int* fd, uint64_t* bytes, std::string* why);
  void reset();
  // A connection waits for its answer.
  bool pending() const { return sock_ >= 0; }

 private:
  State receive(const std::string& name, int* fd, uint64_t* bytes, std::string* why);
  int sock_ = -1;
};

}  // namespace weft
