#include "base/env_plugin.h"

#include <dlfcn.h>
#include <strings.h>

#include <cstdlib>

#include "base/env_plugin_abi.h"
#include "base/plugin_library.h"

namespace weft::param {
namespace {

ncclEnv_v1_t* gLoaded = nullptr;

void finalizeAtExit() {
  if (gLoaded != nullptr && gLoaded->finalize != nullptr) gLoaded->finalize();
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
  auto* v1 = static_cast<ncclEnv_v1_t*>(dlsym(lib, "ncclEnvPlugin_v1"));
  if (v1 == nullptr) return problem(p.library + " has no ncclEnvPlugin_v1 (the only version Weft reads)");
  if (v1->getEnv == nullptr) return problem(p.library + "'s ncclEnvPlugin_v1 has no getEnv");
  if (v1->init != nullptr) {
    const ncclResult_t r = v1->init(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, "");
    if (r != ncclSuccess) return problem(p.library + "'s init returned " + std::to_string(static_cast<int>(r)));
  }
  p.name = v1->name != nullptr ? v1->name : p.library;
  p.getEnv = v1->getEnv;
  gLoaded = v1;
  std::atexit(finalizeAtExit);
  return p;
}

}  // namespace

const EnvPlugin& environmentPlugin(const char* setting) {
  static const EnvPlugin loaded = load(setting);
  return loaded;
}

}  // namespace weft::param
