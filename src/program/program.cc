#include "program/program.h"

#include <algorithm>

namespace weft {

std::pair<uintptr_t, ChainKey> chainOf(const Sequence& s) { return {s.scope, chainKeyOf(s)}; }

void sortIntoChains(const Program& prog, std::vector<uint32_t>* order) {
  // Issue order breaks ties, so this is a stable sort without stable_sort's temporary buffer (a
  // malloc per call on the small-message path).
  if (order->size() > 1)
    std::sort(order->begin(), order->end(), [&](uint32_t a, uint32_t b) {
      auto ka = chainOf(prog.sequences[a]), kb = chainOf(prog.sequences[b]);
      return ka != kb ? ka < kb : a < b;
    });
}

}  // namespace weft
