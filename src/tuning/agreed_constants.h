// The cost model's machine constants as one communicator agrees on them. Each rank contributes
// what it knows of its own host (calibration.h: measured, cached or defaults) and the cores it may
// use; every rank applies the same rule to the same contributions, so every rank builds the same
// cost table:
//   - within a host, the lowest rank's contribution speaks for the host (ranks of one host that
//     measured at the same moment may still differ by noise; one voice per host removes that);
//   - across hosts, each field takes its slowest host's value (the smallest bandwidth or cache,
//     the largest latency), because a collective runs at the pace of its slowest member;
//   - the fewest cores of any host;
//   - then the agreed WEFT_TUNER_CONSTANTS overrides single fields.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/model/cost_model.h"

namespace weft {

// What one rank sends (plain data: it travels over the bootstrap as bytes).
struct HostContribution {
  HostConstants constants;
  int32_t cores;
  int32_t pad;
};

struct AgreedMachine {
  HostConstants constants;
  int cores = 1;
};

// hostOf[r] is rank r's host hash; byRank[r] its contribution. Both have one entry per rank.
AgreedMachine combineContributions(const std::vector<HostContribution>& byRank, const std::vector<uint64_t>& hostOf);

}  // namespace weft
