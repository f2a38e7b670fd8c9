// The RDMA ports the IB network offers, one ncclNet device each: discovered once per process
// (active ports of admitted devices, with the GID or LID to be reached at), their protection
// domain, the memory registration cache, and the device's asynchronous events.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "nccl.h"
#include "transports/net/ib/verbs_library.h"

namespace weft::net::ib {

struct Device;

// One registration: a page-aligned range registered once and shared by every regMr that falls
// inside it (the proxy registers each FIFO once; users may register overlapping buffers). It is
// deregistered when the last handle is released and no request in flight still uses it, so a
// deregMr that races a transfer never pulls the memory from under the HCA.
struct Registration {
  Device* device = nullptr;
  ibv_mr* mr = nullptr;
  uintptr_t begin = 0, end = 0;
  int refs = 0;      // handles given out by regMr
  int inflight = 0;  // requests posted with it and not yet completed (or abandoned by a close)
};

struct Device {
  std::string name;  // "mlx5_0"
  int port = 1;
  int linkLayer = IBV_LINK_LAYER_INFINIBAND;
  ibv_context* context = nullptr;  // shared by the ports of one device
  ibv_pd* pd = nullptr;
  ibv_port_attr portAttr{};
  int gidIndex = 0;
  ibv_gid gid{};
  uint64_t guid = 0;
  std::string pciPath;
  int speedMbps = 0;
  int maxQpWr = 0;
  std::string addressText;  // the GID (RoCE) or LID (IB) that peers reach us at, for messages

  std::mutex mu;                                     // guards what follows
  std::map<uintptr_t, Registration*> registrations;  // by begin
  std::string portFailure;                           // set by an async event: the port went down
  std::map<uint32_t, std::string> qpFailures;        // QP number -> the async event that hit it
  int64_t nextEventPollNs = 0;

  std::string label() const { return name + ":" + std::to_string(port); }
};

// The devices, discovered on first call from NCCL_IB_DISABLE, NCCL_IB_HCA, NCCL_IB_GID_INDEX,
// NCCL_IB_ROCE_VERSION_NUM, NCCL_IB_ADDR_FAMILY and NCCL_IB_ADDR_RANGE. *report gets one line per
// port considered and why it was or was not taken (weft-info and NCCL_DEBUG=INFO print it).
// Discovery failures leave the list empty; they are never errors.
const std::vector<Device*>& devices(std::vector<std::string>* report = nullptr);
// Discovers again under the current parameters (tests of NCCL_IB_HCA and GID selection). The old
// devices stay allocated: connections and registrations may still point at them.
void rediscoverForTesting();

// The non-empty entries of dev's GID table, one line each (index, RoCE version, address), the one
// in use marked; weft-info --networks prints them.
std::vector<std::string> gidTableLines(const Device* dev);

// Registers [data, data + size) on dev (or finds a registration that covers it).
ncclResult_t registerMemory(Device* dev, void* data, size_t size, Registration** out);
ncclResult_t registerDmabuf(Device* dev, void* data, size_t size, uint64_t offset, int fd, Registration** out);
void releaseMemory(Registration* reg);
// A request using reg was posted / has completed or been abandoned. Both take dev->mu.
void beginUse(Registration* reg);
void endUse(Registration* reg);

// Reads the device's pending asynchronous events (rate-limited) and records port and QP
// failures. Returns the failure that concerns qpNum on dev, or an empty string.
std::string asyncFailure(Device* dev, uint32_t qpNum);

}  // namespace weft::net::ib
