// NCCL_IB_HCA matching and the GID choice.
#include "transports/net/ib/ib_select.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>

namespace weft::net::ib {

namespace {

struct HcaEntry {
  std::string name;
  int port = -1;
};

std::vector<HcaEntry> parseEntries(const std::string& list) {
  std::vector<HcaEntry> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    std::string item = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? list.size() + 1 : comma + 1;
    if (item.empty()) continue;
    HcaEntry e;
    size_t colon = item.find(':');
    e.name = item.substr(0, colon);
    if (colon != std::string::npos) e.port = std::atoi(item.c_str() + colon + 1);
    out.push_back(e);
  }
  return out;
}

bool isMappedV4(const uint8_t* g) {
  static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return memcmp(g, prefix, sizeof(prefix)) == 0;
}

bool isZero(const uint8_t* g) {
  for (int i = 0; i < 16; ++i)
    if (g[i] != 0) return false;
  return true;
}

bool isLinkLocalV6(const uint8_t* g) { return g[0] == 0xfe && (g[1] & 0xc0) == 0x80; }

// Parses "addr/prefix" into 16 bytes (IPv4 as mapped) and a prefix length counted over them.
bool parseRange(const std::string& range, uint8_t net[16], int* bits) {
  size_t slash = range.find('/');
  if (slash == std::string::npos) return false;
  std::string addr = range.substr(0, slash);
  char* end = nullptr;
  long prefix = std::strtol(range.c_str() + slash + 1, &end, 10);
  if (end == range.c_str() + slash + 1 || *end != '\0' || prefix < 0) return false;
  memset(net, 0, 16);
  in_addr v4{};
  if (inet_pton(AF_INET, addr.c_str(), &v4) == 1) {
    if (prefix > 32) return false;
    net[10] = net[11] = 0xff;
    memcpy(net + 12, &v4, 4);
    *bits = 96 + int(prefix);
    return true;
  }
  if (inet_pton(AF_INET6, addr.c_str(), net) == 1 && prefix <= 128) {
    *bits = int(prefix);
    return true;
  }
  return false;
}

bool inRange(const uint8_t* g, const uint8_t* net, int bits) {
  for (int i = 0; i < bits; ++i) {
    int mask = 0x80 >> (i % 8);
    if ((g[i / 8] & mask) != (net[i / 8] & mask)) return false;
  }
  return true;
}

}  // namespace

bool hcaAdmits(const std::string& spec, const std::string& device, int port) {
  if (spec.empty()) return true;
  size_t at = 0;
  bool exclude = false, exact = false;
  if (at < spec.size() && spec[at] == '^') exclude = true, ++at;
  if (at < spec.size() && spec[at] == '=') exact = true, ++at;
  bool listed = false;
  for (const HcaEntry& e : parseEntries(spec.substr(at))) {
    bool nameOk = exact ? device == e.name : device.compare(0, e.name.size(), e.name) == 0;
    if (nameOk && (e.port < 0 || e.port == port)) listed = true;
  }
  return exclude ? !listed : listed;
}

int chooseGid(const std::vector<GidEntry>& table, const GidWant& want, std::string* why) {
  uint8_t net[16] = {};
  int bits = 0;
  if (!want.range.empty() && !parseRange(want.range, net, &bits)) {
    *why = "NCCL_IB_ADDR_RANGE=" + want.range + " is not an address/prefix";
    return -1;
  }
  int anyVersion = -1, wanted = -1;
  // Two passes for IPv6: global addresses first, link-local ones only when nothing else fits.
  for (int pass = 0; pass < 2 && wanted < 0; ++pass) {
    for (const GidEntry& e : table) {
      if (isZero(e.raw)) continue;
      bool v4 = isMappedV4(e.raw);
      if ((want.family == AF_INET) != v4) continue;
      if (!v4 && (pass == 0) == isLinkLocalV6(e.raw)) continue;
      if (bits > 0 && !inRange(e.raw, net, bits)) continue;
      if (e.roceVersion == want.roceVersion) {
        wanted = e.index;
        break;
      }
      if (anyVersion < 0) anyVersion = e.index;
    }
    if (want.family == AF_INET) break;
  }
  if (wanted >= 0) return wanted;
  if (anyVersion >= 0) return anyVersion;
  *why = std::string("no GID of family ") + (want.family == AF_INET ? "AF_INET" : "AF_INET6") +
         (want.range.empty() ? "" : " in " + want.range) +
         " (set NCCL_IB_GID_INDEX, NCCL_IB_ADDR_FAMILY or "
         "NCCL_IB_ADDR_RANGE, or give the interface an address)";
  return -1;
}

std::string gidToString(const uint8_t raw[16]) {
  char text[INET6_ADDRSTRLEN] = {};
  if (isMappedV4(raw))
    inet_ntop(AF_INET, raw + 12, text, sizeof(text));
  else
    inet_ntop(AF_INET6, raw, text, sizeof(text));
  return text;
}

}  // namespace weft::net::ib
