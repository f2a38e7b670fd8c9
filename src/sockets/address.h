// IPv4 and IPv6 endpoints in one fixed-size union, so that they fit in a ncclUniqueId and in
// tables that cross the wire, and the parsing of NCCL_COMM_ID and NCCL_SOCKET_FAMILY values.
#pragma once
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

namespace weft {

// An IPv4 or IPv6 endpoint. Its bytes are copied verbatim into unique ids and address tables, so
// the size is fixed (that of sockaddr_in6) and unused bytes must be zero; all ranks of one job run
// the same build on the same architecture, so host byte order in sa_family is not a concern.
union SocketAddress {
  sockaddr sa;
  sockaddr_in v4;
  sockaddr_in6 v6;
};
static_assert(sizeof(SocketAddress) == 28, "SocketAddress travels on the wire and in the unique id");

// A zeroed address (family AF_UNSPEC).
SocketAddress emptySocketAddress();
bool socketAddressValid(const SocketAddress& a);  // AF_INET or AF_INET6
socklen_t socketAddressLength(const SocketAddress& a);
uint16_t socketAddressPort(const SocketAddress& a);
void setSocketAddressPort(SocketAddress* a, uint16_t port);
bool socketAddressEqual(const SocketAddress& a, const SocketAddress& b);
// "192.0.2.7:41000", "[fd00::2]:41000", "[fe80::1%eth0]:41000"; "<unset>" for an invalid one.
std::string socketAddressToString(const SocketAddress& a);

// Address families NCCL_SOCKET_FAMILY can ask for; kAny when unset.
enum class AddressFamily { kAny, kIPv4, kIPv6 };
// Parses NCCL_SOCKET_FAMILY's value ("AF_INET", "AF_INET6", case-insensitive; "" = any). Unknown
// values return false and leave *out at kAny.
bool parseAddressFamily(const std::string& text, AddressFamily* out);

// NCCL_COMM_ID's text taken apart, before any name is resolved.
struct HostPort {
  std::string host;  // without the brackets of "[fd00::2]:41000"
  std::string port;  // decimal digits, 1..65535
  bool bracketed = false;
};
// The syntax of parseHostPort alone: false with a reason when text is not "host:port" or
// "[IPv6-address]:port" with a port in 1..65535. Resolves nothing.
bool splitHostPort(const std::string& text, HostPort* out, std::string* why);

// Parses "host:port" as NCCL_COMM_ID accepts it: "192.0.2.7:41000", "[::1]:41000" or
// "node12:41000" (resolved with getaddrinfo, honouring family). False with a reason otherwise.
bool parseHostPort(const std::string& text, AddressFamily family, SocketAddress* out, std::string* why);

}  // namespace weft
