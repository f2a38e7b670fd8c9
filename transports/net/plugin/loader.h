// The process-wide set of networks: NCCL_NET_PLUGIN's external plugin (if any) and Weft's
// built-in networks, each behind weft::net::Network. selectNetwork (network.h) loads them on first
// use, under a lock, and keeps them for the life of the process.
#pragma once
#include <string>
#include <vector>

namespace weft::net {

// One line per network considered: what was loaded (name, origin, ABI version, devices) and what
// was refused and why. Loads the networks if that has not happened yet.
std::vector<std::string> networkReport();

// Unloads every network (plugins are finalized and dlclose'd) so that the next selectNetwork()
// reads NCCL_NET_PLUGIN again. For tests: no connection of any network may still be open.
void resetNetworksForTesting();

}  // namespace weft::net
