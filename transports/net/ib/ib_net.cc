// The IB network's plugin functions: devices and properties, memory registration, and the thin
// entry points over Comm's data path.
#include "transports/net/ib/ib_net.h"

#include <climits>
#include <cstring>

#include "base/log.h"
#include "transports/net/ib/ib_comm.h"
#include "transports/net/ib/ib_connect.h"
#include "transports/net/ib/ib_devices.h"

namespace weft::net::ib {

namespace {

constexpr size_t kMaxMessage = 1ull << 30;  // test() reports int sizes

ncclResult_t ibInit(void** ctx, uint64_t, ncclNetCommConfig_v12_t*, ncclDebugLogger_t, ncclProfilerCallback_t) {
  // Discovery runs here; no usable device is not an error: the loader then chooses another
  // network and says why.
  std::vector<std::string> report;
  (void)devices(&report);
  for (const std::string& line : report) WEFT_INFO(kLogNet | kLogInit, "%s", line.c_str());
  *ctx = nullptr;
  return ncclSuccess;
}

ncclResult_t ibDevices(int* ndev) {
  *ndev = int(devices().size());
  return ncclSuccess;
}

ncclResult_t ibGetProperties(int dev, ncclNetProperties_v12_t* props) {
  const std::vector<Device*>& all = devices();
  if (dev < 0 || size_t(dev) >= all.size()) {
    WEFT_WARN("IB network: getProperties of device %d, but there are %zu", dev, all.size());
    return ncclInvalidArgument;
  }
  const Device* d = all[size_t(dev)];
  memset(props, 0, sizeof(*props));
  props->name = const_cast<char*>(d->name.c_str());  // devices live for the life of the process
  props->pciPath = d->pciPath.empty() ? nullptr : const_cast<char*>(d->pciPath.c_str());
  props->guid = d->guid;
  props->ptrSupport = NCCL_PTR_HOST;
  props->regIsGlobal = 1;
  props->forceFlush = 0;
  props->speed = d->speedMbps;
  props->port = d->port;
  props->latency = 0;
  props->maxComms = 65536;
  props->maxRecvs = 1;
  props->netDeviceType = NCCL_NET_DEVICE_HOST;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  props->maxP2pBytes = kMaxMessage;
  props->maxCollBytes = kMaxMessage;
  props->maxMultiRequestSize = 1;
  props->railId = -1;
  props->planeId = -1;
  return ncclSuccess;
}

ncclResult_t listenEntry(void*, int dev, void* handle, void** listenComm) { return ibListen(dev, handle, listenComm); }

ncclResult_t connectEntry(void*, int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v12_t** devComm) {
  if (devComm != nullptr) *devComm = nullptr;
  return ibConnect(dev, handle, sendComm);
}

ncclResult_t acceptEntry(void* listenComm, void** recvComm, ncclNetDeviceHandle_v12_t** devComm) {
  if (devComm != nullptr) *devComm = nullptr;
  return ibAccept(listenComm, recvComm);
}

ncclResult_t ibRegMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  *mhandle = nullptr;
  if (type != NCCL_PTR_HOST) {
    WEFT_WARN("IB network: registering %s memory is not supported in this build (host memory only)",
              type == NCCL_PTR_CUDA ? "GPU" : "non-host");
    return ncclInvalidUsage;
  }
  Registration* r = nullptr;
  ncclResult_t res = registerMemory(static_cast<Comm*>(comm)->device(), data, size, &r);
  *mhandle = r;
  return res;
}

// GPU memory exported as a dmabuf by its driver. Compiled, never run: this project has had no GPU.
ncclResult_t ibRegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle) {
  *mhandle = nullptr;
  if (type == NCCL_PTR_HOST || fd < 0) return ibRegMr(comm, data, size, NCCL_PTR_HOST, mhandle);
  Registration* r = nullptr;
  ncclResult_t res = registerDmabuf(static_cast<Comm*>(comm)->device(), data, size, offset, fd, &r);
  *mhandle = r;
  return res;
}

ncclResult_t ibDeregMr(void*, void* mhandle) {
  releaseMemory(static_cast<Registration*>(mhandle));
  return ncclSuccess;
}

