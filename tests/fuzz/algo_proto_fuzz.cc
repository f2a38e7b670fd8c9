// The algorithm and protocol selection strings: NCCL_ALGO, NCCL_PROTO (NCCL's syntax, with
// per-collective entries), RCCL_OVERRIDE_ALGO / RCCL_OVERRIDE_PROTO, and WEFT_TUNER_CONSTANTS
// ("name=value,..."). The first byte picks the parser; the rest is the value.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/registry.h"
#include "fuzz_input.h"
#include "tuning/algo_filter.h"
#include "tuning/calibration.h"

using namespace weft;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const int which = in.byte() % 4;
  const std::string text = in.rest();
  std::vector<std::string> warnings;
  AlgoProtoFilter filter;
  const AlgoProtoFilter all;
  switch (which) {
    case 0:
    case 1: {
      if (which == 0)
        parseAlgoSetting(text, "NCCL_ALGO", &filter, &warnings);
      else
        parseProtoSetting(text, "NCCL_PROTO", &filter, &warnings);
      // A setting only narrows what exists: never a bit for an algorithm or protocol Weft lacks.
      for (int c = 0; c < kNumTunedColls; c++)
        if ((filter.algos[c] & ~all.algos[c]) != 0 || (filter.protos[c] & ~all.protos[c]) != 0)
          fuzz::fail("a setting selects an algorithm or protocol that does not exist");
      break;
    }
    case 2: {
      int a = -2, p = -2;
      parseOverrideAlgo(text, &a, &warnings);
      parseOverrideProto(text, &p, &warnings);
      if (a < -1 || a >= algorithmCount() || p < -1 || p >= kNumProtocols) fuzz::fail("an override out of range");
      break;
    }
    default: {
      HostConstants hc;
      std::string bad;
      applyConstantOverrides(text, &hc, &bad);
      // Only finite, positive values are taken.
      for (int i = 0; i < kNumConstantFields; i++) {
        const double v = hc.*kConstantFields[i].field;
        if (!(v > 0) || !std::isfinite(v)) fuzz::fail("a constant was set to a value that is not finite and positive");
      }
      break;
    }
  }
  for (const std::string& w : warnings)
    if (w.empty()) fuzz::fail("an empty warning");
  return 0;
}
