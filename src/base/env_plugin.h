// The environment plugin (NCCL_ENV_PLUGIN, env_plugin_abi.h): when one is loaded, every parameter
// of the registry (params.cc) is looked up through it instead of the process environment, as NCCL
// does. NCCL_ENV_PLUGIN itself is always read from the process environment: it says where the
// others come from.
#pragma once
#include <string>

namespace weft::param {

struct EnvPlugin {
  std::string setting;  // NCCL_ENV_PLUGIN as set ("" = the default library, if any)
  std::string library;  // what was loaded, or tried
  std::string name;     // the plugin's own name; empty when none is in use
  std::string problem;  // why a plugin the user named is not in use (a warning), else empty
  int abiVersion = 0;   // 2 or 1: which of the plugin's symbols is in use; 0 when none
  const char* (*getEnv)(const char* name) = nullptr;
  bool inUse() const { return getEnv != nullptr; }
};

// Loads the plugin named by `setting` (the raw NCCL_ENV_PLUGIN, may be null) on the first call and
// returns the result of that first call ever after: "none" loads nothing; "" tries libnccl-env.so
// quietly; "NAME" loads libnccl-env-NAME.so; "libX.so" or a path loads that file.
const EnvPlugin& environmentPlugin(const char* setting);

// Prints what a v2 plugin logged before logging was set up. Called once logging is set up (its
// settings come through the plugin, so the plugin may log before anything can be printed).
void flushEnvPluginLog();

}  // namespace weft::param
