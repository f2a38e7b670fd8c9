// Moving one piece of one step: the data-moving half of a step, shared by the host executor and
// the program simulator of the unit tests, so both move data exactly the same way.
#pragma once
#include <cstddef>

#include "program/program.h"
#include "task/task.h"

namespace weft {

// The start of one of the task's buffers (the communicator's scratch for Buf::kScratch).
inline void* taskBuffer(const Task& t, Buf b) {
  switch (b) {
    case Buf::kSend: return const_cast<void*>(t.sendbuff);
    case Buf::kRecv: return t.recvbuff;
    case Buf::kScratch: return t.scratch;
  }
  return nullptr;
}

// Moves elements [done, done + n) of step st of task t. `in` is the received message for steps
// that receive, `out` the slot to fill for steps that send (both null otherwise). nranks is the
// communicator's size (the scratch fold reads that many blocks).
void runStepPiece(const Task& t, const Step& st, int nranks, size_t done, size_t n, const void* in, void* out);

// The same for a step of a multi-peer sequence: ins are the nIn received messages (the recvMask
// peers, in mask order), outs the nOut slots to fill (the sendMask peers). The first message is
// combined with the rank's own input (pre-multiplied) when the step reads one, then each further
// message with that running value, so the order is fixed by the program. dst and every out get
// the same bytes. With at most one of each, this is exactly runStepPiece.
void runMultiPeerPiece(const Task& t, const Step& st, size_t done, size_t n, const void* const* ins, int nIn,
                       void* const* outs, int nOut);

}  // namespace weft
