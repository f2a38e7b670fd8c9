#include "sockets/random.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>

namespace weft {

bool randomBytes(void* buf, size_t len) {
  char* p = static_cast<char*>(buf);
  size_t left = len;
  while (left > 0) {
    ssize_t n = getrandom(p, left, 0);
    if (n > 0) {
      p += n;
      left -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;  // ENOSYS on very old kernels: fall back to the device
  }
  if (left == 0) return true;
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  while (left > 0) {
    ssize_t n = ::read(fd, p, left);
    if (n > 0) {
      p += n;
      left -= static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  ::close(fd);
  return left == 0;
}

}  // namespace weft
