#include "transports/net/plugin/adapter.h"

#include <climits>
#include <cstdarg>
#include <cstdio>

#include "base/errors.h"
#include "base/log.h"
#include "transports/net/net_abi.h"
#include "transports/net/proxy_profile.h"

namespace weft::net {

namespace {

// Plugins log through Weft's logger; their level and subsystem bits are NCCL_DEBUG's, as are ours.
void pluginLogger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  if (level == NCCL_LOG_NONE) return;
  LogLevel l = level == NCCL_LOG_VERSION ? LogLevel::kInfo : static_cast<LogLevel>(level);
  uint64_t subsys = l == LogLevel::kWarn ? kLogAll : static_cast<uint64_t>(flags);
  if (!logEnabled(l, subsys)) return;
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  logPrint(l, subsys, file != nullptr ? file : "plugin", line, "%s", text);
}

template <int V>
struct Abi;
template <>
struct Abi<8> {
  using Net = ncclNet_v8_t;
  using Props = ncclNetProperties_v8_t;
};
template <>
struct Abi<9> {
  using Net = ncclNet_v9_t;
  using Props = ncclNetProperties_v9_t;
};
template <>
struct Abi<10> {
  using Net = ncclNet_v10_t;
  using Props = ncclNetProperties_v10_t;
};
template <>
struct Abi<11> {
  using Net = ncclNet_v11_t;
  using Props = ncclNetProperties_v11_t;
};
template <>
struct Abi<12> {
  using Net = ncclNet_v12_t;
  using Props = ncclNetProperties_v12_t;
};

// v8 properties carry no transfer limit; NCCL assumes 1 GiB for such plugins.
constexpr size_t kV8MaxBytes = 1ull << 30;

template <int V>
class PluginNetwork final : public Network {
  using Net = typename Abi<V>::Net;
  using Props = typename Abi<V>::Props;

 public:
  PluginNetwork(const Net* t, std::string origin, const ProgressEvents* events)
      : t_(t), origin_(std::move(origin)), events_(events) {}
  ~PluginNetwork() override {
    if constexpr (V >= 11) {
      if (initialized_ && t_->finalize != nullptr) (void)t_->finalize(ctx_);
    }
  }

  bool init(std::string* why) {
    const char* missing = firstMissing();
    if (missing != nullptr) {
      *why = std::string("its ncclNet_v") + std::to_string(V) + " table has no " + missing + " function";
      return false;
    }
    ncclResult_t r;
    if constexpr (V >= 11) {
      ncclNetCommConfig_v11_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
      r = t_->init(&ctx_, 0, &config, pluginLogger, netProfilerCallback);
    } else if constexpr (V == 10) {
      r = t_->init(pluginLogger, netProfilerCallback);
    } else {
      r = t_->init(pluginLogger);
    }
    if (r != ncclSuccess) {
      *why = std::string("init failed: ") + resultString(r) + " (" + std::to_string(r) + ")";
      return false;
    }
    initialized_ = true;
    return true;
  }

  const char* name() const override { return t_->name; }
  int abiVersion() const override { return V; }
  const ProgressEvents* progressEvents() const override { return events_; }
  ncclResult_t devices(int* ndev) override { return t_->devices(ndev); }

  ncclResult_t getProperties(int dev, Properties* out) override {
    Props p{};
    ncclResult_t r = t_->getProperties(dev, &p);
    if (r != ncclSuccess) return r;
    out->name = p.name != nullptr ? p.name : "";
    out->pciPath = p.pciPath != nullptr ? p.pciPath : "";
    out->guid = p.guid;
    out->ptrSupport = p.ptrSupport;
    out->speedMbps = p.speed;
    out->port = p.port;
    out->latencyUs = p.latency;
    out->maxComms = p.maxComms;
    out->maxRecvs = p.maxRecvs;
    if constexpr (V >= 9) {
      out->maxP2pBytes = p.maxP2pBytes;
      out->maxCollBytes = p.maxCollBytes;
    } else {
      out->maxP2pBytes = kV8MaxBytes;
      out->maxCollBytes = kV8MaxBytes;
    }
    return ncclSuccess;
  }

  ncclResult_t listen(int dev, void* handle, void** listenComm) override {
    if constexpr (V >= 11)
      return t_->listen(ctx_, dev, handle, listenComm);
    else
      return t_->listen(dev, handle, listenComm);
  }

  ncclResult_t connect(int dev, void* handle, void** sendComm) override {
    ncclNetDeviceHandle_v8_t* devHandle = nullptr;  // null: no device offload requested
    if constexpr (V >= 11) {
      return t_->connect(ctx_, dev, handle, sendComm, &devHandle);
    } else if constexpr (V == 10) {
      ncclNetCommConfig_v10_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
      return t_->connect(dev, &config, handle, sendComm, &devHandle);
    } else {
      return t_->connect(dev, handle, sendComm, &devHandle);
    }
  }

