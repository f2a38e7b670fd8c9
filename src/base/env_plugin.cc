#include "base/env_plugin.h"

#include <dlfcn.h>
#include <strings.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "base/env_plugin_abi.h"
#include "base/log.h"
#include "base/plugin_library.h"

namespace weft::param {
namespace {

ncclResult_t (*gFinalize)(void) = nullptr;

void finalizeAtExit() {
  if (gFinalize != nullptr) gFinalize();
}

// A line a plugin logged before Weft's logging was set up.
struct PendingLine {
  LogLevel level;
  uint64_t subsys;
  std::string file;
  int line;
  std::string text;
};
// Never destroyed: a thread still running when the process exits (a bootstrap root started by
// ncclGetUniqueId) may set logging up, and so flush these lines, after static destructors began.
struct PendingLines {
  std::mutex mutex;
  std::vector<PendingLine> lines;
};
PendingLines& pendingLines() {
  static auto* pending = new PendingLines;
  return *pending;
}

// The logger a v2 plugin gets. Printing a line needs the logging settings, which are read through
// the plugin itself: a line logged while they are being read (from init or getEnv) waits in
// pendingLines() until logging is set up, instead of reading them again from inside the plugin.
extern "C" void envPluginLog(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt,
                             ...) {
  if (level == NCCL_LOG_NONE || fmt == nullptr) return;
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  const auto l = static_cast<LogLevel>(level);
  const uint64_t subsys = flags == 0 ? uint64_t(kLogEnv) : uint64_t(flags);
  const char* where = file != nullptr ? file : "env-plugin";
  if (logIsSetUp()) {
    logPrint(l, subsys, where, line, "env plugin: %s", text);
    return;
  }
  PendingLines& pending = pendingLines();
  std::lock_guard<std::mutex> lock(pending.mutex);
  pending.lines.push_back({l, subsys, where, line, text});
}

EnvPlugin load(const char* raw) {
  EnvPlugin p;
  p.setting = raw != nullptr ? raw : "";
  if (strcasecmp(p.setting.c_str(), "none") == 0) return p;
  const bool named = !p.setting.empty();
  // The default library is usually absent, which is no problem; one the user named is.
  auto problem = [&](const std::string& why) {
    if (named) p.problem = "NCCL_ENV_PLUGIN=" + p.setting + ": " + why + "; reading the process environment instead";
    return p;
  };
  p.library = pluginLibraryFor(p.setting, "env");
  // Never closed: the plugin's text stays in use for the life of the process.
  void* lib = dlopen(p.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    return problem("cannot load " + p.library + ": " + (err != nullptr ? err : "unknown error"));
  }
  // The newest version the library exports, as NCCL looks for them.
  const char* name = nullptr;
  const char* (*getEnv)(const char*) = nullptr;
  ncclResult_t initResult = ncclSuccess;
  if (auto* v2 = static_cast<ncclEnv_v2_t*>(dlsym(lib, "ncclEnvPlugin_v2"))) {
    p.abiVersion = 2;
    name = v2->name;
    getEnv = v2->getEnv;
    gFinalize = v2->finalize;
    if (getEnv != nullptr && v2->init != nullptr)
      initResult = v2->init(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, "", envPluginLog);
  } else if (auto* v1 = static_cast<ncclEnv_v1_t*>(dlsym(lib, "ncclEnvPlugin_v1"))) {
    p.abiVersion = 1;
    name = v1->name;
    getEnv = v1->getEnv;
    gFinalize = v1->finalize;
    if (getEnv != nullptr && v1->init != nullptr) initResult = v1->init(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, "");
  } else {
    return problem(p.library + " has neither ncclEnvPlugin_v2 nor ncclEnvPlugin_v1");
  }
  const std::string symbol = "ncclEnvPlugin_v" + std::to_string(p.abiVersion);
  if (getEnv == nullptr) {
    gFinalize = nullptr;
    return problem(p.library + "'s " + symbol + " has no getEnv");
  }
  if (initResult != ncclSuccess) {
    gFinalize = nullptr;
    return problem(p.library + "'s init returned " + std::to_string(static_cast<int>(initResult)));
  }
  p.name = name != nullptr ? name : p.library;
  p.getEnv = getEnv;
  std::atexit(finalizeAtExit);
  return p;
}

}  // namespace

const EnvPlugin& environmentPlugin(const char* setting) {
  // Never destroyed, for the same reason as pendingLines(): parameters may be read after exit began.
  static const EnvPlugin* loaded = new EnvPlugin(load(setting));
  return *loaded;
}

void flushEnvPluginLog() {
  std::vector<PendingLine> lines;
  {
    PendingLines& pending = pendingLines();
    std::lock_guard<std::mutex> lock(pending.mutex);
    lines.swap(pending.lines);
  }
  for (const PendingLine& l : lines)
    logPrint(l.level, l.subsys, l.file.c_str(), l.line, "env plugin: %s", l.text.c_str());
}

}  // namespace weft::param
