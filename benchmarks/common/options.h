// Weft perf tools: the command line (nccl-tests' options plus Weft's -N/-T).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"
#include "values.h"

namespace weftbench {

struct Options {
  // Sizes
  size_t minBytes = 32u << 20;
  size_t maxBytes = 32u << 20;
  size_t stepBytes = 1u << 20;
  double stepFactor = 1;  // > 1: multiply, otherwise add stepBytes
  // Operation
  std::vector<ncclDataType_t> types = {ncclFloat32};
  std::vector<OpKind> ops = {OpKind::kSum};
  int root = 0;  // -1: every root in turn ("-r all")
  // Performance
  int iters = 20;
  int warmupIters = 1;
  int aggIters = 1;
  int runCycles = 1;   // 0: forever
  int average = 1;     // 0 rank 0, 1 mean, 2 min, 3 max
  int check = 1;       // check iterations per size (0: no validation)
  size_t unalign = 0;  // elements
  bool rotate = true;  // walk through the whole buffer from iteration to iteration (nccl-tests)
  int timeoutSec = 0;
  // Ranks
  int forkRanks = 0;      // -N: processes forked by this program
  int threads = 0;        // -T / -t: ranks as threads of each process
  int localRegister = 0;  // -R: 1 ncclCommRegister, 2 symmetric windows
  // Accepted for nccl-tests compatibility; these change nothing in host mode.
  int blocking = 0, graphLaunches = 0, cpuTime = 0, parallelInit = 0;
  std::vector<std::string> notes;  // "# ..." lines rank 0 prints before the header
};

// Parses argv. On --help prints the usage and returns false with *exitCode = 0; on a bad argument
// prints why and returns false with *exitCode = 1.
bool parseOptions(int argc, char** argv, const char* toolName, Options* o, int* exitCode);

// "32M" -> 33554432: an integer or decimal number with an optional K, M or G (powers of 1024).
bool parseSize(const char* s, size_t* out);

}  // namespace weftbench
