// Whether a rank's peers may read its input in place (the direct lane's registered-buffer path,
// RCCLX's zero-copy DDA) instead of a copy it stages. Only this rank's own facts decide it; the
// rank then says at every direct barrier what it published (program/step.h kStepPublish), so peers
// never depend on guessing what it chose.
#pragma once
#include <cstdint>

#include "task/task.h"

namespace weft {

// The word this rank would publish for t (Task::directInput), or 0. Nonzero only when:
// - t is an AllReduce with no pre-multiply (a peer folding the raw input could not apply this
//   rank's scalar) of at least 2 KiB (smaller inputs cost less to stage than to look up);
// - operations are checked against each other (WEFT_MISMATCH_CHECK, agreed): the barrier's stamps
//   then prove that every peer reads exactly as many elements as this rank published;
// - and the whole input lies in a buffer every peer can read:
//   - every rank is a thread of this process (of one address space, dev::Runtime::addressSpace),
//     and the buffer is one this rank registered (ncclCommRegister or ncclCommWindowRegister): the
//     word is the input's address (GPU ranks reach each other's memory by address once peer
//     access is on);
//   - or a window that every rank has mapped (from ncclMemAlloc memory): the word refers to the
//     input by window and offset. In host mode the window is named by its registration id
//     (rma/window.h); on GPUs by its row of the device window table, where each process has the
//     IPC mappings of the others' buffers (comm/device_window_table.h).
// Whether the chosen algorithm uses it is the builder's business (collectives/dda).
uint64_t sharedInputOf(ncclComm* comm, const Task& t);

}  // namespace weft
