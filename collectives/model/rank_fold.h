// How recursive halving-doubling (collectives/doubling) runs on a number of ranks that is not a
// power of two: it folds the communicator down to the largest power of two below it first. The
// first 2 * extra ranks pair up, (0, 1), (2, 3), ..., and the odd rank of each pair adds the even
// one's input to its own and stands for both in the rounds; at the end it hands the result back.
// Ranks numbered host by host keep each pair on one host wherever a host holds an even number of
// ranks, so the fold costs a shared-memory exchange, not a network one.
//
// The builder and the tuner (src/tuning/tuner_setup.cc, which prices the rounds by where the
// partners are) number the rounds' ranks the same way, through this.
#pragma once

namespace weft {

struct RankFold {
  int pow2 = 1;   // ranks that take part in the rounds
  int extra = 0;  // ranks that sit them out, each beside its partner: nranks - pow2

  explicit RankFold(int nranks) {
    while (pow2 * 2 <= nranks) pow2 *= 2;
    extra = nranks > pow2 ? nranks - pow2 : 0;
  }
  // This rank's number in the rounds, or -1 for a rank that hands its input to rank + 1.
  int folded(int rank) const {
    if (rank < 2 * extra) return (rank & 1) ? rank / 2 : -1;
    return rank - extra;
  }
  // The communicator rank behind a number in the rounds.
  int rank(int folded) const { return folded < extra ? 2 * folded + 1 : folded + extra; }
};

}  // namespace weft
