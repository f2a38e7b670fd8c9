// The choice of the network interface Weft's sockets bind to, under NCCL_SOCKET_IFNAME and
// NCCL_SOCKET_FAMILY.
#pragma once
#include <string>
#include <vector>

#include "nccl.h"
#include "sockets/address.h"

namespace weft {

// One usable address of one network interface.
struct NetInterface {
  std::string name;
  SocketAddress addr;
  bool loopback = false;
};

// True when interface `name` is admitted by an NCCL_SOCKET_IFNAME-style spec: a comma-separated
// list of name prefixes; a leading '^' turns it into a list to exclude; a leading '=' (after the
// '^' if both) makes the entries exact names instead of prefixes. An empty spec admits everything.
bool interfaceNameMatches(const std::string& spec, const std::string& name);

// Lists the interfaces that are up and admitted by ifnameSpec and family, one address each (IPv4
// preferred over IPv6 when both are allowed; IPv6 link-local addresses are skipped because they
// are ambiguous without a scope). With an empty spec the default applies: everything except
// loopback and docker*, falling back to loopback when nothing else is up. Fails (false, *why)
// when getifaddrs fails.
bool findInterfaces(const std::string& ifnameSpec, AddressFamily family, std::vector<NetInterface>* out,
                    std::string* why);

// The interface Weft's sockets bind to, chosen from param::socketIfname() and
// param::socketFamily(): the first of findInterfaces'. ncclSystemError / ncclInvalidArgument with a
// reason listing what is available when nothing matches.
ncclResult_t selectInterface(NetInterface* out, std::string* why);

}  // namespace weft
