// What the Socket network's peers send each other before any data: the handle listen() writes for
// the peer's connect() (it crosses the bootstrap from another process), and the hello that opens
// every socket of a connection. Both come from the network, so both are checked here, on bytes
// alone, before anything acts on them.
#pragma once
#include <cstddef>
#include <cstdint>

#include "sockets/address.h"

namespace weft::net::socketnet {

constexpr uint64_t kHandleMagic = 0x57656674536f636bull;  // "WeftSock"
constexpr uint64_t kHelloMagic = 0x5765667448656c6full;   // "WeftHelo"

// The handle's layout. The connecting side keeps its in-progress state under connectKey (the
// caller passes the one handle to every connect() call of a connection): 0 as listen() writes it,
// then a key into this process's table of connections being made, never a pointer, since the
// bytes came from a peer.
struct Handle {
  uint64_t magic;
  SocketAddress addr;
  uint64_t connectKey;
};

// Reads a handle of `bytes` bytes (at most NCCL_NET_HANDLE_MAXSIZE are looked at): false when it
// is too short or is not one a Socket network listen() wrote (its magic, an IPv4 or IPv6 address).
bool readSocketHandle(const void* handle, size_t bytes, Handle* out);

// First bytes on every socket of a connection: which connection and which of its sockets.
struct Hello {
  uint64_t magic;
  uint64_t connId;
  uint32_t index;  // 0 = control socket, 1..nData = data sockets
  uint32_t nData;
};
// True when an accepted socket's hello may be filed under its connection.
bool helloAcceptable(const Hello& hello);

}  // namespace weft::net::socketnet
