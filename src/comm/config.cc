#include "comm/config.h"

#include <climits>
#include <cstddef>
#include <cstring>

#include "base/params.h"

namespace weft {
namespace {

constexpr unsigned kConfigMagic = 0xcafebeef;
// RCCL's struct is a little longer than NCCL's; anything past this is not a config.
constexpr size_t kMaxConfigBytes = 4096;

// Reads one field only when the caller's struct is long enough to contain it: an application
// built against an older nccl.h passes a shorter struct.
template <typename T>
bool fieldPresent(const ncclConfig_t* c, size_t offset) {
  return offset + sizeof(T) <= c->size;
}

void readInt(const ncclConfig_t* c, size_t offset, int* out) {
  if (!fieldPresent<int>(c, offset)) return;
  int v;
  memcpy(&v, reinterpret_cast<const char*>(c) + offset, sizeof v);
  if (v != NCCL_CONFIG_UNDEF_INT) *out = v;
}

// Only the pointer: it is followed after every integer field has been checked (validate()), so a
// struct that those checks refuse never has its string pointers dereferenced.
const char* readStringPointer(const ncclConfig_t* c, size_t offset) {
  if (!fieldPresent<const char*>(c, offset)) return nullptr;
  const char* v;
  memcpy(&v, reinterpret_cast<const char*>(c) + offset, sizeof v);
  return v;
}

ncclResult_t validate(const CommConfig& cfg, std::string* why) {
  if (cfg.blocking != 0 && cfg.blocking != 1) {
    *why = "config.blocking must be 0 or 1 (got " + std::to_string(cfg.blocking) + ")";
    return ncclInvalidArgument;
  }
  if (cfg.minCTAs < 1 || cfg.maxCTAs < 1 || cfg.minCTAs > cfg.maxCTAs) {
    *why = "config minCTAs/maxCTAs must satisfy 1 <= minCTAs <= maxCTAs (got " + std::to_string(cfg.minCTAs) + ", " +
           std::to_string(cfg.maxCTAs) + ")";
    return ncclInvalidArgument;
  }
  if (cfg.ctaPolicy < 0 || cfg.ctaPolicy > (NCCL_CTA_POLICY_EFFICIENCY | NCCL_CTA_POLICY_ZERO)) {
    *why = "config.CTAPolicy has an unknown value " + std::to_string(cfg.ctaPolicy);
    return ncclInvalidArgument;
  }
  if (cfg.numRmaCtx < 1 || cfg.maxP2pPeers < 0) {
    *why = "config numRmaCtx must be at least 1 and maxP2pPeers not negative (got " + std::to_string(cfg.numRmaCtx) +
           ", " + std::to_string(cfg.maxP2pPeers) + ")";
    return ncclInvalidArgument;
  }
  if (cfg.numRmaSig < 1) {
    *why = "config.numRmaSig must be at least 1 (got " + std::to_string(cfg.numRmaSig) + ")";
    return ncclInvalidArgument;
  }
  if ((cfg.launchOrderImplicit != 0 && cfg.launchOrderImplicit != 1) ||
      (cfg.rmaEagerInit != 0 && cfg.rmaEagerInit != 1)) {
    *why = "config launchOrderImplicit and rmaEagerInit must be 0 or 1 (got " +
           std::to_string(cfg.launchOrderImplicit) + ", " + std::to_string(cfg.rmaEagerInit) + ")";
    return ncclInvalidArgument;
  }
  if (cfg.hostCftMode != ncclHostCftDefault && cfg.hostCftMode != ncclHostCftEnable &&
      cfg.hostCftMode != ncclHostCftDisable && cfg.hostCftMode != ncclHostCftFallback) {
    *why = "config.hostCftMode has an unknown value " + std::to_string(cfg.hostCftMode) +
           " (ncclHostCftDefault, Enable, Disable or Fallback)";
    return ncclInvalidArgument;
  }
  // A set of DisableX bits, 0 (all enabled) or INT_MAX (all disabled, present and future).
  if (cfg.nvlsHostMode != ncclNvlsHostModeDefault && cfg.nvlsHostMode < 0) {
    *why = "config.nvlsHostMode has an unknown value " + std::to_string(cfg.nvlsHostMode);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t parseConfig(const ncclConfig_t* user, CommConfig* out, std::string* why) {
  CommConfig cfg;
  int envBlocking = static_cast<int>(param::commBlocking());
  if (envBlocking == 0 || envBlocking == 1) cfg.blocking = envBlocking;
  // This rank's proposal: communicator init puts rank 0's channel range in force (agreement.h).
  const param::Agreed local = param::localAgreed();
  cfg.minCTAs = static_cast<int>(local.minNChannels);
  cfg.maxCTAs = static_cast<int>(local.maxNChannels);
  const char* netName = nullptr;
  const char* commName = nullptr;
  if (user != nullptr) {
    if (user->magic != kConfigMagic) {
      *why = "ncclConfig_t was not initialised with NCCL_CONFIG_INITIALIZER (bad magic)";
      return ncclInvalidArgument;
    }
    if (user->size < offsetof(ncclConfig_t, blocking) + sizeof(int) || user->size > kMaxConfigBytes) {
      *why = "ncclConfig_t has an impossible size field (" + std::to_string(user->size) + ")";
      return ncclInvalidArgument;
    }
    readInt(user, offsetof(ncclConfig_t, blocking), &cfg.blocking);
    readInt(user, offsetof(ncclConfig_t, cgaClusterSize), &cfg.cgaClusterSize);
    readInt(user, offsetof(ncclConfig_t, minCTAs), &cfg.minCTAs);
    readInt(user, offsetof(ncclConfig_t, maxCTAs), &cfg.maxCTAs);
    netName = readStringPointer(user, offsetof(ncclConfig_t, netName));
    readInt(user, offsetof(ncclConfig_t, splitShare), &cfg.splitShare);
    readInt(user, offsetof(ncclConfig_t, trafficClass), &cfg.trafficClass);
    commName = readStringPointer(user, offsetof(ncclConfig_t, commName));
    readInt(user, offsetof(ncclConfig_t, collnetEnable), &cfg.collnetEnable);
    readInt(user, offsetof(ncclConfig_t, CTAPolicy), &cfg.ctaPolicy);
    readInt(user, offsetof(ncclConfig_t, shrinkShare), &cfg.shrinkShare);
    readInt(user, offsetof(ncclConfig_t, nvlsCTAs), &cfg.nvlsCTAs);
    readInt(user, offsetof(ncclConfig_t, nChannelsPerNetPeer), &cfg.nChannelsPerNetPeer);
    readInt(user, offsetof(ncclConfig_t, nvlinkCentricSched), &cfg.nvlinkCentricSched);
    readInt(user, offsetof(ncclConfig_t, graphUsageMode), &cfg.graphUsageMode);
    readInt(user, offsetof(ncclConfig_t, numRmaCtx), &cfg.numRmaCtx);
    readInt(user, offsetof(ncclConfig_t, maxP2pPeers), &cfg.maxP2pPeers);
    readInt(user, offsetof(ncclConfig_t, graphStreamOrdering), &cfg.graphStreamOrdering);
    readInt(user, offsetof(ncclConfig_t, launchOrderImplicit), &cfg.launchOrderImplicit);
    readInt(user, offsetof(ncclConfig_t, numRmaSig), &cfg.numRmaSig);
    readInt(user, offsetof(ncclConfig_t, rmaEagerInit), &cfg.rmaEagerInit);
    // readInt keeps the default for UNDEF, which is also the Default enumerator of these two.
    readInt(user, offsetof(ncclConfig_t, hostCftMode), &cfg.hostCftMode);
    readInt(user, offsetof(ncclConfig_t, nvlsHostMode), &cfg.nvlsHostMode);
  }
  if (ncclResult_t r = validate(cfg, why); r != ncclSuccess) return r;
  if (netName != nullptr) cfg.netName = netName;
  if (commName != nullptr) cfg.commName = commName;
  *out = cfg;
  return ncclSuccess;
}

}  // namespace weft
