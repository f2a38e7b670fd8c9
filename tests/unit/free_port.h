// A TCP port on the loopback address that nothing listens on, for the bootstrap tests: bound
// once to learn a free number, then released.
#pragma once
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sockets/socket.h"

namespace weft {

inline int freeTcpPort(int family) {
  int fd = socket(family, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  SocketAddress a = emptySocketAddress();
  a.sa.sa_family = static_cast<sa_family_t>(family);
  if (family == AF_INET)
    a.v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  else
    a.v6.sin6_addr = in6addr_loopback;
  if (bind(fd, &a.sa, socketAddressLength(a)) != 0) {
    close(fd);
    return -1;
  }
  socklen_t len = sizeof(a);
  getsockname(fd, &a.sa, &len);
  close(fd);
  return socketAddressPort(a);
}

}  // namespace weft
