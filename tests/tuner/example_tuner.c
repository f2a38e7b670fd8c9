/* An example tuner plugin for Weft (and NCCL): it prefers one algorithm and protocol for one
 * collective below a size, by making that entry of the cost table the cheapest, and can set the
 * channel count. Its configuration comes from WEFT_EXAMPLE_TUNER, read at init:
 *
 *   WEFT_EXAMPLE_TUNER="coll=allreduce algo=tree proto=simple maxbytes=65536 channels=0 fail=0"
 *
 * (the defaults: Tree/Simple for AllReduce under 64 KiB). fail=1 makes init fail, to test that
 * the library carries on without the plugin. The same source builds as an ABI v7, v6, v5 or v4
 * plugin (EXAMPLE_TUNER_ABI). Its init writes every entry of the constants it is given, as a
 * plugin may: under AddressSanitizer a struct smaller than its version's shows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tuning/plugin/tuner_abi.h"

#ifndef EXAMPLE_TUNER_ABI
#define EXAMPLE_TUNER_ABI 7
#endif

typedef struct {
  int coll; /* ncclFunc_t */
  int algo; /* row of the cost table */
  int proto;
  size_t maxBytes;
  int channels;
  int calls;
} Config;

static int lookup(const char* v, const char* const* names, int n) {
  for (int i = 0; i < n; ++i)
    if (names[i] && strcasecmp(v, names[i]) == 0) return i;
  return -1;
}

static ncclResult_t parseConfig(Config* c, ncclDebugLogger_t log) {
  static const char* const colls[] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
  static const char* const algos[] = {"tree", "ring", NULL,      NULL,      NULL,
                                      NULL,   NULL,   "ddaflat", "ddatree", "lowprecision"};
  static const char* const protos[] = {"ll", "ll128", "simple"};
  const char* env = getenv("WEFT_EXAMPLE_TUNER");
  char buf[512];
  c->coll = ncclFuncAllReduce;
  c->algo = WEFT_TUNER_ALGO_TREE;
  c->proto = WEFT_TUNER_PROTO_SIMPLE;
  c->maxBytes = 65536;
  c->channels = 0;
  c->calls = 0;
  snprintf(buf, sizeof(buf), "%s", env ? env : "");
  for (char *save = NULL, *tok = strtok_r(buf, " ,", &save); tok; tok = strtok_r(NULL, " ,", &save)) {
    char* eq = strchr(tok, '=');
    int bad = eq == NULL;
    if (!bad) {
      *eq = '\0';
      const char* v = eq + 1;
      if (strcmp(tok, "coll") == 0)
        bad = (c->coll = lookup(v, colls, 5)) < 0;
      else if (strcmp(tok, "algo") == 0)
        bad = (c->algo = lookup(v, algos, WEFT_TUNER_NUM_ALGOS)) < 0;
      else if (strcmp(tok, "proto") == 0)
        bad = (c->proto = lookup(v, protos, 3)) < 0;
      else if (strcmp(tok, "maxbytes") == 0)
        c->maxBytes = strtoull(v, NULL, 0);
      else if (strcmp(tok, "channels") == 0)
        c->channels = atoi(v);
      else if (strcmp(tok, "fail") == 0)
        bad = atoi(v) != 0;
      else
        bad = 1;
    }
    if (bad) {
      if (log) log(NCCL_LOG_WARN, 0x40, __FILE__, __LINE__, "example tuner: bad or failing setting \"%s\"", tok);
      return ncclInvalidUsage;
    }
  }
  return ncclSuccess;
}

static ncclResult_t exampleGetCollInfo(void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps, float** table,
                                       int numAlgo, int numProto, int regBuff, int* nChannels) {
  Config* c = (Config*)ctx;
  (void)numPipeOps;
  (void)regBuff;
  c->calls++;
  if ((int)coll != c->coll || nBytes >= c->maxBytes) return ncclSuccess;
  if (c->algo >= numAlgo || c->proto >= numProto) return ncclSuccess;
  /* An ignored entry (-1) is one the library cannot run: leave it alone. */
  if (table[c->algo][c->proto] != WEFT_TUNER_IGNORE) table[c->algo][c->proto] = 0.0f;
  if (c->channels > 0) *nChannels = c->channels;
  return ncclSuccess;
}

static ncclResult_t exampleFinalize(void* ctx) {
  free(ctx);
  return ncclSuccess;
}

static ncclResult_t initCommon(void** ctx, ncclDebugLogger_t log) {
  Config* c = (Config*)calloc(1, sizeof(Config));
  if (c == NULL) return ncclSystemError;
  ncclResult_t r = parseConfig(c, log);
  if (r != ncclSuccess) {
    free(c);
    return r;
  }
  *ctx = c;
  return ncclSuccess;
}

#if EXAMPLE_TUNER_ABI == 7
typedef ncclTunerConstants_v7_t ExampleConstants;
typedef ncclNvlDomainInfo_v7_t ExampleDomains;
#elif EXAMPLE_TUNER_ABI == 6 || EXAMPLE_TUNER_ABI == 5
typedef ncclTunerConstants_v5_t ExampleConstants;
typedef ncclNvlDomainInfo_v5_t ExampleDomains;
#endif

#if EXAMPLE_TUNER_ABI >= 5
static ncclResult_t exampleInit(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t log,
                                ExampleDomains* domains, ExampleConstants* constants) {
  (void)commId;
  (void)nRanks;
  (void)nNodes;
  (void)domains;
  double* d = (double*)constants;
  for (size_t i = 0; i < sizeof(*constants) / sizeof(double); ++i) d[i] = 1.0;
  return initCommon(ctx, log);
}
#endif

#if EXAMPLE_TUNER_ABI == 7
__attribute__((visibility("default")))
const ncclTuner_v7_t ncclTunerPlugin_v7 = {"weft-example-v7", exampleInit, exampleGetCollInfo, exampleFinalize, NULL};
#elif EXAMPLE_TUNER_ABI == 6
__attribute__((visibility("default")))
const ncclTuner_v6_t ncclTunerPlugin_v6 = {"weft-example-v6", exampleInit, exampleGetCollInfo, exampleFinalize, NULL};
#elif EXAMPLE_TUNER_ABI == 5
__attribute__((visibility("default")))
const ncclTuner_v5_t ncclTunerPlugin_v5 = {"weft-example-v5", exampleInit, exampleGetCollInfo, exampleFinalize};
#elif EXAMPLE_TUNER_ABI == 4
static ncclResult_t exampleInitV4(size_t nRanks, size_t nNodes, ncclDebugLogger_t log, void** ctx) {
  (void)nRanks;
  (void)nNodes;
  return initCommon(ctx, log);
}
__attribute__((visibility("default")))
const ncclTuner_v4_t ncclTunerPlugin_v4 = {"weft-example-v4", exampleInitV4, exampleGetCollInfo, exampleFinalize};
#else
#error "EXAMPLE_TUNER_ABI must be 4, 5, 6 or 7"
#endif