ncclResult_t ibIsend(void* sendComm, void* data, size_t size, int, void* mhandle, void*, void** request) {
  *request = nullptr;
  auto* c = static_cast<Comm*>(sendComm);
  if (!c->isSend()) {
    WEFT_WARN("IB network: isend on a receiving connection");
    return ncclInvalidUsage;
  }
  if (size > kMaxMessage) {
    WEFT_WARN("IB network: isend of %zu bytes; at most %zu per message", size, kMaxMessage);
    return ncclInvalidArgument;
  }
  Request* r = nullptr;
  ncclResult_t res = c->isend(data, size, static_cast<Registration*>(mhandle), &r);
  *request = r;
  return res;
}

ncclResult_t ibIrecv(void* recvComm, int n, void** data, size_t* sizes, int*, void** mhandles, void**, void** request) {
  *request = nullptr;
  auto* c = static_cast<Comm*>(recvComm);
  if (c->isSend()) {
    WEFT_WARN("IB network: irecv on a sending connection");
    return ncclInvalidUsage;
  }
  if (n != 1) {
    WEFT_WARN("IB network: irecv of %d buffers; this network takes one (maxRecvs = 1)", n);
    return ncclInvalidArgument;
  }
  Request* r = nullptr;
  ncclResult_t res = c->irecv(data[0], std::min(sizes[0], kMaxMessage),
                              static_cast<Registration*>(mhandles != nullptr ? mhandles[0] : nullptr), &r);
  *request = r;
  return res;
}

// Host memory: what the HCA wrote is visible once the completion was polled. (GPU memory would
// need a read-back through the HCA; GPU registration is refused above.)
ncclResult_t ibIflush(void*, int, void**, int*, void**, void** request) {
  *request = nullptr;
  return ncclSuccess;
}

ncclResult_t ibTest(void* request, int* done, int* sizes) {
  auto* r = static_cast<Request*>(request);
  size_t size = 0;
  ncclResult_t res = r->comm->test(r, done, &size);
  if (*done && sizes != nullptr) *sizes = int(size);
  return res;
}

ncclResult_t ibCloseComm(void* comm) {
  delete static_cast<Comm*>(comm);
  return ncclSuccess;
}

ncclResult_t ibGetDeviceMr(void*, void*, void**) {
  WEFT_WARN("IB network: no device offload, getDeviceMr is not supported");
  return ncclInvalidUsage;
}

ncclResult_t ibIrecvConsumed(void*, int, void*) { return ncclSuccess; }

ncclResult_t ibMakeVDevice(int*, ncclNetVDeviceProps_v12_t*) {
  WEFT_WARN("IB network: virtual devices (makeVDevice, NIC fusion) are not supported");
  return ncclInvalidUsage;
}

ncclResult_t ibFinalize(void*) { return ncclSuccess; }
ncclResult_t ibSetNetAttr(void*, ncclNetAttr_v12_t*) { return ncclSuccess; }  // hints only

const ncclNet_v12_t kIbNet = {
    "IB",          ibInit,        ibDevices,       ibGetProperties, listenEntry, connectEntry, acceptEntry, ibRegMr,
    ibRegMrDmaBuf, ibDeregMr,     ibIsend,         ibIrecv,         ibIflush,    ibTest,       ibCloseComm, ibCloseComm,
    ibCloseListen, ibGetDeviceMr, ibIrecvConsumed, ibMakeVDevice,   ibFinalize,  ibSetNetAttr,
};

}  // namespace

const ncclNet_v12_t* ibNetTable() { return &kIbNet; }

std::vector<std::string> ibDeviceReport() {
  std::vector<std::string> report;
  (void)devices(&report);
  return report;
}

std::vector<std::string> ibGidReport() {
  std::vector<std::string> out;
  for (const Device* d : devices()) {
    out.push_back(d->label() + (d->linkLayer == IBV_LINK_LAYER_ETHERNET
                                    ? " (RoCE)"
                                    : " (InfiniBand, LID " + std::to_string(d->portAttr.lid) + ")"));
    for (const std::string& line : gidTableLines(d)) out.push_back("  " + line);
  }
  return out;
}

void rediscoverDevicesForTesting() { rediscoverForTesting(); }

}  // namespace weft::net::ib
