// What hwloc finds on a machine: the counts and CPU binding a user wants to see, and the devices
// collectives care about (GPUs, NICs, NVSwitches and the PCI bridges above them) as a Topology.
// Works on any loaded hwloc topology, so tests feed it synthetic and XML machines; the process's
// own machine is discovered once, lazily (localDiscovery()).
#pragma once
#include <hwloc.h>

#include <string>
#include <vector>

#include "nccl.h"
#include "topology/model.h"

namespace weft::topo {

struct HostSummary {
  int packages = 0, numaNodes = 0, cores = 0, pus = 0;
  int gpus = 0, nics = 0, nvswitches = 0, pciBridges = 0;  // as kept in the Topology
  std::string boundCpus;       // this process's CPU binding as a list ("0-7,16-23"; "" = unknown)
  std::vector<int> boundNuma;  // the NUMA nodes (OS indices) that binding touches
  int numaNode = -1;           // the one it is on: the single node bound to, else where it last ran
};

struct Discovery {
  HostSummary host;
  Topology topology;
  std::string problem;  // why discovery failed ("" = it worked); topology is then empty
};

// Discovers a loaded hwloc topology. The I/O filter must keep PCI devices and bridges
// (HWLOC_TYPE_FILTER_KEEP_IMPORTANT or _ALL). When the topology is this machine's, the binding
// comes from the process and PCI link speed and width from sysfs.
Discovery discoverFrom(hwloc_topology_t topo);

// The NUMA nodes (OS indices, ascending) whose CPUs intersect cpus.
std::vector<int> numaNodesOf(hwloc_topology_t topo, hwloc_const_cpuset_t cpus);
// A cpuset in the form Linux's cpumap files and NCCL's affinity attribute use: 32-bit words in
// hex, most significant first, comma separated ("0000ffff,0000ffff").
std::string cpumapString(hwloc_const_bitmap_t set);

// This process's machine, discovered on first use (thread-safe); problem says why if hwloc failed.
const Discovery& localDiscovery();

// Loads this machine's topology as localDiscovery does (I/O devices kept, no component that opens
// a vendor library or a display); null with *why on failure. The caller owns the topology.
hwloc_topology_t loadHostTopology(std::string* why);

}  // namespace weft::topo
