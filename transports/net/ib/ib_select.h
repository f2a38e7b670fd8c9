// The IB network's choices that depend only on names and tables: which device ports
// NCCL_IB_HCA admits, and which GID of a RoCE port to address the peer with. Pure functions, so
// that they are tested on machines without RDMA devices.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace weft::net::ib {

// True when port `port` of device `device` is admitted by an NCCL_IB_HCA spec: a comma-separated
// list of `name[:port]`; names are prefixes ("mlx5" admits mlx5_0 and mlx5_1) unless the list
// starts with '=' (exact names); a leading '^' (before any '=') excludes the listed ones instead.
// An entry without a port covers every port. An empty spec admits everything.
bool hcaAdmits(const std::string& spec, const std::string& device, int port);

// One entry of a port's GID table.
struct GidEntry {
  int index = 0;
  uint8_t raw[16] = {};
  int roceVersion = 0;  // 1 or 2 from the kernel's gid_attrs; 0 when unknown
};

struct GidWant {
  int family = 0;       // AF_INET or AF_INET6 (NCCL_IB_ADDR_FAMILY)
  int roceVersion = 2;  // NCCL_IB_ROCE_VERSION_NUM
  std::string range;    // NCCL_IB_ADDR_RANGE, "addr/prefix" or empty
};

// The GID index to use on a RoCE port: among non-zero entries of the wanted address family
// (IPv4-mapped for AF_INET; for AF_INET6, global addresses before link-local ones) inside the
// range, the first of the wanted RoCE version, else the first of any version. -1 with *why when
// none fits (or the range does not parse).
int chooseGid(const std::vector<GidEntry>& table, const GidWant& want, std::string* why);

// "fe80::1" / "10.0.0.7" for messages; IPv4-mapped GIDs print as IPv4.
std::string gidToString(const uint8_t raw[16]);

}  // namespace weft::net::ib
