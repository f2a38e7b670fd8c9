#include "topology/model.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>

namespace weft::topo {

namespace {

bool parseHexField(const std::string& s, size_t begin, size_t end, uint64_t maxValue, uint64_t* out) {
  if (begin >= end || end - begin > 8) return false;
  uint64_t v = 0;
  for (size_t i = begin; i < end; ++i) {
    char c = s[i];
    int d = (c >= '0' && c <= '9')   ? c - '0'
            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
            : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                     : -1;
    if (d < 0) return false;
    v = v * 16 + static_cast<uint64_t>(d);
  }
  if (v > maxValue) return false;
  *out = v;
  return true;
}

template <typename PciT>
PciT* findIn(std::vector<PciT>& list, BusId id) {
  for (PciT& p : list) {
    if (p.busId == id) return &p;
    if (PciT* found = findIn(p.children, id)) return found;
  }
  return nullptr;
}

bool pathTo(const std::vector<Pci>& list, BusId id, std::vector<BusId>* path) {
  for (const Pci& p : list) {
    if (p.busId == id) return true;
    path->push_back(p.busId);
    if (pathTo(p.children, id, path)) return true;
    path->pop_back();
  }
  return false;
}

}  // namespace

bool parseBusId(const std::string& text, BusId* out) {
  size_t dot = text.rfind('.');
  size_t colon2 = text.rfind(':');
  if (dot == std::string::npos || colon2 == std::string::npos || colon2 > dot) return false;
  size_t colon1 = text.rfind(':', colon2 == 0 ? 0 : colon2 - 1);
  bool hasDomain = colon1 != std::string::npos && colon1 < colon2;
  uint64_t domain = 0, bus, dev, fn;
  if (hasDomain && !parseHexField(text, 0, colon1, 0xffffffffull, &domain)) return false;
  size_t busBegin = hasDomain ? colon1 + 1 : 0;
  if (!parseHexField(text, busBegin, colon2, 0xff, &bus)) return false;
  if (!parseHexField(text, colon2 + 1, dot, 0x1f, &dev)) return false;
  if (!parseHexField(text, dot + 1, text.size(), 0x7, &fn)) return false;
  *out = domain << 16 | bus << 8 | dev << 3 | fn;
  return true;
}

std::string formatBusId(BusId id) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04" PRIx64 ":%02x:%02x.%x", id >> 16, static_cast<unsigned>((id >> 8) & 0xff),
                static_cast<unsigned>((id >> 3) & 0x1f), static_cast<unsigned>(id & 0x7));
  return buf;
}

uint32_t Pci::classCode() const {
  const char* s = pciClass.c_str();
  if (pciClass.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s += 2;
  size_t digits = std::char_traits<char>::length(s);
  uint32_t v = static_cast<uint32_t>(std::strtoul(s, nullptr, 16));
  if (digits <= 2) return v << 16;
  if (digits <= 4) return v << 8;
  return v;
}

PciKind Pci::kind() const {
  uint32_t c = classCode();
  if (gpu) return PciKind::kGpu;
  if (nic) return PciKind::kNic;
  if ((c >> 8) == 0x0604) return PciKind::kBridge;
  if (c == 0x068000) return PciKind::kNvSwitch;
  // Display controllers are GPUs only from the two vendors Weft drives (a VM's emulated VGA is
  // not); files that leave the vendor out (cloud topologies do) list only real GPUs.
  if ((c >> 16) == 0x03)
    return (vendor.empty() || vendor == "0x10de" || vendor == "0x1002") ? PciKind::kGpu : PciKind::kOther;
  if ((c >> 16) == 0x02) return PciKind::kNic;
  return PciKind::kOther;
}

const Pci* findPci(const Topology& t, BusId id) { return findPci(const_cast<Topology*>(&t), id); }

Pci* findPci(Topology* t, BusId id) {
  for (Cpu& cpu : t->cpus)
    if (Pci* p = findIn(cpu.pci, id)) return p;
  return nullptr;
}

const Cpu* cpuOfPci(const Topology& t, BusId id) {
  for (const Cpu& cpu : t.cpus)
    if (findIn(const_cast<std::vector<Pci>&>(cpu.pci), id)) return &cpu;
  return nullptr;
}

std::vector<BusId> pciAncestors(const Topology& t, BusId id) {
  std::vector<BusId> path;
  for (const Cpu& cpu : t.cpus) {
    if (pathTo(cpu.pci, id, &path)) return path;
    path.clear();
  }
  return path;
}

}  // namespace weft::topo
