// How far each rank's clock is from rank 0's, for the trace (trace/trace.h): the ranks' files
// carry their own monotonic time, and the offset measured here lines them up.
#pragma once
#include <cstdint>
#include <string>

#include "bootstrap/bootstrap.h"

namespace weft {

// Ping-pongs with rank 0 over the bootstrap, rank by rank (rank 0 answers each in turn), and
// keeps the round with the shortest round trip: *offsetUs is what to add to this rank's
// CLOCK_MONOTONIC to read rank 0's, and *uncertaintyUs half that round trip (0 on rank 0). Every
// rank of the communicator must call it; each wait is bounded by timeoutMs.
ncclResult_t measureClockOffset(Bootstrap* bootstrap, int64_t timeoutMs, double* offsetUs, double* uncertaintyUs,
                                std::string* why);

}  // namespace weft
