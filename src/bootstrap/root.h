// The rendezvous root: the service every rank of a new communicator reports to first.
#pragma once
#include <cstdint>
#include <string>

#include "bootstrap/protocol.h"
#include "nccl.h"
#include "sockets/socket.h"

namespace weft::bootstrap {

// Serves one rendezvous on `listener` (already listening on `addr`) in a detached thread: waits
// for every rank (from the first one's arrival, up to the timeout that rank brings; up to
// timeoutMs from now when none comes), refuses impostors, then hands every rank the table and exits.
ncclResult_t startRoot(Socket listener, const SocketAddress& addr, const Secret& secret, int64_t timeoutMs,
                       std::string* why);

}  // namespace weft::bootstrap
