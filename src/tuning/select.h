// Picks the algorithm, protocol and channel count of each task when its group runs, from the
// registry's eligibility rules (collectives/registry.h) and the communicator's Tuner (tuner.h).
// Nothing here reads a communicator: the caller passes its shape (collectives/model/comm_shape.h), whose
// settings are the agreed ones, so every rank decides the same.
#pragma once
#include <cstddef>
#include <cstdint>

#include "collectives/model/comm_shape.h"
#include "task/task.h"
#include "tuning/tuner.h"

namespace weft {

// The algorithms the model may choose from for the task (bit i: Algorithm(i)): those whose rule
// says kModel. Lossy ones never are. (selectAlgorithm computes the same mask with its own checks.)
uint32_t modelCandidates(const CommShape& shape, const Task& task);
// The last selections one thread made: a call repeated on the same communicator (the common case:
// the same AllReduce every step) skips the eligibility checks and the tuner, about a sixth of a
// small call's CPU time. A few are kept, so that the calls of a repeated group (a pipeline stage's
// ncclSend and ncclRecv, which alternate) hit as well. The selection is a pure function of what
// the key holds: the tuner, and with it the communicator's shape and agreed settings, which never
// change after init; the collective, datatype, reduction and count. Calls that a tuner plugin, a
// per-call algSelection or channel bounds, or a user-defined reduction could steer are never
// memoized.
struct SelectionMemo {
  struct Entry {
    uint64_t tunerSerial = 0;  // Tuner::serial(); 0: empty
    size_t count = 0;
    CollKind kind{};
    ncclDataType_t dtype{};
    ncclRedOp_t op{};
    Algorithm algorithm{};
    Protocol protocol = Protocol::kSimple;
    int nChannels = 1;
  };
  static constexpr int kEntries = 4;
  Entry entries[kEntries];
  int next = 0;  // the entry a miss replaces (round robin)
};
// Sets task->algorithm, task->protocol and task->nChannels: first an algorithm a setting asks for
// (lossy ones before exact ones), else the tuner's cheapest candidate (a table lookup, no
// allocation), else, without a tuner or for what it does not tune, the first candidate. With a
// memo (owned by the calling thread), a repeat of the memo's call takes the memo's answer.
void selectAlgorithm(const Tuner* tuner, const CommShape& shape, Task* task, SelectionMemo* memo = nullptr);
// The size the tuner and tuner plugins see for a task (NCCL's convention: AllGather and
// ReduceScatter count the whole gathered buffer).
size_t tunedBytes(int nranks, const Task& task);
// The model's estimate (us) for a task whose algorithm was selected (ncclGroupSimulateEnd).
// peerOnOtherHost: a Send or Recv whose peer is on another host.
double estimateTaskUs(const Tuner& tuner, const CommShape& shape, const Task& task, bool peerOnOtherHost);
// NCCL_DEBUG_SUBSYS=TUNING: what an AllReduce of float would run with at each power-of-two size,
// and every algorithm's estimate, so that a choice can be checked against a benchmark.
void logAllReduceChoices(const Tuner& tuner, const CommShape& shape);

}  // namespace weft
