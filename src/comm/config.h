// A communicator's settings, read from the caller's ncclConfig_t by its `size` field so configs from
// older NCCL versions and RCCL's longer struct both work, then completed from the environment.
#pragma once
#include <string>

#include "nccl.h"

namespace weft {

struct CommConfig {
  int blocking = 1;
  int cgaClusterSize = 0;
  int minCTAs = 1;
  int maxCTAs = 64;
  std::string netName;
  int splitShare = 0;
  int trafficClass = 0;
  std::string commName;
  int collnetEnable = 0;
  int ctaPolicy = NCCL_CTA_POLICY_DEFAULT;
  int shrinkShare = 0;
  int nvlsCTAs = 0;
  int nChannelsPerNetPeer = 0;
  int nvlinkCentricSched = 0;
  // NCCL 2.30's fields. Weft keeps them (a split inherits them) but nothing reads them yet: the two
  // graph ones concern CUDA graphs, the other two one-sided operations (not implemented).
  int graphUsageMode = 0;
  int numRmaCtx = 1;
  int maxP2pPeers = 0;
  int graphStreamOrdering = 0;
};

// Parses user (may be null: defaults). Rejects an uninitialised or corrupt config with a message.
ncclResult_t parseConfig(const ncclConfig_t* user, CommConfig* out, std::string* why);

}  // namespace weft
