// Weft perf tools: what one rank does once its communicator exists (internal to the harness).
#pragma once
#include <string>

#include "harness.h"
#include "nccl.h"
#include "options.h"

namespace weftbench {

struct RankSetup {
  int rank = 0;
  int nranks = 1;
  int threadsPerProcess = 1;  // the header's nThread
  ncclComm_t comm = nullptr;
};

// Runs the whole sweep on one rank; returns 0 when every check passed. Exits the process (after
// printing why) when a library call fails, since the other ranks could not go on either.
int runRank(const CollDesc& coll, const Options& opts, const RankSetup& setup);

// Prints "<tool>: rank R: <call> failed: <error string> (<last error>)" to stderr and ends the
// process with status 2.
[[noreturn]] void failCall(const char* tool, int rank, const char* call, ncclResult_t res, ncclComm_t comm);

// Communicators this process holds, for the --timeout watchdog's state dump.
void registerComm(ncclComm_t comm, int rank);
void unregisterComm(ncclComm_t comm);
std::string dumpCommStates();

}  // namespace weftbench
