// Moving one piece of one step: the data-moving half of a step, which the host executor's stepping
// core (chain_runner.h) calls for every piece it moves.
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

// Moves elements [done, done + n) of step st of task t. ins are the nIn received messages (for a
// multi-peer step, its recvMask peers in mask order), outs the nOut slots to fill (its sendMask
// peers); both are empty for steps that neither receive nor send. The first message is combined
// with the rank's own input (pre-multiplied) when the step reads one, then each further message
// with that running value, so the order is fixed by the program; dst and every out get the same
// bytes. One peer each way is the plain ring step.
void runPiece(const Task& t, const Step& st, size_t done, size_t n, const void* const* ins, int nIn, void* const* outs,
              int nOut);

}  // namespace weft
