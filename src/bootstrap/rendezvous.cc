#include "bootstrap/rendezvous.h"

namespace weft::bootstrap {

Rendezvous::Verdict Rendezvous::admit(const RootHello& h, const RootChallenge& challenge, const std::string& from) {
  Verdict v;
  auto refuse = [&](RootCode code, std::string text) {
    v.action = Action::kRefuse;
    v.code = code;
    v.text = std::move(text);
    return v;
  };
  if (h.magic != kMagic || h.version != kProtocolVersion) {
    v.warn = "refused a connection from " + from + " that is not a Weft rank of protocol version " +
             std::to_string(kProtocolVersion);
    return refuse(kRootBadMagic, "the bootstrap root at " + here_ + " speaks Weft bootstrap protocol version " +
                                     std::to_string(kProtocolVersion) + "; this rank does not (mixed Weft versions?)");
  }
  if (!digestEqual(h.proof, rootHelloProof(secret_, challenge, h))) {
    v.warn = "refused a client at " + from + " claiming rank " + std::to_string(h.rank) +
             ": it did not prove the communicator's secret";
    return refuse(kRootBadSecret, "this rank could not prove the communicator's secret to the root at " + here_ +
                                      " (a stale unique id, one of another communicator, or a different "
                                      "WEFT_COMM_SECRET)");
  }
  // Checked before anything is sized by it: a hello is only 72 bytes, the table it asks for could
  // otherwise be tens of gigabytes.
  if (h.nranks < 1 || h.nranks > kMaxRanks)
    return refuse(kRootBadNranks, "nranks must be between 1 and " + std::to_string(kMaxRanks) + ", this rank says " +
                                      std::to_string(h.nranks));
  if (nranks_ < 0) {
    // The first rank fixes the communicator's size and the timeout.
    nranks_ = h.nranks;
    taken_.assign(nranks_, false);
    table_.assign(nranks_, emptySocketAddress());
    timeoutMs_ = h.timeoutMs;
  }
  if (!failedText_.empty()) return refuse(kRootNranksMismatch, failedText_);
  if (h.nranks != nranks_) {
    // Which side is right cannot be known from arrival order, so the rendezvous fails for every
    // rank, now and until the deadline, with the same message naming both claims.
    failedText_ = "ranks disagree on nranks: rank " + std::to_string(h.rank) + " says " + std::to_string(h.nranks) +
                  " but the rank(s) that reached the root at " + here_ + " before it say " + std::to_string(nranks_);
    v.warn = failedText_;
    taken_.assign(nranks_, false);
    arrived_ = 0;
    v.action = Action::kFailAll;
    v.code = kRootNranksMismatch;
    v.text = failedText_;
    return v;
  }
  if (h.rank < 0 || h.rank >= nranks_)
    return refuse(kRootRankOutOfRange,
                  "rank " + std::to_string(h.rank) + " is out of range for nranks=" + std::to_string(nranks_));
  if (taken_[h.rank])
    return refuse(kRootDuplicateRank, "rank " + std::to_string(h.rank) + " was claimed twice: by " +
                                          socketAddressToString(table_[h.rank]) + " and by " +
                                          socketAddressToString(h.listen));
  if (!socketAddressValid(h.listen))
    return refuse(kRootBadMagic, "rank " + std::to_string(h.rank) + " sent no usable listen address");
  taken_[h.rank] = true;
  table_[h.rank] = h.listen;
  arrived_++;
  v.action = Action::kAdmit;
  return v;
}

void Rendezvous::leave(int rank) {
  if (!holds(rank)) return;
  taken_[rank] = false;
  arrived_--;
}

std::vector<int> Rendezvous::missing() const {
  std::vector<int> out;
  for (int r = 0; r < nranks_; r++)
    if (!taken_[r]) out.push_back(r);
  return out;
}

}  // namespace weft::bootstrap
