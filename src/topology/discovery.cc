#include "topology/discovery.h"

#include <sys/utsname.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>

#include "base/log.h"

namespace weft::topo {

namespace {

// hwloc declares the PCI attributes inside its attribute union, which scopes them there in C++.
using PciAttr = hwloc_obj_attr_u::hwloc_pcidev_attr_s;

constexpr unsigned kVendorNvidia = 0x10de;
constexpr unsigned kVendorAmd = 0x1002;

struct BitmapDeleter {
  void operator()(hwloc_bitmap_s* b) const { hwloc_bitmap_free(b); }
};
using Bitmap = std::unique_ptr<hwloc_bitmap_s, BitmapDeleter>;

std::string hex4(unsigned v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%04x", v);
  return buf;
}

BusId busIdOf(const PciAttr& a) {
  return static_cast<BusId>(a.domain) << 16 | static_cast<BusId>(a.bus) << 8 | static_cast<BusId>(a.dev) << 3 | a.func;
}

// The first line of a sysfs file, "" when there is none (hwloc XML or synthetic machines).
std::string sysfsLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// NCCL writes "arm64" and "ppc64" where the kernel says aarch64 and ppc64le.
std::string ncclArch(const char* machine) {
  if (machine == nullptr) return "";
  if (std::strcmp(machine, "aarch64") == 0) return "arm64";
  if (std::strncmp(machine, "ppc64", 5) == 0) return "ppc64";
  return machine;
}

enum class Keep { kNo, kGpu, kNic, kNvSwitch };

Keep classify(const PciAttr& a) {
  unsigned base = a.class_id >> 8;
  if (base == 0x03 && (a.vendor_id == kVendorNvidia || a.vendor_id == kVendorAmd)) return Keep::kGpu;
  if (base == 0x02) return Keep::kNic;  // Ethernet 0x0200, InfiniBand 0x0207, ...
  if (a.class_id == 0x0680 && a.vendor_id == kVendorNvidia) return Keep::kNvSwitch;
  return Keep::kNo;
}

class Walker {
 public:
  Walker(hwloc_topology_t topo, Discovery* d) : topo_(topo), d_(d), thisSystem_(hwloc_topology_is_thissystem(topo)) {}

  void run() {
    buildCpus();
    walkNormal(hwloc_get_root_obj(topo_));
  }

 private:
  void buildCpus() {
    hwloc_obj_t root = hwloc_get_root_obj(topo_);
    const char* machine = hwloc_obj_get_info_by_name(root, "Architecture");
    utsname u{};
    std::string arch = ncclArch(machine != nullptr ? machine : (thisSystem_ && uname(&u) == 0 ? u.machine : nullptr));
    for (hwloc_obj_t numa = nullptr; (numa = hwloc_get_next_obj_by_type(topo_, HWLOC_OBJ_NUMANODE, numa)) != nullptr;) {
      Cpu c;
      c.numaId = static_cast<int>(numa->os_index);
      c.affinity = cpumapString(numa->cpuset);
      c.arch = arch;
      hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo_, HWLOC_OBJ_PACKAGE, numa);
      if (pkg == nullptr && numa->cpuset != nullptr)
        pkg = hwloc_get_next_obj_covering_cpuset_by_type(topo_, numa->cpuset, HWLOC_OBJ_PACKAGE, nullptr);
      if (pkg != nullptr) {
        if (const char* v = hwloc_obj_get_info_by_name(pkg, "CPUVendor")) c.vendor = v;
        if (const char* f = hwloc_obj_get_info_by_name(pkg, "CPUFamilyNumber")) c.familyId = std::atoi(f);
        if (const char* m = hwloc_obj_get_info_by_name(pkg, "CPUModelNumber")) c.modelId = std::atoi(m);
      }
      d_->topology.cpus.push_back(std::move(c));
    }
  }

  // The cpu entry for devices attached below a normal object: its first NUMA node.
  Cpu* cpuFor(hwloc_obj_t normal) {
    int numa = normal->nodeset != nullptr ? hwloc_bitmap_first(normal->nodeset) : -1;
    for (Cpu& c : d_->topology.cpus)
      if (c.numaId == numa) return &c;
    return d_->topology.cpus.empty() ? nullptr : &d_->topology.cpus.front();
  }

  void walkNormal(hwloc_obj_t obj) {
    if (obj->io_arity > 0) {
      Cpu* cpu = cpuFor(obj);
      if (cpu != nullptr)
        for (hwloc_obj_t io = obj->io_first_child; io != nullptr; io = io->next_sibling) convertIo(io, &cpu->pci);
    }
    for (hwloc_obj_t c = obj->first_child; c != nullptr; c = c->next_sibling) walkNormal(c);
  }

