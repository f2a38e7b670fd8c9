#include "comm/agreement.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/params.h"
#include "base/result.h"
#include "bootstrap/bootstrap.h"
#include "comm/comm.h"
#include "comm/comm_error.h"
#include "sockets/tls.h"

namespace weft {
namespace {

// The part of ncclConfig_t that steers the tuner (its channel range), as every rank sent it.
struct ConfigProposal {
  int32_t minCTAs;
  int32_t maxCTAs;
};

void warnDifference(const ncclComm* comm, const std::string& name, const std::string& mine,
                    const std::string& inForce) {
  warnOncePerProcess(name + "=\"" + mine + "\" on rank " + std::to_string(comm->rank) + " differs from rank 0's \"" +
                     inForce + "\": rank 0's value is in force on every rank of the communicator (docs/env.md, " +
                     "scope agreed)");
}

// Host-mode ranks and GPU ranks cannot share a communicator: their FIFOs live in different kinds
// of memory and they run different lanes. Every rank sees the same RankInfo, so all fail alike.
ncclResult_t checkSameDeviceKind(ncclComm* comm) {
  std::string odd;
  const bool rootOnGpu = comm->ranks[0].device >= 0;
  for (const RankInfo& r : comm->ranks)
    if ((r.device >= 0) != rootOnGpu) odd += (odd.empty() ? "" : ", ") + std::to_string(r.rank);
  if (odd.empty()) return ncclSuccess;
  return setError(comm, ncclInvalidUsage,
                  "init of rank %d: rank 0 runs %s but rank(s) %s do not: every rank of a communicator must run on a "
                  "GPU, or every rank in host mode (WEFT_DEVICE=host, or no usable GPU)",
                  comm->rank, rootOnGpu ? "on a GPU" : "in host mode", odd.c_str());
}

// Encryption decides what goes on the wire, so unlike the tunables it is not taken from rank 0: a
// difference fails init on every rank (each sees the same table). A TLS rank and a plaintext rank
// normally fail earlier, in the bootstrap's handshake; this catches a process whose setting
// changed between the bootstrap and now.
ncclResult_t checkSameEncryption(ncclComm* comm) {
  std::vector<uint64_t> on(comm->nranks, 0);
  on[comm->rank] = tlsEnabled() ? 1 : 0;
  std::string why;
  ncclResult_t r = comm->bootstrap->allGather(on.data(), sizeof(uint64_t), &why);
  if (r != ncclSuccess)
    return setError(comm, r, "init of rank %d: agreeing on encryption failed: %s", comm->rank, why.c_str());
  std::string odd;
  for (int i = 0; i < comm->nranks; ++i)
    if (on[i] != on[0]) odd += (odd.empty() ? "" : ", ") + std::to_string(i);
  if (odd.empty()) return ncclSuccess;
  return setError(comm, ncclInvalidUsage,
                  "init of rank %d: rank 0 %s TLS encryption but rank(s) %s do not: every rank must call "
                  "ncclSetEncryption (or set WEFT_TLS_KEY_FILE) alike",
                  comm->rank, on[0] ? "uses" : "does not use", odd.c_str());
}

}  // namespace

void warnOncePerProcess(const std::string& text) {
  static std::mutex mutex;
  static std::set<std::string> printed;
  std::lock_guard<std::mutex> lock(mutex);
  if (printed.insert(text).second) WEFT_WARN("%s", text.c_str());
}

ncclResult_t allGatherStrings(Bootstrap& bootstrap, const std::string& mine, std::vector<std::string>* all,
                              std::string* why) {
  const int n = bootstrap.nranks(), me = bootstrap.rank();
  std::vector<uint64_t> lengths(n, 0);
  lengths[me] = mine.size();
  ncclResult_t r = bootstrap.allGather(lengths.data(), sizeof(uint64_t), why);
  if (r != ncclSuccess) return r;
  uint64_t longest = 0;
  for (uint64_t l : lengths) longest = std::max(longest, l);
  if (longest > (1u << 20)) {
    *why = "a rank proposed " + std::to_string(longest) + " bytes of settings (at most 1 MiB)";
    return ncclInvalidUsage;
  }
  const size_t width = std::max<uint64_t>(longest, 1);
  std::vector<char> texts(size_t(n) * width, '\0');
  memcpy(texts.data() + size_t(me) * width, mine.data(), mine.size());
  r = bootstrap.allGather(texts.data(), width, why);
  if (r != ncclSuccess) return r;
  all->clear();
  for (int i = 0; i < n; ++i) all->emplace_back(texts.data() + size_t(i) * width, lengths[i]);
  return ncclSuccess;
}

ncclResult_t agreeOnSettings(ncclComm* comm) {
  WEFT_CHECK(checkSameDeviceKind(comm));
  WEFT_CHECK(checkSameEncryption(comm));
  const param::Agreed mine = param::localAgreed();
  std::vector<std::string> blobs;
  std::string why;
  ncclResult_t r = allGatherStrings(*comm->bootstrap, param::encodeAgreed(mine), &blobs, &why);
  if (r != ncclSuccess)
    return setError(comm, r, "init of rank %d: agreeing on settings failed: %s", comm->rank, why.c_str());
  if (!param::decodeAgreed(blobs[0], &comm->agreed, &why))
    return setError(comm, ncclInvalidUsage, "init of rank %d: rank 0's settings cannot be read here: %s", comm->rank,
                    why.c_str());
  for (const param::AgreedDifference& d : param::agreedDifferences(mine, comm->agreed))
    warnDifference(comm, d.name, d.mine, d.inForce);

  std::vector<ConfigProposal> configs(comm->nranks);
  configs[comm->rank] = ConfigProposal{comm->config.minCTAs, comm->config.maxCTAs};
  r = comm->bootstrap->allGather(configs.data(), sizeof(ConfigProposal), &why);
  if (r != ncclSuccess)
    return setError(comm, r, "init of rank %d: agreeing on the config failed: %s", comm->rank, why.c_str());
  const ConfigProposal& root = configs[0];
  if (root.minCTAs != comm->config.minCTAs)
    warnDifference(comm, "ncclConfig_t.minCTAs", std::to_string(comm->config.minCTAs), std::to_string(root.minCTAs));
  if (root.maxCTAs != comm->config.maxCTAs)
    warnDifference(comm, "ncclConfig_t.maxCTAs", std::to_string(comm->config.maxCTAs), std::to_string(root.maxCTAs));
  comm->config.minCTAs = root.minCTAs;
  comm->config.maxCTAs = root.maxCTAs;
  return ncclSuccess;
}

}  // namespace weft
