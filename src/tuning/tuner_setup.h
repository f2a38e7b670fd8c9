// Building a communicator's Tuner at the end of its init. Every rank calls makeTuner with the
// same settings (the agreed ones) and exchanges, over the bootstrap, what only it knows: its
// host's machine constants and cores (combined by agreed_constants.h's rule) and which tuner
// plugin it loaded (which must be the same everywhere). The communicator's side of this, and its
// error reporting, is src/comm/comm_algorithms.cc.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/params.h"
#include "bootstrap/bootstrap.h"
#include "collectives/model/cost_model.h"
#include "collectives/model/gpu_constants.h"
#include "nccl.h"
#include "tuning/tuner.h"

namespace weft {

// What the tuner needs to know of its communicator.
struct TunerInit {
  int rank = 0;
  int nranks = 1;
  uint64_t commHash = 0;
  std::vector<uint64_t> hostOf;  // every rank's host hash, in rank order
  // Every rank's machine (boot id hash), in rank order; empty: each host is a machine of its own.
  std::vector<uint64_t> machineOf;
  int nChannels = 1;     // the communicator's channels: the model's upper bound
  int minChannels = 1;   // ncclConfig_t.minCTAs as agreed
  size_t slotBytes = 0;  // FIFO slot size
  const param::Agreed* agreed = nullptr;
  // Set for a GPU communicator: this rank's GPU, whose family's constants it contributes
  // (collectives/model/gpu_constants.h) instead of its host's.
  std::optional<GpuDescription> gpu;
  // Every rank of the communicator runs on a GPU (the same on every rank): channels are blocks.
  bool allOnGpus = false;
  // The network this rank reaches other hosts with, when it has one: the link speed its device
  // reports (GB/s), its latency (us, 0 when it reports none), and whether it moves data through
  // the host's TCP stack, which the calibration measured (netGBps, netLatUs).
  struct NetLink {
    double gBps = 0;
    double latUs = 0;
    bool hostTcp = false;
  };
  std::optional<NetLink> net;
};

// This host's contribution to the network constants (agreed_constants.h takes the slowest host):
// over the host's TCP stack, the smaller of what calibration measured and the link's speed; over
// another network (verbs, a plugin), the link's own figures, or the defaults where it gives none.
void applyNetLink(const TunerInit::NetLink& link, HostConstants* hc);

// The model's view of the communicator, with this process's usable cores (weft-info describes a
// communicator without making one).
ModelInput modelInputFor(const TunerInit& init);

// Builds the tuner from the agreed settings and the agreed machine constants. pluginSetting is this
// rank's NCCL_TUNER_PLUGIN (a path may differ between hosts; the plugin loaded must not). Settings
// that do not parse and a plugin that fails are passed to `warn` and left out. On failure (an
// exchange failed, or ranks loaded different plugins, naming them) *why says so, prefixed with
// "init of rank N: ".
ncclResult_t makeTuner(Bootstrap& bootstrap, const TunerInit& init, const std::string& pluginSetting,
                       void (*warn)(const std::string&), std::unique_ptr<Tuner>* out, std::string* why);

}  // namespace weft
