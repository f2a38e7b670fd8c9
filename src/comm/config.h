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
  // NCCL 2.30-2.32's fields. Weft checks and keeps them (a split inherits them); none changes what
  // host mode does: the graph, launch-order and NVLS ones concern GPU kernels, the one-sided calls
  // use one context with one signal per peer (sigIdx and ctx 0), set up when a window is
  // registered, and Weft has no CFT (hostCftMode).
  int graphUsageMode = 0;
  int numRmaCtx = 1;
  int maxP2pPeers = 0;
  int graphStreamOrdering = 0;
  int launchOrderImplicit = 0;
  int numRmaSig = 1;
  int rmaEagerInit = 0;
  int hostCftMode = NCCL_CONFIG_UNDEF_INT;   // ncclHostCftDefault
  int nvlsHostMode = NCCL_CONFIG_UNDEF_INT;  // ncclNvlsHostModeDefault
};

// Parses user (may be null: defaults). Rejects an uninitialised or corrupt config with a message.
ncclResult_t parseConfig(const ncclConfig_t* user, CommConfig* out, std::string* why);

}  // namespace weft
