// Loads a tuner plugin (NCCL_TUNER_PLUGIN) and adapts versions 4 to 7 of NCCL's tuner ABI to one
// interface. Each communicator opens its own instance (its own plugin context); the dynamic
// loader shares the library between them.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "tuning/plugin/tuner_abi.h"

namespace weft {

struct TunerPluginShape {
  uint64_t commId = 0;
  int nRanks = 1;
  int nNodes = 1;
  int minRanksPerNode = 1;
  int maxRanksPerNode = 1;
};

class TunerPlugin {
 public:
  // `setting` is NCCL_TUNER_PLUGIN: "" tries libnccl-tuner.so quietly, "none" loads nothing, a
  // value with a '/' is a path, "libX.so" a library name, anything else NAME means
  // libnccl-tuner-NAME.so. A library that does not load, has no known symbol, or whose init fails
  // is reported (a warning when the user named it) and nullptr comes back: Weft tunes alone.
  static std::unique_ptr<TunerPlugin> open(const std::string& setting, const TunerPluginShape& shape);
  ~TunerPlugin();
  TunerPlugin(const TunerPlugin&) = delete;
  TunerPlugin& operator=(const TunerPlugin&) = delete;

  int version() const { return version_; }
  const std::string& name() const { return name_; }
  const std::string& library() const { return library_; }
  // False when the plugin's getCollInfo failed (the caller then uses its own costs).
  bool getCollInfo(ncclFunc_t coll, size_t nBytes, int numPipeOps, float** table, int numAlgo, int numProto,
                   int* nChannels) const;

 private:
  TunerPlugin() = default;
  void* lib_ = nullptr;
  void* context_ = nullptr;
  int version_ = 0;
  std::string name_, library_;
  weftTunerGetCollInfo_t getCollInfo_ = nullptr;
  ncclResult_t (*finalize_)(void*) = nullptr;
};

}  // namespace weft
