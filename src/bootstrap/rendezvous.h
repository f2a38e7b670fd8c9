// The root's bookkeeping for one rendezvous, without sockets: which ranks hold their slot, where
// they listen, and the verdict on each hello a connection sends. RootService (root.cc) owns the
// connections and acts on the verdicts; keeping the decisions here lets them be tested and fuzzed
// on bytes alone.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/protocol.h"
#include "sockets/address.h"

namespace weft::bootstrap {

class Rendezvous {
 public:
  // here: the root's own address, for messages.
  Rendezvous(const Secret& secret, std::string here) : secret_(secret), here_(std::move(here)) {}

  enum class Action {
    kAdmit,    // the rank now holds its slot: keep its connection for the table
    kRefuse,   // answer this connection alone with code and text, then close it
    kFailAll,  // refuse this connection and every admitted rank with code and text: ranks disagree
  };
  struct Verdict {
    Action action = Action::kRefuse;
    RootCode code = kRootOk;
    std::string text;  // the reason sent to the rank
    std::string warn;  // a line for the root's log ("" = nothing worth a warning)
  };
  // Judges a complete hello from the connection at `from`, which was sent `challenge` when it
  // connected. Nothing it says is believed until its proof of the secret checks out. The first
  // acceptable one fixes nranks and the timeout (started() turns true).
  Verdict admit(const RootHello& hello, const RootChallenge& challenge, const std::string& from);
  // An admitted rank's connection closed before the table went out: its slot opens again.
  void leave(int rank);

  bool started() const { return nranks_ >= 0; }
  int nranks() const { return nranks_; }
  int arrived() const { return arrived_; }
  bool complete() const { return nranks_ > 0 && arrived_ == nranks_; }
  bool holds(int rank) const { return rank >= 0 && rank < nranks_ && taken_[rank]; }
  int64_t timeoutMs() const { return timeoutMs_; }  // the first rank's (valid once started)
  const std::vector<SocketAddress>& table() const { return table_; }
  std::vector<int> missing() const;

 private:
  Secret secret_;
  std::string here_;
  int nranks_ = -1;
  int arrived_ = 0;
  int64_t timeoutMs_ = 0;
  std::string failedText_;  // set once ranks disagreed on nranks: every later rank is refused with it
  std::vector<bool> taken_;
  std::vector<SocketAddress> table_;
};

}  // namespace weft::bootstrap
