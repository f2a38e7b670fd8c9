// The production fabric of the stepping core (chain_runner.h): a communicator's transports'
// Connections, made on first use (comm/connect.h), and the direct lane over the staging areas in
// shared memory (direct_exec.h). HostRunner is what executeOnHost runs.
#pragma once
#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/connect.h"
#include "host_executor/chain_runner.h"
#include "host_executor/direct_exec.h"
#include "transports/connection.h"

namespace weft {

class ConnectionFabric {
 public:
  using Link = Connection;
  Connection* link(ncclComm* comm, const Sequence& s, int peer, bool sender) {
    return getConnection(comm, s.lane, s.channel, peer, sender, comm->laneSlots(s.lane));
  }
  std::vector<Connection*>& handshakes(ncclComm* comm) { return comm->connections.handshakes(); }
  DirectProgress direct(const Task& t, const Step& st, size_t* phase, std::string* why) {
    return advanceDirectStep(t, st, phase, why);
  }
  std::string describeDirect(const Task& t, const Step& st, size_t phase, std::vector<int>* waitingOn) {
    return describeDirectWait(t, st, phase, waitingOn);
  }
};
static_assert(StepLink<Connection>);

using HostRunner = ChainRunner<ConnectionFabric>;

}  // namespace weft
