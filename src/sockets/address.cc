#include "sockets/address.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netdb.h>

#include <algorithm>
#include <cstring>

#include "base/text.h"
#include "sockets/text.h"

namespace weft {

using sockets_detail::errnoString;
using sockets_detail::lower;

SocketAddress emptySocketAddress() {
  SocketAddress a;
  memset(&a, 0, sizeof(a));
  return a;
}

bool socketAddressValid(const SocketAddress& a) { return a.sa.sa_family == AF_INET || a.sa.sa_family == AF_INET6; }

socklen_t socketAddressLength(const SocketAddress& a) {
  return a.sa.sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
}

uint16_t socketAddressPort(const SocketAddress& a) {
  if (a.sa.sa_family == AF_INET) return ntohs(a.v4.sin_port);
  if (a.sa.sa_family == AF_INET6) return ntohs(a.v6.sin6_port);
  return 0;
}

void setSocketAddressPort(SocketAddress* a, uint16_t port) {
  if (a->sa.sa_family == AF_INET) a->v4.sin_port = htons(port);
  if (a->sa.sa_family == AF_INET6) a->v6.sin6_port = htons(port);
}

bool socketAddressEqual(const SocketAddress& a, const SocketAddress& b) {
  if (a.sa.sa_family != b.sa.sa_family) return false;
  if (a.sa.sa_family == AF_INET) return a.v4.sin_port == b.v4.sin_port && a.v4.sin_addr.s_addr == b.v4.sin_addr.s_addr;
  if (a.sa.sa_family == AF_INET6)
    return a.v6.sin6_port == b.v6.sin6_port && a.v6.sin6_scope_id == b.v6.sin6_scope_id &&
           memcmp(&a.v6.sin6_addr, &b.v6.sin6_addr, sizeof(in6_addr)) == 0;
  return false;
}

std::string socketAddressToString(const SocketAddress& a) {
  char host[INET6_ADDRSTRLEN + IF_NAMESIZE + 2] = {0};
  if (a.sa.sa_family == AF_INET) {
    inet_ntop(AF_INET, &a.v4.sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(ntohs(a.v4.sin_port));
  }
  if (a.sa.sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &a.v6.sin6_addr, host, INET6_ADDRSTRLEN);
    std::string h(host);
    if (a.v6.sin6_scope_id != 0) {
      char ifname[IF_NAMESIZE] = {0};
      // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on "%" + std::string here.
      h.push_back('%');
      h.append(if_indextoname(a.v6.sin6_scope_id, ifname) ? ifname : std::to_string(a.v6.sin6_scope_id));
    }
    std::string out = "[";
    out.append(h).append("]:").append(std::to_string(ntohs(a.v6.sin6_port)));
    return out;
  }
  return "<unset>";
}

bool parseAddressFamily(const std::string& text, AddressFamily* out) {
  *out = AddressFamily::kAny;
  std::string t = lower(trimBlanks(text));
  if (t.empty()) return true;
  if (t == "af_inet" || t == "inet" || t == "ipv4" || t == "4") {
    *out = AddressFamily::kIPv4;
    return true;
  }
  if (t == "af_inet6" || t == "inet6" || t == "ipv6" || t == "6") {
    *out = AddressFamily::kIPv6;
    return true;
  }
  return false;
}

bool splitHostPort(const std::string& textIn, HostPort* out, std::string* why) {
  std::string text = trimBlanks(textIn);
  std::string host, port;
  bool bracketed = false;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      *why = "'" + text + "' is not of the form [IPv6-address]:port";
      return false;
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
    bracketed = true;
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) {
      *why = "'" + text + "' has no port (expected host:port)";
      return false;
    }
    if (text.find(':') != colon) {
      *why = "'" + text + "' is ambiguous: write an IPv6 address as [address]:port";
      return false;
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty()) {
    *why = "'" + text + "' has an empty host";
    return false;
  }
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) < 1 || std::stoi(port) > 65535) {
    *why = "'" + text + "' has an invalid port (expected 1..65535)";
    return false;
  }
  out->host = host;
  out->port = port;
  out->bracketed = bracketed;
  return true;
}

bool parseHostPort(const std::string& textIn, AddressFamily family, SocketAddress* out, std::string* why) {
  const std::string text = trimBlanks(textIn);
  HostPort hp;
  if (!splitHostPort(text, &hp, why)) return false;
  const std::string& host = hp.host;
  const std::string& port = hp.port;
  const bool bracketed = hp.bracketed;
  addrinfo hints;
  memset(&hints, 0, sizeof(hints));
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_family = family == AddressFamily::kIPv4 ? AF_INET : family == AddressFamily::kIPv6 ? AF_INET6 : AF_UNSPEC;
  if (bracketed) {
    if (family == AddressFamily::kIPv4) {
      *why = "'" + text + "' is IPv6 but NCCL_SOCKET_FAMILY asks for IPv4";
      return false;
    }
    hints.ai_family = AF_INET6;
    hints.ai_flags = AI_NUMERICHOST;
  }
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    *why = "cannot resolve '" + host + "': " + (rc == EAI_SYSTEM ? errnoString(errno) : gai_strerror(rc));
    if (res) freeaddrinfo(res);
    return false;
  }
  // Prefer IPv4 when both are allowed, the same preference interface selection has.
  const addrinfo* pick = nullptr;
  for (const addrinfo* p = res; p; p = p->ai_next)
    if (p->ai_family == AF_INET && !pick) pick = p;
  if (!pick)
    for (const addrinfo* p = res; p; p = p->ai_next)
      if (p->ai_family == AF_INET6 && !pick) pick = p;
  if (!pick) {
    freeaddrinfo(res);
    *why = "'" + host + "' has no IPv4 or IPv6 address";
    return false;
  }
  *out = emptySocketAddress();
  memcpy(out, pick->ai_addr, std::min<size_t>(pick->ai_addrlen, sizeof(SocketAddress)));
  freeaddrinfo(res);
  return true;
}
}  // namespace weft
