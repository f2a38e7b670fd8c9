// The host's TCP stack, measured over loopback: what the Socket network costs per byte and per
// message on this host. Every byte it moves is copied into the kernel by the sender and out by the
// receiver, on the host's own cores, so a connection between two threads of one process meets the
// same copies (and wake-ups) as a connection between hosts meets on each end. A slower link than
// that is the device's speed (tuner_setup.cc takes the smaller of the two).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "tuning/calibration_probes.h"

namespace weft {
namespace probes {
namespace {

// A connected pair over 127.0.0.1, each end with send and receive timeouts so that no probe
// waits past its deadline. Empty (both -1) when this process may not open one: no loopback in
// its network namespace, or a sandbox that forbids sockets.
struct LoopbackPair {
  int a = -1, b = -1;
  LoopbackPair() {
    const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener < 0) return;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && listen(listener, 1) == 0 &&
        getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      a = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (a >= 0 && connect(a, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0)
        b = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    }
    close(listener);
    if (a < 0 || b < 0) {
      reset();
      return;
    }
    const timeval deadline{0, 50 * 1000};
    const int one = 1;
    for (int fd : {a, b}) {
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &deadline, sizeof deadline);
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &deadline, sizeof deadline);
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
  }
  ~LoopbackPair() { reset(); }
  LoopbackPair(const LoopbackPair&) = delete;
  LoopbackPair& operator=(const LoopbackPair&) = delete;
  bool ok() const { return a >= 0 && b >= 0; }
  void reset() {
    if (a >= 0) close(a);
    if (b >= 0) close(b);
    a = b = -1;
  }
};

// Moves exactly n bytes (a timeout or a closed peer is a failure).
bool sendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0) return false;
    p += k;
    n -= size_t(k);
  }
  return true;
}
bool recvAll(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t k = recv(fd, p, n, 0);
    if (k <= 0) return false;
    p += k;
    n -= size_t(k);
  }
  return true;
}

}  // namespace

// One direction, one connection, the receiver on a thread of its own: 4 MiB in 256 KiB sends,
// as the Socket network sends a FIFO slot's worth at a time.
double tcpGBps() {
  constexpr size_t kChunk = 256 * 1024, kTotal = 4 * 1024 * 1024;
  LoopbackPair pair;
  if (!pair.ok()) return 0;
  std::vector<char> out(kChunk, 1), in(kChunk);
  bool received = false;
  const auto t0 = Clock::now();
  std::thread reader([&] {
    size_t got = 0;
    while (got < kTotal && recvAll(pair.b, in.data(), kChunk)) got += kChunk;
    received = got == kTotal;
  });
  bool sent = true;
  for (size_t put = 0; put < kTotal && sent; put += kChunk) sent = sendAll(pair.a, out.data(), kChunk);
  if (!sent) shutdown(pair.a, SHUT_RDWR);  // the reader stops at once instead of at its timeout
  reader.join();
  const double us = usSince(t0);
  return sent && received ? double(kTotal) / us / 1e3 : -1;
}

// Half the round trip of an 8-byte message between two threads that block in recv, as a network
// hop's small message is: it includes the kernel's wake-up of the receiver.
double tcpLatUs() {
  constexpr int kRounds = 100;
  LoopbackPair pair;
  if (!pair.ok()) return 0;
  bool echoed = true;
  std::thread echo([&] {
    char m[8];
    for (int i = 0; i < kRounds && echoed; ++i) echoed = recvAll(pair.b, m, sizeof m) && sendAll(pair.b, m, sizeof m);
  });
  char m[8] = {1};
  bool ok = true;
  const auto t0 = Clock::now();
  for (int i = 0; i < kRounds && ok; ++i) ok = sendAll(pair.a, m, sizeof m) && recvAll(pair.a, m, sizeof m);
  const double us = usSince(t0);
  if (!ok) shutdown(pair.a, SHUT_RDWR);
  echo.join();
  return ok && echoed ? us / kRounds / 2 : -1;
}

}  // namespace probes
}  // namespace weft
