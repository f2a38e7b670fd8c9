// The settings of one nccl<Coll>Config call (ncclCollConfig_t), handed to the plain collective it
// runs: the Config entry point checks the struct and opens a CallSettingsScope around the plain
// call, whose submit() copies the settings into its task. One thread runs one call at a time, so
// a thread-local slot is enough, and the plain entry points keep one code path for both.
#pragma once
#include <cstdint>

namespace weft {

struct CallSettings {
  const char* fn = nullptr;            // the Config entry point, for messages
  const char* algSelection = nullptr;  // the caller's string, valid during the call
  bool forceAlgSelection = true;
  int minChannels = 0, maxChannels = 0;  // 0: unset
  uint64_t userProfilerTag = 0;
};

// The settings of the Config call this thread is running, or null.
const CallSettings* currentCallSettings();

class CallSettingsScope {
 public:
  explicit CallSettingsScope(const CallSettings* s);
  ~CallSettingsScope();
  CallSettingsScope(const CallSettingsScope&) = delete;
  CallSettingsScope& operator=(const CallSettingsScope&) = delete;

 private:
  const CallSettings* previous_;
};

}  // namespace weft
