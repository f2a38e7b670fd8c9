// Cost-model inputs that several tuner tests share.
#pragma once
#include "collectives/model/cost_model.h"

namespace weft {

// Four ranks on one host of 8 cores, up to 4 channels of 128 KiB slots, the one-shot ring up to
// 8 KiB.
inline ModelInput fourRanksOneHost() {
  ModelInput in;
  in.nranks = 4;
  in.nHosts = 1;
  in.ranksPerHost = 4;
  in.cores = 8;
  in.minChannels = 1;
  in.maxChannels = 4;
  in.slotBytes = 128 * 1024;
  in.oneShotMaxBytes = 8192;
  return in;
}

}  // namespace weft
