// Whether a rank's peers may read its input in place (the direct lane's registered-buffer path,
// RCCLX's zero-copy DDA) instead of a copy it stages. Only this rank's own facts decide it; the
// rank then says at every direct barrier whether it published (program/step.h kStepPublish), so
// peers never depend on guessing what it chose.
#pragma once
#include "task/task.h"

namespace weft {

// t.sendbuff when all of these hold, else null:
// - an AllReduce with no pre-multiply (a peer folding the raw input could not apply this rank's
//   scalar) and a non-empty input;
// - operations are checked against each other (WEFT_MISMATCH_CHECK, agreed): the barrier's stamps
//   then prove that every peer reads exactly as many elements as this rank published;
// - every rank of the communicator is a thread of this process, so the address means the same
//   to all of them (GPU ranks reach each other's memory by address once peer access is on);
// - the whole input lies in a buffer this rank registered (ncclCommRegister or
//   ncclCommWindowRegister): the user promised to keep it while registered.
// Whether the chosen algorithm uses it is the builder's business (collectives/dda).
const void* sharedInputOf(ncclComm* comm, const Task& t);

}  // namespace weft
