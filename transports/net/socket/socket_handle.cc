#include "transports/net/socket/socket_handle.h"

#include <cstring>

#include "transports/net/socket/socket_comm.h"

namespace weft::net::socketnet {

bool readSocketHandle(const void* handle, size_t bytes, Handle* out) {
  if (handle == nullptr || bytes < sizeof(Handle)) return false;
  memcpy(out, handle, sizeof(Handle));
  return out->magic == kHandleMagic && socketAddressValid(out->addr);
}

bool helloAcceptable(const Hello& hello) {
  return hello.magic == kHelloMagic && hello.nData >= 1 && hello.nData <= kMaxDataSockets && hello.index <= hello.nData;
}

}  // namespace weft::net::socketnet
