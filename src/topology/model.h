// Weft's model of one host's topology, shaped like NCCL's topology XML so that NCCL_TOPO_FILE and
// NCCL_TOPO_DUMP_FILE map onto it element for element:
//   system > cpu (one per NUMA node) > pci (bridges nest) > gpu > nvlink
//                                                          > nic > net
//            cpu > nic > net (a NIC with no PCI device, e.g. a virtual one)
// Attributes Weft does not interpret and elements it does not know (c2c, pcilink, ...) are kept
// verbatim in `extra`, so a file that is loaded and dumped again loses nothing.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "topology/xml.h"

namespace weft::topo {

// What Weft did not interpret, written back after the known attributes and children.
struct Extras {
  std::vector<XmlAttr> attrs;
  std::vector<XmlElement> children;
};

// A PCI address "dddd:bb:dd.f" packed as domain<<16 | bus<<8 | device<<3 | function; domains wider
// than 16 bits (some VMs use them) keep their upper bits above bit 32.
using BusId = uint64_t;
inline constexpr BusId kNoBusId = ~0ull;
// Parses "dddd:bb:dd.f" or "bb:dd.f" (hex, either case); false when text is not a bus id.
bool parseBusId(const std::string& text, BusId* out);
// "dddd:bb:dd.f" in lower case, the form NCCL writes.
std::string formatBusId(BusId id);

struct Net {                         // <net>: one port of a NIC as the network layer sees it
  std::string name;                  // "mlx5_0", "eth0" ("" = not given)
  int dev = -1;                      // the network device index (required by NCCL's reader)
  std::optional<int64_t> speedMbps;  // speed
  std::optional<int> port;
  std::optional<double> latency;  // microseconds
  std::string guid;               // "0x..." ("" = not given)
  std::optional<int> maxconn, gdr, coll;
  Extras extra;
};

struct Nic {  // <nic>
  std::vector<Net> nets;
  Extras extra;
};

struct NvLink {        // <nvlink>: count links from the parent GPU to target
  std::string target;  // the peer's bus id text (a GPU, an NVSwitch or a CPU)
  int count = 1;
  std::string tclass;  // the peer's PCI class, e.g. 0x030200 or 0x068000 (NVSwitch)
  Extras extra;
};

struct Gpu {     // <gpu>
  int dev = -1;  // the GPU runtime's device index
  std::optional<int> sm, rank, gdr;
  std::vector<NvLink> nvlinks;
  Extras extra;
};

enum class PciKind { kBridge, kGpu, kNic, kNvSwitch, kOther };

struct Pci {  // <pci>
  BusId busId = kNoBusId;
  std::string pciClass;   // as written, e.g. "0x060400"; classCode() is its value
  std::string linkSpeed;  // "16.0 GT/s PCIe" ("" = not given)
  std::optional<int> linkWidth;
  std::string vendor, device, subsystemVendor, subsystemDevice;  // "0x10de" ("" = not given)
  std::optional<Gpu> gpu;
  std::optional<Nic> nic;
  std::vector<Pci> children;
  Extras extra;

  // The 24-bit class code; a short form such as "0x03" (NCCL writes it when it knows only the
  // base class) is widened to 0x030000.
  uint32_t classCode() const;
  PciKind kind() const;
};

struct Cpu {  // <cpu>: one NUMA node
  int numaId = -1;
  std::string hostHash;  // host_hash as written ("" = not given; NCCL recomputes it on load)
  std::string affinity;  // Linux cpumap form: comma-separated 32-bit hex words, highest first
  std::string arch, vendor;
  std::optional<int> familyId, modelId;
  std::vector<Pci> pci;
  std::vector<Nic> nics;
  Extras extra;
};

struct Topology {  // <system>
  int version = 1;
  std::string name;  // ("" = not given)
  std::vector<Cpu> cpus;
  Extras extra;
};

// Lookups over the whole tree; nullptr when absent.
const Pci* findPci(const Topology& t, BusId id);
Pci* findPci(Topology* t, BusId id);
// The cpu (NUMA node) whose subtree holds the device, or nullptr.
const Cpu* cpuOfPci(const Topology& t, BusId id);
// The bridges above a device, nearest the CPU first (the device itself is not included).
std::vector<BusId> pciAncestors(const Topology& t, BusId id);

}  // namespace weft::topo