  void fillLink(Pci* p) {
    if (!thisSystem_) return;
    std::string dir = "/sys/bus/pci/devices/" + formatBusId(p->busId) + "/";
    p->linkSpeed = sysfsLine(dir + "current_link_speed");
    std::string width = sysfsLine(dir + "current_link_width");
    if (!width.empty()) p->linkWidth = std::atoi(width.c_str());
  }

  // Converts one I/O object into out; host bridges vanish (their children hang off the CPU, as
  // in NCCL's files) and so do bridges with nothing Weft keeps below them.
  void convertIo(hwloc_obj_t io, std::vector<Pci>* out) {
    if (io->type == HWLOC_OBJ_BRIDGE && io->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) {
      for (hwloc_obj_t c = io->io_first_child; c != nullptr; c = c->next_sibling) convertIo(c, out);
      return;
    }
    if (io->type == HWLOC_OBJ_BRIDGE) {
      const PciAttr& a = io->attr->bridge.upstream.pci;
      Pci p;
      p.busId = busIdOf(a);
      p.pciClass = hex4(a.class_id) + "00";
      p.vendor = hex4(a.vendor_id);
      p.device = hex4(a.device_id);
      p.subsystemVendor = hex4(a.subvendor_id);
      p.subsystemDevice = hex4(a.subdevice_id);
      fillLink(&p);
      for (hwloc_obj_t c = io->io_first_child; c != nullptr; c = c->next_sibling) convertIo(c, &p.children);
      if (p.children.empty()) return;
      ++d_->host.pciBridges;
      out->push_back(std::move(p));
      return;
    }
    if (io->type != HWLOC_OBJ_PCI_DEVICE) return;
    const PciAttr& a = io->attr->pcidev;
    Keep keep = classify(a);
    if (keep == Keep::kNo) return;
    Pci p;
    p.busId = busIdOf(a);
    p.pciClass = hex4(a.class_id) + "00";
    p.vendor = hex4(a.vendor_id);
    p.device = hex4(a.device_id);
    p.subsystemVendor = hex4(a.subvendor_id);
    p.subsystemDevice = hex4(a.subdevice_id);
    fillLink(&p);
    if (keep == Keep::kGpu) ++d_->host.gpus;
    if (keep == Keep::kNvSwitch) ++d_->host.nvswitches;
    if (keep == Keep::kNic) {
      ++d_->host.nics;
      addNets(io, &p);
    }
    out->push_back(std::move(p));
  }

  // A NIC's ports as the OS names them: RDMA devices (mlx5_0) when there are any, since those are
  // what an InfiniBand/RoCE transport opens, else network interfaces (eth0). dev numbers follow
  // discovery order; a network plugin's own numbering replaces them when it loads.
  void addNets(hwloc_obj_t pci, Pci* p) {
    std::vector<std::string> fabric, network;
    for (hwloc_obj_t os = pci->io_first_child; os != nullptr; os = os->next_sibling) {
      if (os->type != HWLOC_OBJ_OS_DEVICE || os->name == nullptr) continue;
      if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) fabric.push_back(os->name);
      if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK) network.push_back(os->name);
    }
    const std::vector<std::string>& names = fabric.empty() ? network : fabric;
    if (names.empty()) return;
    p->nic.emplace();
    for (const std::string& n : names) {
      Net net;
      net.name = n;
      net.dev = nextNetDev_++;
      p->nic->nets.push_back(std::move(net));
    }
  }

  hwloc_topology_t topo_;
  Discovery* d_;
  bool thisSystem_;
  int nextNetDev_ = 0;
};

std::string cpuListString(hwloc_const_bitmap_t set) {
  char* s = nullptr;
  if (hwloc_bitmap_list_asprintf(&s, set) < 0 || s == nullptr) return "";
  std::string out = s;
  std::free(s);
  return out;
}

void findBinding(hwloc_topology_t topo, HostSummary* h) {
  Bitmap set(hwloc_bitmap_alloc());
  if (!set) return;
  if (hwloc_topology_is_thissystem(topo) && hwloc_get_cpubind(topo, set.get(), HWLOC_CPUBIND_PROCESS) == 0) {
    h->boundCpus = cpuListString(set.get());
  } else {
    // Not this machine (a test's synthetic or XML topology): the process could run anywhere.
    hwloc_bitmap_copy(set.get(), hwloc_topology_get_allowed_cpuset(topo));
    h->boundCpus = cpuListString(set.get());
  }
  h->boundNuma = numaNodesOf(topo, set.get());
  if (h->boundNuma.size() == 1) {
    h->numaNode = h->boundNuma.front();
    return;
  }
  Bitmap last(hwloc_bitmap_alloc());
  if (last && hwloc_topology_is_thissystem(topo) &&
      hwloc_get_last_cpu_location(topo, last.get(), HWLOC_CPUBIND_THREAD) == 0) {
    std::vector<int> where = numaNodesOf(topo, last.get());
    if (!where.empty()) h->numaNode = where.front();
  } else if (!h->boundNuma.empty()) {
    h->numaNode = h->boundNuma.front();
  }
}

}  // namespace

