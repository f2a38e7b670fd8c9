// Accepting the one connection a caller waits for on a listener that anyone can reach. Every
// connection that arrives is read side by side, as far as its bytes have come, so a stranger that
// connects and stays silent (a port scanner, a stale peer of another job whose port number was
// reused) costs nothing but its own slot: it is dropped after its own short deadline and never
// holds the wait for the real peer.
#pragma once
#include <cstddef>
#include <functional>
#include <string>

#include "sockets/socket.h"

namespace weft {

struct IntakeOptions {
  size_t helloBytes = 0;                              // what the real peer sends first
  std::function<bool(const void* hello)> isExpected;  // true: this is the peer waited for
  int64_t strangerMs = 5000;                          // how long one connection may take to say it
};

// Waits until a connection on `listener` has sent helloBytes that isExpected accepts, or the
// deadline passes, or cancelFd fires. *out gets that connection (its hello already read, into
// `hello`); connections that send something else, close early or stay silent past strangerMs
// are dropped, and *dropped (when given) counts them for the caller's message.
IoStatus acceptIntroduced(const Socket& listener, const IntakeOptions& opts, Deadline deadline, int cancelFd,
                          Socket* out, void* hello, int* dropped, std::string* detail);

}  // namespace weft
