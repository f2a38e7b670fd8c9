// The built-in Socket network: TCP over the interfaces NCCL_SOCKET_IFNAME / NCCL_SOCKET_FAMILY
// admit, one device per interface. It is written as an ncclNet plugin of the newest ABI version
// and reached, like external plugins, through the loader's adapter (transports/net/plugin).
#pragma once
#include "transports/net/plugin/net_abi.h"

namespace weft::net::socketnet {

// The function table, name "Socket". init() re-reads the parameters (interfaces, helper threads
// and sockets per connection, link timeout); connections opened before keep their settings.
const ncclNet_v12_t* socketNetTable();

}  // namespace weft::net::socketnet
