#include "tuning/plugin/tuner_plugin.h"

#include <dlfcn.h>
#include <strings.h>

#include <cstdarg>
#include <cstdio>

#include "base/log.h"
#include "base/plugin_library.h"

namespace weft {
namespace {

// What a plugin logs goes through Weft's logger, under NCCL_DEBUG and NCCL_DEBUG_SUBSYS (NCCL's
// subsystem flags and Weft's share their bit positions).
extern "C" void pluginLog(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt,
                          ...) {
  LogLevel l = static_cast<LogLevel>(level);
  uint64_t subsys = flags == 0 ? uint64_t(kLogTuning) : uint64_t(flags);
  if (level == NCCL_LOG_NONE || !logEnabled(l, subsys)) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  logPrint(l, subsys, file ? file : "tuner-plugin", line, "tuner plugin: %s", msg);
}

}  // namespace

std::unique_ptr<TunerPlugin> TunerPlugin::open(const std::string& setting, const TunerPluginShape& shape) {
  if (strcasecmp(setting.c_str(), "none") == 0) return nullptr;
  const bool named = !setting.empty();
  // A plugin the user named and that cannot be used is a warning; the implicit default is
  // usually absent, which is not worth more than an INFO line.
  auto report = [&](const std::string& what) {
    if (named)
      WEFT_WARN("NCCL_TUNER_PLUGIN=%s: %s; tuning without the plugin", setting.c_str(), what.c_str());
    else
      WEFT_INFO(kLogTuning | kLogInit, "no tuner plugin: %s", what.c_str());
  };
  std::unique_ptr<TunerPlugin> p(new TunerPlugin());
  p->library_ = pluginLibraryFor(setting, "tuner");
  p->lib_ = dlopen(p->library_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (p->lib_ == nullptr) {
    const char* err = dlerror();
    report("cannot load " + p->library_ + ": " + (err ? err : "unknown error"));
    return nullptr;
  }
  ncclNvlDomainInfo_v7_t domains{shape.nNodes, shape.minRanksPerNode, shape.maxRanksPerNode};
  // Each version gets constants of its own size (a plugin may write all of them); Weft's model
  // does not use NCCL's GPU tables, so they start as zeros and what comes back is not read.
  ncclTunerConstants_v7_t constantsV7{};
  ncclTunerConstants_v6_t constants{};
  ncclResult_t r = ncclInternalError;
  const char* pluginName = nullptr;
  if (auto* v7 = static_cast<ncclTuner_v7_t*>(dlsym(p->lib_, "ncclTunerPlugin_v7"))) {
    p->version_ = 7;
    pluginName = v7->name;
    p->getCollInfo_ = v7->getCollInfo;
    p->finalize_ = v7->finalize;
    if (v7->init)
      r = v7->init(&p->context_, shape.commId, shape.nRanks, shape.nNodes, pluginLog, &domains, &constantsV7);
  } else if (auto* v6 = static_cast<ncclTuner_v6_t*>(dlsym(p->lib_, "ncclTunerPlugin_v6"))) {
    p->version_ = 6;
    pluginName = v6->name;
    p->getCollInfo_ = v6->getCollInfo;
    p->finalize_ = v6->finalize;
    if (v6->init) r = v6->init(&p->context_, shape.commId, shape.nRanks, shape.nNodes, pluginLog, &domains, &constants);
  } else if (auto* v5 = static_cast<ncclTuner_v5_t*>(dlsym(p->lib_, "ncclTunerPlugin_v5"))) {
    p->version_ = 5;
    pluginName = v5->name;
    p->getCollInfo_ = v5->getCollInfo;
    p->finalize_ = v5->finalize;
    if (v5->init) r = v5->init(&p->context_, shape.commId, shape.nRanks, shape.nNodes, pluginLog, &domains, &constants);
  } else if (auto* v4 = static_cast<ncclTuner_v4_t*>(dlsym(p->lib_, "ncclTunerPlugin_v4"))) {
    p->version_ = 4;
    pluginName = v4->name;
    p->getCollInfo_ = v4->getCollInfo;
    p->finalize_ = v4->destroy;
    if (v4->init) r = v4->init(shape.nRanks, shape.nNodes, pluginLog, &p->context_);
  } else {
    report(p->library_ + " has none of ncclTunerPlugin_v7, _v6, _v5, _v4 (older versions are not supported)");
    return nullptr;  // the destructor closes the library; no context to finalize
  }
  p->name_ = pluginName ? pluginName : "(unnamed)";
  if (r != ncclSuccess || p->getCollInfo_ == nullptr) {
    p->finalize_ = nullptr;  // init failed: there is no context to finalize
    report("plugin \"" + p->name_ + "\" (v" + std::to_string(p->version_) + ", " + p->library_ + ") " +
           (r != ncclSuccess ? "failed to initialize: " + std::string(ncclGetErrorString(r))
                             : std::string("has no getCollInfo")));
    return nullptr;
  }
  WEFT_INFO(kLogTuning | kLogInit, "tuner plugin \"%s\" (v%d) loaded from %s", p->name_.c_str(), p->version_,
            p->library_.c_str());
  return p;
}

TunerPlugin::~TunerPlugin() {
  if (finalize_ != nullptr) {
    ncclResult_t r = finalize_(context_);
    if (r != ncclSuccess) WEFT_WARN("tuner plugin \"%s\": finalize failed: %s", name_.c_str(), ncclGetErrorString(r));
  }
  if (lib_ != nullptr) dlclose(lib_);
}

bool TunerPlugin::getCollInfo(ncclFunc_t coll, size_t nBytes, int numPipeOps, float** table, int numAlgo, int numProto,
                              int* nChannels) const {
  return getCollInfo_(context_, coll, nBytes, numPipeOps, table, numAlgo, numProto, /*regBuff=*/0, nChannels) ==
         ncclSuccess;
}

}  // namespace weft