std::vector<int> numaNodesOf(hwloc_topology_t topo, hwloc_const_cpuset_t cpus) {
  std::vector<int> out;
  for (hwloc_obj_t numa = nullptr; (numa = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, numa)) != nullptr;)
    if (numa->cpuset != nullptr && hwloc_bitmap_intersects(numa->cpuset, cpus))
      out.push_back(static_cast<int>(numa->os_index));
  std::sort(out.begin(), out.end());
  return out;
}

std::string cpumapString(hwloc_const_bitmap_t set) {
  if (set == nullptr || hwloc_bitmap_iszero(set)) return "00000000";
  int last = hwloc_bitmap_last(set);
  if (last < 0) return "ffffffff";  // infinite set
  int words = last / 32 + 1;
  std::string out;
  for (int w = words - 1; w >= 0; --w) {
    uint32_t v = 0;
    for (int b = 0; b < 32; ++b)
      if (hwloc_bitmap_isset(set, static_cast<unsigned>(w * 32 + b))) v |= 1u << b;
    char buf[16];
    std::snprintf(buf, sizeof(buf), "%08x", v);
    if (!out.empty()) out += ",";
    out += buf;
  }
  return out;
}

Discovery discoverFrom(hwloc_topology_t topo) {
  Discovery d;
  d.host.packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  d.host.numaNodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  d.host.cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  d.host.pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  Walker(topo, &d).run();
  findBinding(topo, &d.host);
  return d;
}

namespace {
// The process's topology, kept (see localDiscovery); reachable from here, so leak checkers do not
// report it.
hwloc_topology_t gLoadedTopology = nullptr;
}  // namespace

hwloc_topology_t loadHostTopology(std::string* why) {
  hwloc_topology_t topo = nullptr;
  if (hwloc_topology_init(&topo) != 0) {
    *why = std::string("hwloc_topology_init failed: ") + std::strerror(errno);
    return nullptr;
  }
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  // Weft knows GPUs and NICs by their PCI ids and class and their sysfs names, which hwloc's linux
  // component reads from /sys. The other components add nothing Weft reads, and would run in
  // every process at its first communicator: "pci" (libpciaccess) finds the same devices and adds
  // their vendor and product names, parsed from the whole pci.ids database by growing a buffer
  // with realloc (under AddressSanitizer, whose realloc always copies, that parse was 98% of a
  // 3-rank job's page faults); "gl" tries to connect to X displays :0 to :9 in turn; "opencl"
  // loads the OpenCL ICDs (on a GPU host the vendor driver, which hwloc's users have seen crash
  // in clGetPlatformIDs with CUDA 12 and no driver); "cuda", "nvml", "rsmi" and "levelzero"
  // start their runtimes. A name this hwloc lacks is no error.
  for (const char* component : {"pci", "gl", "opencl", "cuda", "nvml", "rsmi", "levelzero"})
    (void)hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, component);
  if (hwloc_topology_load(topo) != 0) {
    *why = std::string("hwloc_topology_load failed: ") + std::strerror(errno);
    return nullptr;  // not destroyed: its plugins are loaded (see localDiscovery)
  }
  return topo;
}

const Discovery& localDiscovery() {
  // A function-local static: C++ guarantees one initialisation even when threads race to it.
  static const Discovery kLocal = [] {
    Discovery d;
    // The topology is never destroyed: hwloc_topology_destroy dlcloses hwloc's plugins, and a
    // dlclose while other threads run (the network's proxy and socket threads, a framework's
    // own) was seen to deadlock inside glibc (2.36: dlclose waiting in __thread_gscope_wait while
    // holding the lock that a pthread_join in the proxy thread needed). One topology per
    // process, loaded once, costs less than that risk.
    gLoadedTopology = loadHostTopology(&d.problem);
    if (gLoadedTopology == nullptr) return d;
    d = discoverFrom(gLoadedTopology);
    WEFT_INFO(
        kLogGraph | kLogInit,
        "Topology: %d packages, %d NUMA nodes, %d cores, %d PUs, %d GPUs, %d NICs; bound to CPUs %s (NUMA node %d)",
        d.host.packages, d.host.numaNodes, d.host.cores, d.host.pus, d.host.gpus, d.host.nics, d.host.boundCpus.c_str(),
        d.host.numaNode);
    return d;
  }();
  return kLocal;
}

}  // namespace weft::topo
