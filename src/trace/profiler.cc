#include "trace/profiler.h"

#include <dlfcn.h>
#include <strings.h>

#include <cstdarg>
#include <cstdio>
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
  ncclProfilerStart_t startEvent = nullptr;
  ncclProfilerStop_t stopEvent = nullptr;
  ncclProfilerRecord_t recordEventState = nullptr;
  ncclProfilerFinalize_t finalize = nullptr;
};

Plugin gPlugin;
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
  if (p.version == 0) {
    const bool older = dlsym(lib, "ncclProfiler_v3") != nullptr || dlsym(lib, "ncclProfiler_v2") != nullptr ||
                       dlsym(lib, "ncclProfiler_v1") != nullptr;
    WEFT_WARN("NCCL_PROFILER_PLUGIN=%s: %s; running without a profiler", setting.c_str(),
              older ? "the library exports only profiler ABI v1-v3, which Weft does not read (v4 to v7 it does)"
                    : "the library exports no ncclProfiler_v7..v4");
    dlclose(lib);
    return;
  }
  if (p.v5 != nullptr) {
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
  return 0x00ff;
}

// NCCL creates an event when its own bit or that of any event below it is set, so that the
// events a plugin asked for have their parents.
bool wanted(uint64_t type) {
  const uint64_t mask = static_cast<uint32_t>(__atomic_load_n(&gMask, __ATOMIC_RELAXED));
  const uint64_t below = ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileKernelCh | ncclProfileNetPlugin;
  uint64_t enough = type;
  if (type == ncclProfileColl || type == ncclProfileP2p) enough |= below;
  if (type == ncclProfileGroup) enough |= ncclProfileColl | ncclProfileP2p | below;
  if (type == ncclProfileCollApi) enough |= ncclProfileColl | below;
  if (type == ncclProfileP2pApi) enough |= ncclProfileP2p | below;
  if (type == ncclProfileGroupApi)
    enough |= ncclProfileCollApi | ncclProfileP2pApi | ncclProfileKernelLaunch | ncclProfileGroup | ncclProfileColl |
              ncclProfileP2p | below;
  return (mask & enough) != 0 && (type & knownTypes(gPlugin.version)) != 0;
}

}  // namespace

void* open(uint64_t commHash, const char* commName, int nNodes, int nranks, int rank) {
  static std::once_flag once;
  std::call_once(once, load);
  if (!active()) return nullptr;
  void* context = nullptr;
  ncclResult_t r = gPlugin.v5 != nullptr
                       ? gPlugin.v5->init(&context, commHash, &gMask, commName, nNodes, nranks, rank, profilerPluginLog)
                       : gPlugin.v4->init(&context, &gMask, commName, commHash, nNodes, nranks, rank,
                                          profilerPluginLog);
  if (r != ncclSuccess) {
    WEFT_WARN("rank %d: the profiler plugin's init returned %d; this communicator runs without it", rank,
              static_cast<int>(r));
    return nullptr;
  }
  return context;
}

void close(void* context) {
  if (context != nullptr && gPlugin.finalize != nullptr) gPlugin.finalize(context);
}

int version() { return gPlugin.version; }

void* start(void* context, ncclProfilerEventDescr_t* d) {
  if (context == nullptr || !wanted(d->type)) return nullptr;
  void* handle = nullptr;
  gPlugin.startEvent(context, &handle, d);
  return handle;
}

void stop(void* handle) {
  if (handle != nullptr) gPlugin.stopEvent(handle);
}

void record(void* handle, ncclProfilerEventState_t state) {
  if (handle == nullptr) return;
  // The group states are v5's; a v4 plugin has no group API event to get them.
  ncclProfilerEventStateArgs_t args{};
  gPlugin.recordEventState(handle, state, &args);
}

}  // namespace weft::profiler
