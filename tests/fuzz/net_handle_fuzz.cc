// What the Socket network reads from peers (transports/net/socket/socket_handle.h): the connect
// handle that crosses the bootstrap from the listening rank, and the hello that opens each socket
// of a connection, and connect() on a handle as it arrives. The first byte picks which.
#include <cstdint>
#include <cstring>

#include "fuzz_input.h"
#include "transports/net/net_abi.h"
#include "transports/net/socket/socket_comm.h"
#include "transports/net/socket/socket_handle.h"
#include "transports/net/socket/socket_net.h"

using namespace weft;
using namespace weft::net::socketnet;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  if (in.byte() & 1) {
    Hello hello;
    in.take(&hello);
    if (helloAcceptable(hello) && (hello.nData < 1 || hello.nData > kMaxDataSockets || hello.index > hello.nData))
      fuzz::fail("a hello naming a socket outside its connection was accepted");
    return 0;
  }
  unsigned char handle[NCCL_NET_HANDLE_MAXSIZE];
  in.take(&handle);
  Handle h;
  if (!readSocketHandle(handle, sizeof(handle), &h)) return 0;
  if (h.magic != kHandleMagic || !socketAddressValid(h.addr)) fuzz::fail("a foreign handle was read");
  (void)socketAddressToString(h.addr);
  if (h.connectKey != 0) {
    // A handle that says a connection is already under way, which no connect() of this process
    // started: connect() must refuse it without touching anything (nor the network).
    void* comm = nullptr;
    if (socketNetTable()->connect(nullptr, 0, handle, &comm, nullptr) != ncclInvalidArgument || comm != nullptr)
      fuzz::fail("connect() took a handle with a connection this process never started");
  }
  // listen()'s own handle for that address reads back as the same address, not yet connecting.
  unsigned char mine[NCCL_NET_HANDLE_MAXSIZE];
  makeSocketHandle(h.addr, mine);
  Handle back;
  if (!readSocketHandle(mine, sizeof(mine), &back) || !socketAddressEqual(back.addr, h.addr) || back.connectKey != 0)
    fuzz::fail("a handle listen() wrote does not read back");
  return 0;
}
