#include "sockets/interfaces.h"

#include <ifaddrs.h>
#include <net/if.h>

#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "base/params.h"
#include "base/text.h"
#include "sockets/text.h"

namespace weft {

using sockets_detail::errnoString;

namespace {

bool isIPv6LinkLocal(const sockaddr_in6& a) {
  return a.sin6_addr.s6_addr[0] == 0xfe && (a.sin6_addr.s6_addr[1] & 0xc0) == 0x80;
}

}  // namespace

bool interfaceNameMatches(const std::string& specIn, const std::string& name) {
  std::string spec = trimBlanks(specIn);
  bool exclude = false, exact = false;
  if (!spec.empty() && spec[0] == '^') {
    exclude = true;
    spec.erase(0, 1);
  }
  if (!spec.empty() && spec[0] == '=') {
    exact = true;
    spec.erase(0, 1);
  }
  if (!exclude && !exact && spec.empty()) return true;
  bool matched = false;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string::npos) comma = spec.size();
    std::string entry = trimBlanks(spec.substr(pos, comma - pos));
    if (!entry.empty()) {
      if (exact ? name == entry : name.compare(0, entry.size(), entry) == 0) matched = true;
    }
    pos = comma + 1;
  }
  return exclude ? !matched : matched;
}

bool findInterfaces(const std::string& ifnameSpec, AddressFamily family, std::vector<NetInterface>* out,
                    std::string* why) {
  out->clear();
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    *why = "getifaddrs: " + errnoString(errno);
    return false;
  }
  struct Candidate {
    NetInterface iface;
    unsigned index;
  };
  std::vector<Candidate> all;  // one per interface name, best address so far
  for (ifaddrs* ifa = list; ifa; ifa = ifa->ifa_next) {
    if (!ifa->ifa_addr || !(ifa->ifa_flags & IFF_UP)) continue;
    int fam = ifa->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6) continue;
    if (family == AddressFamily::kIPv4 && fam != AF_INET) continue;
    if (family == AddressFamily::kIPv6 && fam != AF_INET6) continue;
    SocketAddress a = emptySocketAddress();
    if (fam == AF_INET) {
      memcpy(&a.v4, ifa->ifa_addr, sizeof(sockaddr_in));
    } else {
      memcpy(&a.v6, ifa->ifa_addr, sizeof(sockaddr_in6));
      if (isIPv6LinkLocal(a.v6)) continue;
    }
    setSocketAddressPort(&a, 0);
    std::string name = ifa->ifa_name;
    auto it = std::find_if(all.begin(), all.end(), [&](const Candidate& c) { return c.iface.name == name; });
    if (it == all.end()) {
      Candidate c;
      c.iface.name = name;
      c.iface.addr = a;
      c.iface.loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
      c.index = if_nametoindex(ifa->ifa_name);
      all.push_back(c);
    } else if (it->iface.addr.sa.sa_family == AF_INET6 && fam == AF_INET) {
      it->iface.addr = a;  // IPv4 wins: it is what a mixed cluster is most likely to route
    }
  }
  freeifaddrs(list);
  std::stable_sort(all.begin(), all.end(), [](const Candidate& x, const Candidate& y) { return x.index < y.index; });

  std::string spec = trimBlanks(ifnameSpec);
  if (!spec.empty()) {
    for (const Candidate& c : all)
      if (interfaceNameMatches(spec, c.iface.name)) out->push_back(c.iface);
    return true;
  }
  // Default: the interfaces other ranks can reach. Docker bridges are host-local and loopback is
  // only a last resort for single-host jobs.
  for (const Candidate& c : all)
    if (!c.iface.loopback && interfaceNameMatches("^docker,lo", c.iface.name)) out->push_back(c.iface);
  if (out->empty())
    for (const Candidate& c : all)
      if (c.iface.loopback || !interfaceNameMatches("^lo", c.iface.name)) out->push_back(c.iface);
  return true;
}

ncclResult_t selectInterface(NetInterface* out, std::string* why) {
  std::string spec = param::socketIfname();
  std::string famText = param::socketFamily();
  AddressFamily family;
  if (!parseAddressFamily(famText, &family))
    WEFT_WARN("NCCL_SOCKET_FAMILY=%s is not AF_INET or AF_INET6; using any family", famText.c_str());
  std::vector<NetInterface> found;
  if (!findInterfaces(spec, family, &found, why)) return ncclSystemError;
  if (!found.empty()) {
    *out = found[0];
    WEFT_TRACE(kLogBootstrap, "bootstrap: using interface %s (%s)", out->name.c_str(),
               socketAddressToString(out->addr).c_str());
    return ncclSuccess;
  }
  // Nothing matched: say what exists so the user can fix NCCL_SOCKET_IFNAME.
  std::vector<NetInterface> every;
  std::string avail;
  std::string ignored;
  if (findInterfaces("^=", AddressFamily::kAny, &every, &ignored)) {
    for (const NetInterface& i : every) {
      if (!avail.empty()) avail += ", ";
      avail += i.name + " (" + socketAddressToString(i.addr) + ")";
    }
  }
  if (avail.empty()) avail = "none";
  *why = "no usable network interface: NCCL_SOCKET_IFNAME=" + (spec.empty() ? std::string("<unset>") : spec) +
         " NCCL_SOCKET_FAMILY=" + (famText.empty() ? std::string("<unset>") : famText) +
         " match nothing that is up; interfaces up: " + avail;
  return spec.empty() && famText.empty() ? ncclSystemError : ncclInvalidArgument;
}
}  // namespace weft
