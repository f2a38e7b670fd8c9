// Agreement at communicator init: every input that decides how a collective runs is made the same
// on every rank, so that ranks never pick different algorithms for one call (which deadlocks or,
// worse, completes with wrong data). The inputs are the Agreed parameters of param_table.h and the
// channel limits of ncclConfig_t; the cost model's machine constants and the tuner plugin are
// agreed in src/tuning/tuner_setup.cc when the tuner is built.
//
// The rule: rank 0's values are in force on every rank. A rank whose own environment or config says
// otherwise keeps working with rank 0's values and prints one WARN per difference, naming the
// variable, its own value and the value in force.
#pragma once
#include <string>
#include <vector>

#include "nccl.h"

struct ncclComm;

namespace weft {

class Bootstrap;

// Fills comm->agreed and comm->config.minCTAs/maxCTAs from rank 0's proposal. Needs the
// bootstrap and comm->ranks; fails (naming rank 0) when its proposal cannot be read, e.g. another
// Weft version, and (naming the odd ranks) when host-mode and GPU ranks are mixed.
ncclResult_t agreeOnSettings(ncclComm* comm);

// Every rank's string, in rank order (two fixed-size gathers: the lengths, then the padded texts).
ncclResult_t allGatherStrings(Bootstrap& bootstrap, const std::string& mine, std::vector<std::string>* all,
                              std::string* why);

// Prints each text once per process: a job that creates many communicators warns once.
void warnOncePerProcess(const std::string& text);

}  // namespace weft
