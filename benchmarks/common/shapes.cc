// Buffer shapes and bandwidth formulas that several perf tools share (nccl-tests' definitions).
#include "common/harness.h"

namespace weftbench {

Counts sameCounts(size_t count, size_t, int) {
  Counts c;
  c.send = c.recv = c.param = count;
  return c;
}

Counts gatherCounts(size_t count, size_t eltSize, int nranks) {
  Counts c;
  const size_t base = alignedPerRank(count, eltSize, nranks);
  c.send = base;
  c.recv = base * nranks;
  c.param = base;
  c.sendInplace = base;
  c.recvInplace = 0;
  return c;
}

Counts scatterCounts(size_t count, size_t eltSize, int nranks) {
  Counts c;
  const size_t base = alignedPerRank(count, eltSize, nranks);
  c.send = base * nranks;
  c.recv = base;
  c.param = base;
  c.sendInplace = 0;
  c.recvInplace = base;
  return c;
}

void flatBandwidth(size_t count, size_t eltSize, double sec, int, double* algBw, double* busBw) {
  *algBw = static_cast<double>(count * eltSize) / 1e9 / sec;
  *busBw = *algBw;
}

void gatheredBandwidth(size_t count, size_t eltSize, double sec, int nranks, double* algBw, double* busBw) {
  *algBw = static_cast<double>(count * eltSize * nranks) / 1e9 / sec;
  *busBw = *algBw * (nranks - 1) / nranks;
}

}  // namespace weftbench
