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
// Sets task->algorithm, task->protocol and task->nChannels: first an algorithm a setting asks for
// (lossy ones before exact ones), else the tuner's cheapest candidate (a table lookup, no
// allocation), else, without a tuner or for what it does not tune, the first candidate.
void selectAlgorithm(const Tuner* tuner, const CommShape& shape, Task* task);
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
