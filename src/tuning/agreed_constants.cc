#include "tuning/agreed_constants.h"

#include <algorithm>
#include <map>

namespace weft {

AgreedMachine combineContributions(const std::vector<HostContribution>& byRank, const std::vector<uint64_t>& hostOf) {
  // The first (lowest) rank seen on each host speaks for it.
  std::map<uint64_t, const HostContribution*> voice;
  for (size_t r = 0; r < byRank.size() && r < hostOf.size(); ++r) voice.emplace(hostOf[r], &byRank[r]);
  AgreedMachine out;
  bool first = true;
  for (const auto& [host, c] : voice) {
    if (first) {
      out.constants = c->constants;
      out.cores = std::max(1, c->cores);
      first = false;
      continue;
    }
    for (int i = 0; i < kNumConstantFields; ++i) {
      const ConstantField& f = kConstantFields[i];
      double& mine = out.constants.*f.field;
      const double theirs = c->constants.*f.field;
      mine = f.higherIsFaster ? std::min(mine, theirs) : std::max(mine, theirs);
    }
    out.cores = std::min(out.cores, std::max(1, c->cores));
  }
  return out;
}

}  // namespace weft