  ncclResult_t accept(void* listenComm, void** recvComm) override {
    ncclNetDeviceHandle_v8_t* devHandle = nullptr;
    return t_->accept(listenComm, recvComm, &devHandle);
  }

  ncclResult_t regMr(void* comm, void* data, size_t size, int ptrType, void** mhandle) override {
    return t_->regMr(comm, data, size, ptrType, mhandle);
  }
  ncclResult_t deregMr(void* comm, void* mhandle) override { return t_->deregMr(comm, mhandle); }

  ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void** request) override {
    return isendProfiled(sendComm, data, size, tag, mhandle, nullptr, request);
  }

  ncclResult_t isendProfiled(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                             void** request) override {
    if constexpr (V >= 10) {
      return t_->isend(sendComm, data, size, tag, mhandle, phandle, request);
    } else if constexpr (V == 9) {
      return t_->isend(sendComm, data, size, tag, mhandle, request);
    } else {
      if (size > INT_MAX) return tooLarge(size, request);
      return t_->isend(sendComm, data, static_cast<int>(size), tag, mhandle, request);
    }
  }

  ncclResult_t irecv(void* recvComm, void* data, size_t size, int tag, void* mhandle, void** request) override {
    void* datas[1] = {data};
    int tags[1] = {tag};
    void* mhandles[1] = {mhandle};
    if constexpr (V >= 9) {
      size_t sizes[1] = {size};
      if constexpr (V >= 10) {
        void* phandles[1] = {nullptr};
        return t_->irecv(recvComm, 1, datas, sizes, tags, mhandles, phandles, request);
      } else {
        return t_->irecv(recvComm, 1, datas, sizes, tags, mhandles, request);
      }
    } else {
      if (size > INT_MAX) return tooLarge(size, request);
      int sizes[1] = {static_cast<int>(size)};
      return t_->irecv(recvComm, 1, datas, sizes, tags, mhandles, request);
    }
  }

  ncclResult_t test(void* request, int* done, size_t* size) override {
    int bytes = 0;
    ncclResult_t r = t_->test(request, done, &bytes);
    if (r == ncclSuccess && *done && size != nullptr) *size = bytes > 0 ? static_cast<size_t>(bytes) : 0;
    return r;
  }

  ncclResult_t closeSend(void* sendComm) override { return t_->closeSend(sendComm); }
  ncclResult_t closeRecv(void* recvComm) override { return t_->closeRecv(recvComm); }
  ncclResult_t closeListen(void* listenComm) override { return t_->closeListen(listenComm); }

 private:
  const char* firstMissing() const {
    if (t_->name == nullptr) return "name";
    if (t_->init == nullptr) return "init";
    if (t_->devices == nullptr) return "devices";
    if (t_->getProperties == nullptr) return "getProperties";
    if (t_->listen == nullptr) return "listen";
    if (t_->connect == nullptr) return "connect";
    if (t_->accept == nullptr) return "accept";
    if (t_->regMr == nullptr) return "regMr";
    if (t_->deregMr == nullptr) return "deregMr";
    if (t_->isend == nullptr) return "isend";
    if (t_->irecv == nullptr) return "irecv";
    if (t_->test == nullptr) return "test";
    if (t_->closeSend == nullptr) return "closeSend";
    if (t_->closeRecv == nullptr) return "closeRecv";
    if (t_->closeListen == nullptr) return "closeListen";
    return nullptr;
  }

  ncclResult_t tooLarge(size_t size, void** request) {
    *request = nullptr;
    WEFT_WARN("network %s (%s, ncclNet v%d) takes at most %d bytes per operation, asked for %zu", t_->name,
              origin_.c_str(), V, INT_MAX, size);
    return ncclInvalidArgument;
  }

  const Net* t_;
  std::string origin_;
  const ProgressEvents* events_;
  void* ctx_ = nullptr;
  bool initialized_ = false;
};

template <int V>
std::unique_ptr<Network> make(const void* table, const std::string& origin, std::string* why,
                              const ProgressEvents* events) {
  auto net = std::make_unique<PluginNetwork<V>>(static_cast<const typename Abi<V>::Net*>(table), origin, events);
  if (!net->init(why)) return nullptr;
  return net;
}

}  // namespace

std::unique_ptr<Network> adaptPlugin(int version, const void* table, const std::string& origin, std::string* why,
                                     const ProgressEvents* events) {
  switch (version) {
    case 8: return make<8>(table, origin, why, events);
    case 9: return make<9>(table, origin, why, events);
    case 10: return make<10>(table, origin, why, events);
    case 11: return make<11>(table, origin, why, events);
    case 12: return make<12>(table, origin, why, events);
    default: *why = "ncclNet version " + std::to_string(version) + " is not one Weft knows (8 to 12)"; return nullptr;
  }
}

}  // namespace weft::net
