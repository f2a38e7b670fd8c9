// Discovering the IB network's ports, registering memory, and reading asynchronous events.
#include "transports/net/ib/ib_devices.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "base/clock.h"
#include "base/log.h"
#include "base/params.h"
#include "transports/net/ib/ib_select.h"

namespace weft::net::ib {

namespace {

constexpr int64_t kEventPollIntervalNs = 20 * 1000 * 1000;

std::string readLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Per-lane rates of the IB speed codes (Gbit/s) and lanes of the width codes.
double laneGbps(int speed) {
  switch (speed) {
    case 1: return 2.5;
    case 2: return 5.0;
    case 4: return 10.0;
    case 8: return 10.0;
    case 16: return 14.0;
    case 32: return 25.0;
    case 64: return 50.0;
    case 128: return 100.0;
    case 256: return 200.0;
    default: return 0;
  }
}

int lanes(int width) {
  switch (width) {
    case 1: return 1;
    case 2: return 4;
    case 4: return 8;
    case 8: return 12;
    case 16: return 2;
    default: return 1;
  }
}

// The kernel states each GID's RoCE version in sysfs ("IB/RoCE v1", "RoCE v2").
int gidRoceVersion(const std::string& dev, int port, int index) {
  std::string t = readLine("/sys/class/infiniband/" + dev + "/ports/" + std::to_string(port) + "/gid_attrs/types/" +
                           std::to_string(index));
  if (t.find("v2") != std::string::npos) return 2;
  if (t.find("v1") != std::string::npos) return 1;
  return 0;
}

int addressFamily(std::string* why) {
  std::string f = param::ibAddrFamily();
  if (f == "AF_INET6") return AF_INET6;
  if (f == "AF_INET" || f.empty()) return AF_INET;
  *why = "NCCL_IB_ADDR_FAMILY=" + f + " is neither AF_INET nor AF_INET6";
  return -1;
}

// Fills the address a RoCE port is reached at; false with *why when no GID fits.
bool pickRoceGid(const VerbsLibrary& v, Device* d, std::string* why) {
  int64_t forced = param::ibGidIndex();
  if (forced >= 0) {
    if (forced >= d->portAttr.gid_tbl_len || v.queryGid(d->context, uint8_t(d->port), int(forced), &d->gid) != 0) {
      *why = "NCCL_IB_GID_INDEX=" + std::to_string(forced) + " is not in the port's GID table (" +
             std::to_string(d->portAttr.gid_tbl_len) + " entries)";
      return false;
    }
    static const uint8_t zero[16] = {};
    if (memcmp(d->gid.raw, zero, 16) == 0) {
      *why = "NCCL_IB_GID_INDEX=" + std::to_string(forced) + " names an empty entry of the port's GID table";
      return false;
    }
    d->gidIndex = int(forced);
    return true;
  }
  GidWant want;
  if ((want.family = addressFamily(why)) < 0) return false;
  want.roceVersion = int(param::ibRoceVersionNum());
  want.range = param::ibAddrRange();
  std::vector<GidEntry> table;
  for (int i = 0; i < d->portAttr.gid_tbl_len && i < 256; ++i) {
    ibv_gid g{};
    if (v.queryGid(d->context, uint8_t(d->port), i, &g) != 0) continue;
    GidEntry e;
    e.index = i;
    memcpy(e.raw, g.raw, 16);
    e.roceVersion = gidRoceVersion(d->name, d->port, i);
    table.push_back(e);
  }
  int index = chooseGid(table, want, why);
  if (index < 0) return false;
  d->gidIndex = index;
  return v.queryGid(d->context, uint8_t(d->port), index, &d->gid) == 0;
}

std::vector<Device*> discover(std::vector<std::string>* report) {
  std::vector<Device*> out;
  if (param::ibDisable()) {
    report->push_back("IB: disabled by NCCL_IB_DISABLE=1");
    return out;
  }
  std::string why;
  const VerbsLibrary* v = loadVerbs(&why);
  if (v == nullptr) {
    report->push_back("IB: " + why);
    return out;
  }
  int n = 0;
  ibv_device** list = v->getDeviceList(&n);
  if (list == nullptr || n == 0) {
    // No /sys/class/infiniband at all gives NULL with ENOSYS; an empty list means no device.
    report->push_back(std::string("IB: no RDMA device") +
                      (list == nullptr ? " (" + std::string(strerror(errno)) + ")" : ""));
    if (list != nullptr) v->freeDeviceList(list);
    return out;
  }
  const std::string hca = param::ibHca();
  for (int i = 0; i < n; ++i) {
    std::string name = v->getDeviceName(list[i]);
    ibv_context* ctx = v->openDevice(list[i]);
    if (ctx == nullptr) {
      report->push_back("IB: " + name + ": cannot open (" + strerror(errno) + ")");
      continue;
    }
    ibv_device_attr attr{};
    if (v->queryDevice(ctx, &attr) != 0) {
      report->push_back("IB: " + name + ": query_device failed");
      v->closeDevice(ctx);
      continue;
    }
    ibv_pd* pd = nullptr;
    bool used = false;
    for (int port = 1; port <= attr.phys_port_cnt; ++port) {
      auto* d = new Device;
      d->name = name;
      d->port = port;
      d->context = ctx;
      std::string label = "IB: " + d->label();
      if (!hcaAdmits(hca, name, port)) {
        report->push_back(label + ": not admitted by NCCL_IB_HCA=" + hca);
        delete d;
        continue;
      }
      if (v->queryPort(ctx, uint8_t(port), &d->portAttr) != 0 || d->portAttr.state != IBV_PORT_ACTIVE) {
        report->push_back(label + ": port not active");
        delete d;
        continue;
      }
      d->linkLayer = d->portAttr.link_layer == IBV_LINK_LAYER_ETHERNET ? IBV_LINK_LAYER_ETHERNET
                                                                       : IBV_LINK_LAYER_INFINIBAND;
      std::string gidWhy;
      if (d->linkLayer == IBV_LINK_LAYER_ETHERNET) {
        if (!pickRoceGid(*v, d, &gidWhy)) {
          report->push_back(label + " (RoCE): " + gidWhy);
          delete d;
          continue;
        }
        d->addressText = "GID " + std::to_string(d->gidIndex) + " " + gidToString(d->gid.raw);
      } else {
        int64_t forced = param::ibGidIndex();
        d->gidIndex = forced >= 0 ? int(forced) : 0;
        if (v->queryGid(ctx, uint8_t(port), d->gidIndex, &d->gid) != 0) memset(&d->gid, 0, sizeof(d->gid));
        d->addressText = "LID " + std::to_string(d->portAttr.lid);
      }
      if (pd == nullptr && (pd = v->allocPd(ctx)) == nullptr) {
        report->push_back(label + ": cannot allocate a protection domain (" + strerror(errno) + ")");
        delete d;
        break;
      }
      d->pd = pd;
      d->guid = be64toh(v->getDeviceGuid(list[i]));
      char real[PATH_MAX];
      std::string sys = "/sys/class/infiniband/" + name + "/device";
      if (realpath(sys.c_str(), real) != nullptr) d->pciPath = real;
      d->speedMbps = int(laneGbps(d->portAttr.active_speed) * lanes(d->portAttr.active_width) * 1000);
      d->maxQpWr = attr.max_qp_wr;
      report->push_back(label + ": usable, " + (d->linkLayer == IBV_LINK_LAYER_ETHERNET ? "RoCE " : "InfiniBand ") +
                        d->addressText + ", MTU " + std::to_string(128 << d->portAttr.active_mtu) + ", " +
                        std::to_string(d->speedMbps) + " Mbit/s");
      out.push_back(d);
      used = true;
    }
    if (!used) {
      v->closeDevice(ctx);
    } else {
      // Asynchronous events are read without blocking, from the threads that test requests.
      int flags = fcntl(ctx->async_fd, F_GETFL);
      if (flags >= 0) (void)fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
    }
  }
  v->freeDeviceList(list);
  return out;
}

}  // namespace

namespace {

// Devices and their contexts live for the life of the process: registrations and async event
// handling refer to them, and a provider may still run while the process exits.
struct Discovered {
  std::vector<std::string> report;
  std::vector<Device*> devices;
};
std::mutex gDiscoverMu;
Discovered* gDiscovered = nullptr;

}  // namespace

const std::vector<Device*>& devices(std::vector<std::string>* report) {
  std::lock_guard<std::mutex> lock(gDiscoverMu);
  if (gDiscovered == nullptr) {
    auto* d = new Discovered;
    d->devices = discover(&d->report);
    gDiscovered = d;
  }
  if (report != nullptr) *report = gDiscovered->report;
  return gDiscovered->devices;
}

void rediscoverForTesting() {
  // The old devices stay reachable (connections and registrations may still use them).
  static std::vector<Discovered*>* retired = new std::vector<Discovered*>;
  std::lock_guard<std::mutex> lock(gDiscoverMu);
  if (gDiscovered != nullptr) retired->push_back(gDiscovered);
  gDiscovered = nullptr;
}

std::vector<std::string> gidTableLines(const Device* dev) {
  std::vector<std::string> out;
  std::string why;
  const VerbsLibrary* v = loadVerbs(&why);
  if (v == nullptr) return out;
  static const uint8_t zero[16] = {};
  for (int i = 0; i < dev->portAttr.gid_tbl_len && i < 256; ++i) {
    ibv_gid g{};
    if (v->queryGid(dev->context, uint8_t(dev->port), i, &g) != 0 || memcmp(g.raw, zero, 16) == 0) continue;
    int version = dev->linkLayer == IBV_LINK_LAYER_ETHERNET ? gidRoceVersion(dev->name, dev->port, i) : 0;
    out.push_back("GID " + std::to_string(i) + ": " + gidToString(g.raw) +
                  (version > 0 ? " (RoCE v" + std::to_string(version) + ")" : "") +
                  (i == dev->gidIndex ? "  <- used" : ""));
  }
  return out;
}

namespace {

ncclResult_t finishRegistration(Device* dev, ibv_mr* mr, uintptr_t begin, uintptr_t end, const char* what,
                                Registration** out) {
  if (mr == nullptr) {
    WEFT_WARN("IB network: %s of %zu bytes on %s failed: %s (is the locked-memory limit, ulimit -l, too low?)", what,
              size_t(end - begin), dev->label().c_str(), strerror(errno));
    return ncclSystemError;
  }
  auto* r = new Registration;
  r->device = dev;
  r->mr = mr;
  r->begin = begin;
  r->end = end;
  r->refs = 1;
  dev->registrations[begin] = r;
  *out = r;
  return ncclSuccess;
}

constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

}  // namespace

ncclResult_t registerMemory(Device* dev, void* data, size_t size, Registration** out) {
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  uintptr_t begin = reinterpret_cast<uintptr_t>(data) & ~(page - 1);
  uintptr_t end = (reinterpret_cast<uintptr_t>(data) + (size == 0 ? 1 : size) + page - 1) & ~(page - 1);
  std::lock_guard<std::mutex> lock(dev->mu);
  // A registration that starts at or before begin and covers end is shared.
  auto it = dev->registrations.upper_bound(begin);
  while (it != dev->registrations.begin()) {
    --it;
    Registration* r = it->second;
    if (r->begin <= begin && r->end >= end && r->mr->pd == dev->pd) {
      ++r->refs;
      *out = r;
      return ncclSuccess;
    }
    if (r->end <= begin) break;
  }
  std::string why;
  const VerbsLibrary* v = loadVerbs(&why);
  ibv_mr* mr = v->regMr(dev->pd, reinterpret_cast<void*>(begin), end - begin, kAccess);
  return finishRegistration(dev, mr, begin, end, "memory registration", out);
}

ncclResult_t registerDmabuf(Device* dev, void* data, size_t size, uint64_t offset, int fd, Registration** out) {
  std::string why;
  const VerbsLibrary* v = loadVerbs(&why);
  if (v->regDmabufMr == nullptr) {
    WEFT_WARN("IB network: this libibverbs has no ibv_reg_dmabuf_mr (rdma-core 34 or newer is needed)");
    return ncclInvalidUsage;
  }
  std::lock_guard<std::mutex> lock(dev->mu);
  uintptr_t begin = reinterpret_cast<uintptr_t>(data);
  ibv_mr* mr = v->regDmabufMr(dev->pd, offset, size, begin, fd, kAccess);
  return finishRegistration(dev, mr, begin, begin + size, "dmabuf registration", out);
}

namespace {

// With dev->mu held: deregisters reg once nothing holds or uses it.
void destroyIfUnused(Registration* reg) {
  if (reg->refs > 0 || reg->inflight > 0) return;
  Device* dev = reg->device;
  auto it = dev->registrations.find(reg->begin);
  if (it != dev->registrations.end() && it->second == reg) dev->registrations.erase(it);
  std::string why;
  if (const VerbsLibrary* v = loadVerbs(&why)) (void)v->deregMr(reg->mr);
  delete reg;
}

}  // namespace

void releaseMemory(Registration* reg) {
  if (reg == nullptr) return;
  std::lock_guard<std::mutex> lock(reg->device->mu);
  --reg->refs;
  // A released range is no longer offered to new regMr calls, even while requests still use it.
  auto it = reg->device->registrations.find(reg->begin);
  if (reg->refs == 0 && it != reg->device->registrations.end() && it->second == reg)
    reg->device->registrations.erase(it);
  destroyIfUnused(reg);
}

void beginUse(Registration* reg) {
  if (reg == nullptr) return;
  std::lock_guard<std::mutex> lock(reg->device->mu);
  ++reg->inflight;
}

void endUse(Registration* reg) {
  if (reg == nullptr) return;
  std::lock_guard<std::mutex> lock(reg->device->mu);
  --reg->inflight;
  destroyIfUnused(reg);
}

std::string asyncFailure(Device* dev, uint32_t qpNum) {
  std::lock_guard<std::mutex> lock(dev->mu);
  int64_t now = nowNs();
  if (now >= dev->nextEventPollNs) {
    dev->nextEventPollNs = now + kEventPollIntervalNs;
    std::string why;
    const VerbsLibrary* v = loadVerbs(&why);
    ibv_async_event ev{};
    while (v != nullptr && v->getAsyncEvent(dev->context, &ev) == 0) {
      std::string text = std::string(v->eventTypeStr(ev.event_type)) + " on " + dev->label();
      switch (ev.event_type) {
        case IBV_EVENT_PORT_ERR:
          if (int(ev.element.port_num) == dev->port) dev->portFailure = text;
          break;
        case IBV_EVENT_DEVICE_FATAL: dev->portFailure = text; break;
        case IBV_EVENT_QP_FATAL:
        case IBV_EVENT_QP_REQ_ERR:
        case IBV_EVENT_QP_ACCESS_ERR: dev->qpFailures[ev.element.qp->qp_num] = text; break;
        case IBV_EVENT_PORT_ACTIVE:
          if (int(ev.element.port_num) == dev->port) dev->portFailure.clear();
          break;
        default: break;
      }
      WEFT_INFO(kLogNet, "IB network: asynchronous event %s", text.c_str());
      v->ackAsyncEvent(&ev);
    }
  }
  if (!dev->portFailure.empty()) return dev->portFailure;
  auto it = dev->qpFailures.find(qpNum);
  return it == dev->qpFailures.end() ? std::string() : it->second;
}

}  // namespace weft::net::ib
