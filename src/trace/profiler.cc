#include "trace/profiler.h"

#include <dlfcn.h>
#include <strings.h>

#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <string>

#include "base/log.h"
#include "base/params.h"

namespace weft::profiler {

namespace detail {
std::atomic<bool> gLoaded{false};
}  // namespace detail

namespace {

struct Plugin {
  int version = 0;
  const char* name = nullptr;
  ncclProfiler_v5_t* v5 = nullptr;  // v5, v6 and v7
  ncclProfiler_v4_t* v4 = nullptr;
  ncclProfiler_v3_t* v3 = nullptr;
  ncclProfiler_v2_t* v2 = nullptr;
  ncclProfiler_v1_t* v1 = nullptr;
  ncclProfilerStart_t startEvent = nullptr;
  ncclProfilerStop_t stopEvent = nullptr;
  ncclProfilerRecord_t recordEventState = nullptr;
  ncclProfilerFinalize_t finalize = nullptr;
};

Plugin gPlugin;

// NCCL's descriptor sizes on LP64 (a layout slip would show here first).
static_assert(sizeof(void*) != 8 ||
                  (sizeof(ncclProfilerEventDescr_v1_t) == 120 && sizeof(ncclProfilerEventDescr_v2_t) == 128 &&
                   sizeof(ncclProfilerEventDescr_v3_t) == 120),
              "profiler descriptor layouts v1..v3");
static_assert(sizeof(void*) != 8 || offsetof(ncclProfilerEventDescr_v1_t, coll.isNvls) == 112,
              "profiler v1 coll layout");

// What open() returns for a communicator: the plugin's own context, and the communicator's hash,
// which v1 to v3 put in every operation event.
struct Context {
  void* plugin;
  uint64_t commHash;
};
// One mask for the process, as NCCL has it: every init gets its address, and a plugin may change
// it at any time from any thread (hence the atomic loads in wanted()).
int gMask = 0;

extern "C" void profilerPluginLog(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                                  const char* fmt, ...) {
  const LogLevel l = static_cast<LogLevel>(level);
  const uint64_t subsys = flags == 0 ? uint64_t(kLogAll) : uint64_t(flags);
  if (level == NCCL_LOG_NONE || !logEnabled(l, subsys)) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  logPrint(l, subsys, file != nullptr ? file : "profiler-plugin", line, "profiler plugin: %s", msg);
}

// NCCL's order: the value as given, then libnccl-profiler-VALUE.so; unset: libnccl-profiler.so.
void* openLibrary(const std::string& setting, std::string* tried) {
  std::string names[2] = {setting.empty() ? "libnccl-profiler.so" : setting, ""};
  const bool plainName = setting.find('/') == std::string::npos &&
                         !(setting.rfind("lib", 0) == 0 && setting.size() > 3 &&
                           setting.compare(setting.size() - 3, 3, ".so") == 0);
  if (!setting.empty() && plainName) names[1] = "libnccl-profiler-" + setting + ".so";
  for (const std::string& n : names) {
    if (n.empty()) continue;
    if (void* lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
    const char* e = dlerror();
    *tried += (tried->empty() ? "" : "; ") + std::string(e != nullptr ? e : n + ": cannot load");
  }
  return nullptr;
}

void load() {
  const std::string setting = param::profilerPlugin();
  if (strcasecmp(setting.c_str(), "none") == 0) return;
  const bool named = !setting.empty();
  std::string tried;
  void* lib = openLibrary(setting, &tried);
  if (lib == nullptr) {
    if (named) WEFT_WARN("NCCL_PROFILER_PLUGIN=%s: %s; running without a profiler", setting.c_str(), tried.c_str());
    return;
  }
  Plugin p;
  for (int v = 7; v >= 5 && p.v5 == nullptr; --v) {
    const std::string sym = "ncclProfiler_v" + std::to_string(v);
    if ((p.v5 = static_cast<ncclProfiler_v5_t*>(dlsym(lib, sym.c_str()))) != nullptr) p.version = v;
  }
  if (p.v5 == nullptr && (p.v4 = static_cast<ncclProfiler_v4_t*>(dlsym(lib, "ncclProfiler_v4"))) != nullptr)
    p.version = 4;
  if (p.version == 0 && (p.v3 = static_cast<ncclProfiler_v3_t*>(dlsym(lib, "ncclProfiler_v3"))) != nullptr)
    p.version = 3;
  if (p.version == 0 && (p.v2 = static_cast<ncclProfiler_v2_t*>(dlsym(lib, "ncclProfiler_v2"))) != nullptr)
    p.version = 2;
  if (p.version == 0 && (p.v1 = static_cast<ncclProfiler_v1_t*>(dlsym(lib, "ncclProfiler_v1"))) != nullptr)
    p.version = 1;
  if (p.version == 0) {
    WEFT_WARN("NCCL_PROFILER_PLUGIN=%s: the library exports no ncclProfiler_v7..v1; running without a profiler",
              setting.c_str());
    dlclose(lib);
    return;
  }
  if (p.v1 != nullptr || p.v2 != nullptr || p.v3 != nullptr) {
    // v1 to v3 get only the events start() converts; stop is the one call they share with v4+.
    p.name = p.v3 != nullptr ? p.v3->name : p.v2 != nullptr ? p.v2->name : p.v1->name;
    p.stopEvent = p.v3 != nullptr ? p.v3->stopEvent : p.v2 != nullptr ? p.v2->stopEvent : p.v1->stopEvent;
  } else if (p.v5 != nullptr) {
    p.name = p.v5->name;
    p.startEvent = p.v5->startEvent;
    p.stopEvent = p.v5->stopEvent;
    p.recordEventState = p.v5->recordEventState;
    p.finalize = p.v5->finalize;
  } else {
    p.name = p.v4->name;
    p.startEvent = p.v4->startEvent;
    p.stopEvent = p.v4->stopEvent;
    p.recordEventState = p.v4->recordEventState;
    p.finalize = p.v4->finalize;
  }
  gPlugin = p;
  WEFT_INFO(kLogInit | kLogProfile, "profiler plugin %s (ABI v%d) from %s", p.name != nullptr ? p.name : "?", p.version,
            setting.empty() ? "libnccl-profiler.so" : setting.c_str());
  detail::gLoaded.store(true, std::memory_order_release);
}

// The event types a version knows.
uint64_t knownTypes(int version) {
  if (version >= 7) return 0xffff;
  if (version == 6) return 0x7fff;
  if (version == 5) return 0x0fff;
  if (version >= 3) return 0x00ff;
  return 0x003f;
}

// NCCL creates an event when its own bit or that of any event below it is set, so that the
// events a plugin asked for have their parents.
bool wanted(uint64_t type) {
  const uint64_t mask = static_cast<uint32_t>(__atomic_load_n(&gMask, __ATOMIC_RELAXED));
  const uint64_t below = ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileKernelCh | ncclProfileKernelPhase |
                         ncclProfileNetPlugin;
  uint64_t enough = type;
  if (type == ncclProfileKernelCh) enough |= ncclProfileKernelPhase;  // a phase's parent
  if (type == ncclProfileProxyOp) enough |= ncclProfileProxyStep | ncclProfileNetPlugin;
  if (type == ncclProfileProxyStep) enough |= ncclProfileNetPlugin;
  if (type == ncclProfileColl || type == ncclProfileP2p) enough |= below;
  if (type == ncclProfileGroup) enough |= ncclProfileColl | ncclProfileP2p | below;
  if (type == ncclProfileCollApi) enough |= ncclProfileColl | below;
  if (type == ncclProfileP2pApi) enough |= ncclProfileP2p | below;
  if (type == ncclProfileGroupApi)
    enough |= ncclProfileCollApi | ncclProfileP2pApi | ncclProfileKernelLaunch | ncclProfileGroup | ncclProfileColl |
              ncclProfileP2p | below;
  return (mask & enough) != 0 && (type & knownTypes(gPlugin.version)) != 0;
}

// NCCL's enum value of a name, by position in `names`; 0xff for a name the old enum lacks (Weft's
// AlltoAll, Gather, Scatter; its DDA and low-precision algorithms).
uint8_t indexOf(const char* name, std::initializer_list<const char*> names) {
  uint8_t i = 0;
  for (const char* n : names) {
    if (name != nullptr && n != nullptr && std::strcmp(name, n) == 0) return i;
    ++i;
  }
  return 0xff;
}
uint8_t funcV1(const char* f) {
  return indexOf(f, {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce", "SendRecv", "Send", "Recv"});
}
uint8_t datatypeV1(const char* t) {
  return indexOf(t, {"ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64", "ncclUint64", "ncclFloat16",
                     "ncclFloat32", "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"});
}
uint8_t algoV1(const char* a) {
  return indexOf(a, {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"});
}
uint8_t protoV1(const char* p) { return indexOf(p, {"LL", "LL128", "SIMPLE"}); }

// The header and the members v2 and v3 share, from the v7 layout Weft fills.
template <typename Old>
Old legacyCommon(const ncclProfilerEventDescr_t& d, uint64_t commHash) {
  Old o;
  std::memset(&o, 0, sizeof o);
  o.type = static_cast<uint8_t>(d.type);
  o.parentObj = d.parentObj;
  o.rank = d.rank;
  if (d.type == ncclProfileColl) {
    o.coll.commHash = commHash;
    o.coll.seqNumber = d.coll.seqNumber;
    o.coll.sendBuff = d.coll.sendBuff;
    o.coll.recvBuff = d.coll.recvBuff;
    o.coll.count = d.coll.count;
    o.coll.root = d.coll.root;
    o.coll.nMaxChannels = d.coll.nChannels;
    o.coll.nWarps = d.coll.nWarps;
  } else if (d.type == ncclProfileP2p) {
    o.p2p.commHash = commHash;
    o.p2p.buff = d.p2p.buff;
    o.p2p.count = d.p2p.count;
    o.p2p.peer = d.p2p.peer;
  } else if (d.type == ncclProfileProxyOp) {
    o.proxyOp.pid = d.proxyOp.pid;
    o.proxyOp.channelId = d.proxyOp.channelId;
    o.proxyOp.peer = d.proxyOp.peer;
    o.proxyOp.nSteps = d.proxyOp.nSteps;
    o.proxyOp.chunkSize = d.proxyOp.chunkSize;
    o.proxyOp.isSend = d.proxyOp.isSend;
  } else if (d.type == ncclProfileProxyStep) {
    o.proxyStep.step = d.proxyStep.step;
  }
  return o;
}

template <typename Old>
Old legacyNamed(const ncclProfilerEventDescr_t& d, uint64_t commHash) {
  Old o = legacyCommon<Old>(d, commHash);
  if (d.type == ncclProfileColl) {
    o.coll.func = d.coll.func;
    o.coll.datatype = d.coll.datatype;
    o.coll.algo = d.coll.algo;
    o.coll.proto = d.coll.proto;
  } else if (d.type == ncclProfileP2p) {
    o.p2p.func = d.p2p.func;
    o.p2p.datatype = d.p2p.datatype;
  }
  return o;
}

ncclProfilerEventDescr_v3_t legacyV3(const ncclProfilerEventDescr_t& d, uint64_t commHash) {
  ncclProfilerEventDescr_v3_t o = legacyNamed<ncclProfilerEventDescr_v3_t>(d, commHash);
  if (d.type == ncclProfileNetPlugin) {
    o.netPlugin.id = d.netPlugin.id;
    o.netPlugin.data = d.netPlugin.data;
  } else if (d.type == ncclProfileKernelCh) {
    o.kernelCh.channelId = d.kernelCh.channelId;  // v3 has no clock
  }
  return o;
}

ncclProfilerEventDescr_v2_t legacyV2(const ncclProfilerEventDescr_t& d, uint64_t commHash) {
  ncclProfilerEventDescr_v2_t o = legacyNamed<ncclProfilerEventDescr_v2_t>(d, commHash);
  if (d.type == ncclProfileColl) o.coll.trafficBytes = 0;  // NCCL leaves it 0 too
  return o;
}

ncclProfilerEventDescr_v1_t legacyV1(const ncclProfilerEventDescr_t& d, uint64_t commHash) {
  ncclProfilerEventDescr_v1_t o = legacyCommon<ncclProfilerEventDescr_v1_t>(d, commHash);
  if (d.type == ncclProfileColl) {
    o.coll.func = funcV1(d.coll.func);
    o.coll.datatype = datatypeV1(d.coll.datatype);
    o.coll.algo = algoV1(d.coll.algo);
    o.coll.proto = protoV1(d.coll.proto);
  } else if (d.type == ncclProfileP2p) {
    o.p2p.func = funcV1(d.p2p.func);
    o.p2p.datatype = datatypeV1(d.p2p.datatype);
  }
  return o;
}

}  // namespace

void* open(uint64_t commHash, const char* commName, int nNodes, int nranks, int rank) {
  static std::once_flag once;
  std::call_once(once, load);
  if (!active()) return nullptr;
  void* context = nullptr;
  ncclResult_t r = ncclSuccess;
  if (gPlugin.v5 != nullptr)
    r = gPlugin.v5->init(&context, commHash, &gMask, commName, nNodes, nranks, rank, profilerPluginLog);
  else if (gPlugin.v4 != nullptr)
    r = gPlugin.v4->init(&context, &gMask, commName, commHash, nNodes, nranks, rank, profilerPluginLog);
  else if (gPlugin.v3 != nullptr)
    r = gPlugin.v3->init(&context, &gMask);
  else if (gPlugin.v2 != nullptr)
    r = gPlugin.v2->init(&context, &gMask);
  else
    r = gPlugin.v1->init(&context, &gMask);
  if (r != ncclSuccess) {
    WEFT_WARN("rank %d: the profiler plugin's init returned %d; this communicator runs without it", rank,
              static_cast<int>(r));
    return nullptr;
  }
  return new Context{context, commHash};
}

void close(void* context) {
  if (context == nullptr) return;
  auto* c = static_cast<Context*>(context);
  if (gPlugin.finalize != nullptr)
    gPlugin.finalize(c->plugin);
  else if (gPlugin.v3 != nullptr)
    gPlugin.v3->finalize(c->plugin);
  else if (gPlugin.v2 != nullptr)
    gPlugin.v2->finalize(c->plugin);
  else if (gPlugin.v1 != nullptr)
    gPlugin.v1->finalize(c->plugin);
  delete c;
}

int version() { return gPlugin.version; }

void* start(void* context, ncclProfilerEventDescr_t* d) {
  if (context == nullptr || !wanted(d->type)) return nullptr;
  auto* c = static_cast<Context*>(context);
  void* handle = nullptr;
  if (gPlugin.version >= 4) {
    gPlugin.startEvent(c->plugin, &handle, d);
  } else if (gPlugin.version == 3) {
    ncclProfilerEventDescr_v3_t old = legacyV3(*d, c->commHash);
    gPlugin.v3->startEvent(c->plugin, &handle, &old);
  } else if (gPlugin.version == 2) {
    ncclProfilerEventDescr_v2_t old = legacyV2(*d, c->commHash);
    gPlugin.v2->startEvent(c->plugin, &handle, &old);
  } else {
    ncclProfilerEventDescr_v1_t old = legacyV1(*d, c->commHash);
    gPlugin.v1->startEvent(c->plugin, &handle, &old);
  }
  return handle;
}

void stop(void* handle) {
  if (handle != nullptr) gPlugin.stopEvent(handle);
}

void record(void* handle, ncclProfilerEventState_t state, const ncclProfilerEventStateArgs_t* args) {
  // v1 to v3 get no states: their ProxyOp states are the ones v4 deprecated, and the step states'
  // arguments had another layout. The group states are v5's; a v4 plugin has no group API event
  // to get them.
  if (handle == nullptr || gPlugin.version < 4) return;
  ncclProfilerEventStateArgs_t copy{};
  if (args != nullptr) copy = *args;
  gPlugin.recordEventState(handle, state, &copy);
}

bool wants(uint64_t type) { return active() && wanted(type); }

}  // namespace weft::profiler
