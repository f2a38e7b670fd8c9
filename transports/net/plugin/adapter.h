// Adapters from each ncclNet_vN function table (N = 8..12) to weft::net::Network: the one place
// that knows how the versions differ (argument lists, property layouts, contexts).
#pragma once
#include <memory>
#include <string>

#include "transports/net/network.h"

namespace weft::net {

// A Network over `table`, which must be the ncclNet_v<version>_t that a plugin exports (or a
// built-in table). Calls the table's init; on failure returns null with *why saying what failed.
// origin ("built-in", a library path) appears in messages. The table must outlive the Network.
// events: a built-in network's wake-up hooks (null for plugins).
std::unique_ptr<Network> adaptPlugin(int version, const void* table, const std::string& origin, std::string* why,
                                     const ProgressEvents* events = nullptr);

}  // namespace weft::net
