// The recursive-doubling schedule. Round j is one sequence with one peer, partner = rank ^ 2^j,
// on the ring lane's channel 0 (its sequences chain with the ring's, so links they share never
// carry two operations at once). A round walks the buffer in pieces of one FIFO slot: send the
// piece, then receive the partner's and add it in. Both partners send before they receive and
// never send more than one slot ahead, so a round cannot deadlock on full FIFOs whatever the size.
//
// Why every rank ends with the same bits: in each round the two partners add the same two values,
// once as a + b and once as b + a, and IEEE addition is commutative, so they hold the same sum
// going into the next round. Only sums run this way (doubling_algorithm.cc): a Max with a NaN
// operand is not commutative in that sense.
#include <algorithm>

#include "collectives/doubling/doubling.h"

namespace weft {

void buildDoublingProgram(const CommShape& sh, const Task& t, Program* p) {
  const int n = sh.nranks, r = sh.rank;
  const size_t piece = std::max<size_t>(1, sh.slotBytes / dataTypeSize(t.dtype));
  int rounds = 0;
  while ((1 << rounds) < n) ++rounds;
  for (int j = 0; j < rounds; ++j) {
    const int partner = r ^ (1 << j);
    const bool first = j == 0, last = j == rounds - 1;
    // Round 0 reads the input (pre-multiplied, for ncclAvg and ncclPreMulSum); later rounds the
    // running sum in the output. The last applies the post-divide.
    const Buf src = first ? Buf::kSend : Buf::kRecv;
    const uint8_t pre = first ? kStepPre : 0;
    const uint8_t post = last ? kStepPost : 0;
    p->beginSequence(Lane::kRing, 0, partner, partner);
    for (size_t off = 0; off < t.count; off += piece) {
      const size_t c = std::min(piece, t.count - off);
      p->addStep(StepOp::kSend, pre, src, off, Buf::kRecv, off, c);
      p->addStep(StepOp::kRecvReduceCopy, uint8_t(pre | post), src, off, Buf::kRecv, off, c);
    }
  }
}

}  // namespace weft
