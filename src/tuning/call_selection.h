// Per-call algorithm selection: the algSelection string of NCCL 2.31's ncclCollConfig_t (the
// nccl<Coll>Config calls), turned into the (algorithm, protocol) rows one call may run with.
//
// The grammar is NCCL's: terms joined by ',' (union), each term factors joined by '+'
// (intersection), a factor a tag with an optional '^' (complement). A tag names every row whose
// name starts with it, case ignored; whitespace is ignored. Row names are ALGORITHM_PROTOCOL in
// capitals ("RING_SIMPLE", "DDAFLAT_SIMPLE"), so "RING" is every ring row and "DDA" both DDA
// algorithms. NCCL's own rows that Weft does not have (PAT, NVLS, COLLNET, SYMK) are known tags
// that select nothing.
//
// The rows are agreed as the call's arguments are: every rank must pass the same selection (NCCL
// checks it locally only). Weft's op stamps carry the algorithm and channel count, so ranks that
// passed different selections fail with a mismatch naming both calls instead of hanging.
#pragma once
#include <cstdint>
#include <string>

#include "collectives/model/comm_shape.h"
#include "task/task.h"
#include "tuning/tuner.h"

namespace weft {

// Bit a * kNumProtocols + p: Algorithm(a) with Protocol(p).
using AlgoProtoRows = uint64_t;
static_assert(kMaxAlgorithms * kNumProtocols <= 64, "AlgoProtoRows holds every (algorithm, protocol) row");

constexpr int rowBit(Algorithm a, Protocol p) { return int(a) * kNumProtocols + int(p); }

// The rows `text` selects among the registry's. False with *why set on bad syntax or an unknown
// tag. An empty or null text selects nothing (*rows = 0: automatic).
bool parseAlgSelection(const char* text, AlgoProtoRows* rows, std::string* why);

// The rows of task's call that `text` selects and that can run it here (eligible on this
// communicator, and costed by its tuner for this size). *rows = 0 means automatic: no text, or
// (with force false) a selection that cannot be honoured. With force true such a selection is an
// error: false with *why set.
bool resolveCallSelection(const char* text, bool force, const Tuner* tuner, const CommShape& shape, const Task& task,
                          AlgoProtoRows* rows, std::string* why);

// The name of a row, as selections spell it ("RING_SIMPLE").
std::string rowName(Algorithm a, Protocol p);

}  // namespace weft
