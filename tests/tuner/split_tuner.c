/* A tuner plugin that makes ranks disagree, for the mismatch tests (tests/collectives/
 * mismatch_test.cc): Ring for every AllReduce on even ranks, Tree on odd ones. The ABI gives a
 * tuner no rank, so the parity comes from WEFT_SPLIT_TUNER_PARITY when set (one rank per
 * process), else from the order of the inits in this process (ranks as threads). NCCL_ALGO is
 * agreed at init and cannot split ranks like this; a plugin decides on each rank by itself. */
#include <stdlib.h>

#include "tuning/plugin/tuner_abi.h"

static int gInits = 0; /* inits in this process; a test plugin may keep one counter */

typedef struct {
  int algo;
} SplitConfig;

static ncclResult_t splitInit(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t log,
                              ncclNvlDomainInfo_v5_t* domains, ncclTunerConstants_v5_t* constants) {
  (void)commId;
  (void)nRanks;
  (void)nNodes;
  (void)log;
  (void)domains;
  (void)constants;
  SplitConfig* c = (SplitConfig*)calloc(1, sizeof(SplitConfig));
  if (c == NULL) return ncclSystemError;
  const char* parity = getenv("WEFT_SPLIT_TUNER_PARITY");
  const int odd = parity != NULL ? atoi(parity) % 2 : __atomic_fetch_add(&gInits, 1, __ATOMIC_SEQ_CST) % 2;
  c->algo = odd ? WEFT_TUNER_ALGO_TREE : WEFT_TUNER_ALGO_RING;
  *ctx = c;
  return ncclSuccess;
}

static ncclResult_t splitGetCollInfo(void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps, float** table,
                                     int numAlgo, int numProto, int regBuff, int* nChannels) {
  const SplitConfig* c = (const SplitConfig*)ctx;
  (void)nBytes;
  (void)numPipeOps;
  (void)regBuff;
  (void)nChannels;
  if (coll != ncclFuncAllReduce || c->algo >= numAlgo || WEFT_TUNER_PROTO_SIMPLE >= numProto) return ncclSuccess;
  if (table[c->algo][WEFT_TUNER_PROTO_SIMPLE] != WEFT_TUNER_IGNORE) table[c->algo][WEFT_TUNER_PROTO_SIMPLE] = 0.0f;
  return ncclSuccess;
}

static ncclResult_t splitFinalize(void* ctx) {
  free(ctx);
  return ncclSuccess;
}

__attribute__((visibility("default")))
const ncclTuner_v6_t ncclTunerPlugin_v6 = {"weft-split", splitInit, splitGetCollInfo, splitFinalize, NULL};
