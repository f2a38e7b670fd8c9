#include "topology/merge.h"

namespace weft::topo {

namespace {

void fillString(std::string* dst, const std::string& src) {
  if (dst->empty()) *dst = src;
}
template <typename T>
void fillOpt(std::optional<T>* dst, const std::optional<T>& src) {
  if (!*dst) *dst = src;
}

bool subtreeListed(const Topology& base, const Pci& d) {
  if (findPci(base, d.busId) != nullptr) return true;
  for (const Pci& c : d.children)
    if (subtreeListed(base, c)) return true;
  return false;
}

// Merges the detected devices in `detected` into `target`, the children list they belong in.
void mergeList(Topology* base, const std::vector<Pci>& detected, std::vector<Pci>* target) {
  for (const Pci& d : detected) {
    if (Pci* f = findPci(base, d.busId)) {
      fillString(&f->vendor, d.vendor);
      fillString(&f->device, d.device);
      fillString(&f->subsystemVendor, d.subsystemVendor);
      fillString(&f->subsystemDevice, d.subsystemDevice);
      fillString(&f->linkSpeed, d.linkSpeed);
      fillOpt(&f->linkWidth, d.linkWidth);
      if (!f->nic && d.nic) f->nic = d.nic;
      if (!f->gpu && d.gpu) f->gpu = d.gpu;
      mergeList(base, d.children, &f->children);
    } else if (subtreeListed(*base, d)) {
      // The file lists some device below this bridge elsewhere: the file's tree wins, so the
      // bridge is dropped and only what the file lacks is added, at this level.
      mergeList(base, d.children, target);
    } else {
      target->push_back(d);
    }
  }
}

}  // namespace

void mergeDetected(Topology* base, const Topology& detected) {
  // Create the cpu entries first: pointers into base->cpus must stay valid while merging.
  for (const Cpu& dc : detected.cpus) {
    bool found = false;
    for (const Cpu& bc : base->cpus) found = found || bc.numaId == dc.numaId;
    if (!found) {
      Cpu c = dc;
      c.pci.clear();
      c.nics.clear();
      base->cpus.push_back(std::move(c));
    }
  }
  for (const Cpu& dc : detected.cpus) {
    for (Cpu& bc : base->cpus) {
      if (bc.numaId != dc.numaId) continue;
      fillString(&bc.affinity, dc.affinity);
      fillString(&bc.arch, dc.arch);
      fillString(&bc.vendor, dc.vendor);
      fillOpt(&bc.familyId, dc.familyId);
      fillOpt(&bc.modelId, dc.modelId);
      mergeList(base, dc.pci, &bc.pci);
      break;
    }
  }
}

}  // namespace weft::topo
