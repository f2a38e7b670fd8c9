// The built-in Socket network: TCP over the interfaces NCCL_SOCKET_IFNAME / NCCL_SOCKET_FAMILY
// admit, one device per interface. It is written as an ncclNet plugin of the newest ABI version
// and reached, like external plugins, through the loader's adapter (transports/net/plugin).
#pragma once
#include "sockets/socket.h"
#include "transports/net/net_abi.h"
#include "transports/net/network.h"

namespace weft::net::socketnet {

// The function table, name "Socket". init() re-reads the parameters (interfaces, helper threads
// and sockets per connection, link timeout); connections opened before keep their settings.
const ncclNet_v12_t* socketNetTable();
// Its wake-up hooks for the proxy (socket_comm.cc).
const ProgressEvents* socketProgressEvents();

// Writes the handle listen() would write for a listener at addr (tests aim connect() at peers
// that refuse or never answer).
void makeSocketHandle(const SocketAddress& addr, void* handle);

}  // namespace weft::net::socketnet
