#include "topology/describe.h"

#include <cstdio>

#include "topology/link_class.h"
#include "topology/placement_query.h"

namespace weft::topo {

namespace {

const char* kindName(PciKind k) {
  switch (k) {
    case PciKind::kBridge: return "PCI bridge/switch";
    case PciKind::kGpu: return "GPU";
    case PciKind::kNic: return "NIC";
    case PciKind::kNvSwitch: return "NVSwitch";
    case PciKind::kOther: return "PCI device";
  }
  return "?";
}

void line(std::string* out, int indent, const std::string& text) {
  out->append(static_cast<size_t>(indent), ' ');
  *out += text + "\n";
}

void describeNic(std::string* out, int indent, const Nic& n) {
  for (const Net& net : n.nets) {
    std::string t = "net ";
    t += net.name.empty() ? std::string("(unnamed)") : net.name;
    t += " dev " + std::to_string(net.dev);
    if (net.speedMbps) t += ", " + std::to_string(*net.speedMbps) + " Mb/s";
    if (net.port) t += ", port " + std::to_string(*net.port);
    if (net.gdr) t += *net.gdr ? ", GPUDirect RDMA" : ", no GPUDirect RDMA";
    line(out, indent, t);
  }
}

void describePci(std::string* out, int indent, const Topology& t, const Pci& p) {
  std::string text = formatBusId(p.busId) + "  " + kindName(p.kind()) + " (class " + p.pciClass;
  if (!p.vendor.empty()) text += ", " + p.vendor + ":" + p.device;
  text += ")";
  if (!p.linkSpeed.empty() || p.linkWidth) {
    text += "  link";
    if (!p.linkSpeed.empty()) text += " " + p.linkSpeed;
    if (p.linkWidth) text += " x" + std::to_string(*p.linkWidth);
  }
  if (p.kind() == PciKind::kGpu) {
    BusId nic = closestNic(t, p.busId);
    if (nic != kNoBusId) text += "  closest NIC " + formatBusId(nic);
  }
  line(out, indent, text);
  if (p.gpu) {
    std::string g = "gpu dev " + std::to_string(p.gpu->dev);
    if (p.gpu->sm) g += ", sm " + std::to_string(*p.gpu->sm);
    if (p.gpu->rank) g += ", rank " + std::to_string(*p.gpu->rank);
    line(out, indent + 2, g);
    for (const NvLink& l : p.gpu->nvlinks)
      line(out, indent + 4,
           "nvlink x" + std::to_string(l.count) + " -> " + l.target + (l.tclass.empty() ? "" : " (" + l.tclass + ")"));
  }
  if (p.nic) describeNic(out, indent + 2, *p.nic);
  for (const Pci& c : p.children) describePci(out, indent + 2, t, c);
}

}  // namespace

std::string describeTopology(const SystemTopology& s) {
  std::string out;
  const HostSummary& h = s.discovery.host;
  if (!s.discovery.problem.empty()) {
    out += "hwloc detection failed: " + s.discovery.problem + "\n";
  } else {
    char buf[256];
    std::snprintf(buf, sizeof(buf), "Detected by hwloc: %d packages, %d NUMA nodes, %d cores, %d PUs\n", h.packages,
                  h.numaNodes, h.cores, h.pus);
    out += buf;
    std::snprintf(buf, sizeof(buf), "  kept: %d GPUs, %d NICs, %d NVSwitches, %d PCI bridges above them\n", h.gpus,
                  h.nics, h.nvswitches, h.pciBridges);
    out += buf;
    std::string numas;
    for (int n : h.boundNuma) {
      if (!numas.empty()) numas += ",";
      numas += std::to_string(n);
    }
    out += "  this process: bound to CPUs " + (h.boundCpus.empty() ? std::string("(unknown)") : h.boundCpus) +
           " (NUMA " + (numas.empty() ? std::string("?") : numas) + "), on NUMA node " + std::to_string(h.numaNode) +
           "\n";
  }
  if (s.topoFile.empty()) {
    out += "NCCL_TOPO_FILE: not set\n";
  } else if (s.fileUsed) {
    out += "NCCL_TOPO_FILE: " + s.topoFile + " (its devices win; detected devices it lacks are added)\n";
  } else {
    out += s.problem + "\n";
  }
  if (s.result != ncclSuccess) return out;
  out += "\nTopology" + (s.topology.name.empty() ? std::string() : " \"" + s.topology.name + "\"") + ":\n";
  for (const Cpu& c : s.topology.cpus) {
    std::string t = "cpu numa " + std::to_string(c.numaId);
    if (!c.affinity.empty()) t += "  affinity " + c.affinity;
    if (!c.arch.empty()) t += "  " + c.arch;
    if (!c.vendor.empty()) t += " " + c.vendor;
    if (c.familyId) t += " family " + std::to_string(*c.familyId);
    if (c.modelId) t += " model " + std::to_string(*c.modelId);
    line(&out, 2, t);
    for (const Pci& p : c.pci) describePci(&out, 4, s.topology, p);
    for (const Nic& n : c.nics) {
      line(&out, 4, "nic (no PCI device)");
      describeNic(&out, 6, n);
    }
  }
  if (s.topology.cpus.empty()) line(&out, 2, "(empty)");
  return out;
}

}  // namespace weft::topo
