// The library a plugin setting names, by NCCL's rule for NCCL_TUNER_PLUGIN and NCCL_ENV_PLUGIN:
// "" is libnccl-KIND.so, a path or a libX.so name is taken as written, any other NAME is
// libnccl-KIND-NAME.so.
#pragma once
#include <string>

namespace weft {

inline std::string pluginLibraryFor(const std::string& setting, const char* kind) {
  if (setting.empty()) return std::string("libnccl-") + kind + ".so";
  if (setting.find('/') != std::string::npos) return setting;
  const bool isLibName = setting.rfind("lib", 0) == 0 && setting.size() > 3 &&
                         setting.compare(setting.size() - 3, 3, ".so") == 0;
  return isLibName ? setting : std::string("libnccl-") + kind + "-" + setting + ".so";
}

}  // namespace weft
