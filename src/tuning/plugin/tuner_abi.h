/* The NCCL tuner plugin ABI, versions 4 to 7, as Weft loads it (layouts and symbol names are
 * NCCL's: ncclTunerPlugin_v7 first, then _v6, _v5 and _v4). Plain C so that a plugin can include
 * it.
 *
 * The cost table handed to getCollInfo has one row per algorithm and one column per protocol,
 * indexed NCCL's way: rows 0..6 are NCCL's algorithms (Tree, Ring, CollNetDirect, CollNetChain,
 * NVLS, NVLSTree, PAT), columns LL, LL128, Simple. Weft appends its own algorithms as rows 7..9
 * (DDAFlat, DDATree, LowPrecision) and passes numAlgo = 10. An entry of -1 (WEFT_TUNER_IGNORE)
 * cannot be chosen; the plugin may lower or raise costs, set entries to -1, and set *nChannels
 * (0 = let Weft decide). */
#ifndef WEFT_TUNER_ABI_H_
#define WEFT_TUNER_ABI_H_

#include <stddef.h>
#include <stdint.h>

#include "base/plugin_logger_abi.h"
#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WEFT_TUNER_ALGO_TREE 0
#define WEFT_TUNER_ALGO_RING 1
#define WEFT_TUNER_NCCL_NUM_ALGOS 7
#define WEFT_TUNER_ALGO_DDA_FLAT 7
#define WEFT_TUNER_ALGO_DDA_TREE 8
#define WEFT_TUNER_ALGO_LOW_PRECISION 9
#define WEFT_TUNER_NUM_ALGOS 10
#define WEFT_TUNER_PROTO_LL 0
#define WEFT_TUNER_PROTO_LL128 1
#define WEFT_TUNER_PROTO_SIMPLE 2
#define WEFT_TUNER_NUM_PROTOS 3
#define WEFT_TUNER_IGNORE (-1.0f)

/* NCCL's collective numbering (ncclFunc_t). */
typedef enum {
  ncclFuncBroadcast = 0,
  ncclFuncReduce = 1,
  ncclFuncAllGather = 2,
  ncclFuncReduceScatter = 3,
  ncclFuncAllReduce = 4,
  ncclFuncSendRecv = 5,
  ncclFuncSend = 6,
  ncclFuncRecv = 7
} ncclFunc_t;

/* v5 to v7: what NCCL knows of the NVLink domains. Weft fills it with its shared-memory domains
 * (one per host). */
typedef struct {
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
} ncclNvlDomainInfo_v5_t;
typedef ncclNvlDomainInfo_v5_t ncclNvlDomainInfo_v6_t;
typedef ncclNvlDomainInfo_v5_t ncclNvlDomainInfo_v7_t;

/* v5 and v6: NCCL's GPU latency and bandwidth tables. Weft's model has other constants; it passes
 * zeros and ignores what the plugin writes here. */
typedef struct {
  double baseLatencies[7][3];
  double hwLatencies[3][7][3];
  double llMaxBws[4][3];
  double perChMaxRingLL128Bws[4][3];
  double perChMaxTreeLL128Bws[4][3];
  double perChMaxTreeBws[4][3];
  double perChMaxNVLSTreeBws[4][3];
} ncclTunerConstants_v5_t;
typedef ncclTunerConstants_v5_t ncclTunerConstants_v6_t;

/* v7: the same tables with a fifth row of per-architecture bandwidths. A v7 plugin may write the
 * whole struct, so it gets one of this size, never a v5 one. */
typedef struct {
  double baseLatencies[7][3];
  double hwLatencies[3][7][3];
  double llMaxBws[5][3];
  double perChMaxRingLL128Bws[5][3];
  double perChMaxTreeLL128Bws[5][3];
  double perChMaxTreeBws[5][3];
  double perChMaxNVLSTreeBws[5][3];
} ncclTunerConstants_v7_t;

typedef ncclResult_t (*weftTunerGetCollInfo_t)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                                               float** collCostTable, int numAlgo, int numProto, int regBuff,
                                               int* nChannels);

/* v7: v6's entry points over v7's constants. */
typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                       ncclNvlDomainInfo_v7_t* nvlDomainInfo, ncclTunerConstants_v7_t* constants);
  weftTunerGetCollInfo_t getCollInfo;
  ncclResult_t (*finalize)(void* context);
  /* Optional, as in v6. */
  ncclResult_t (*getChunkSize)(void* context, ncclFunc_t collType, size_t nBytes, int algo, int proto, int nChannels,
                               size_t* chunkSize);
} ncclTuner_v7_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                       ncclNvlDomainInfo_v6_t* nvlDomainInfo, ncclTunerConstants_v6_t* constants);
  weftTunerGetCollInfo_t getCollInfo;
  ncclResult_t (*finalize)(void* context);
  /* Optional (may be NULL). Weft's pieces are its FIFO slots, so it does not call this. */
  ncclResult_t (*getChunkSize)(void* context, ncclFunc_t collType, size_t nBytes, int algo, int proto, int nChannels,
                               size_t* chunkSize);
} ncclTuner_v6_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                       ncclNvlDomainInfo_v5_t* nvlDomainInfo, ncclTunerConstants_v5_t* constants);
  weftTunerGetCollInfo_t getCollInfo;
  ncclResult_t (*finalize)(void* context);
} ncclTuner_v5_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  weftTunerGetCollInfo_t getCollInfo;
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v4_t;

#ifdef __cplusplus
}
#endif

#endif /* WEFT_TUNER_ABI_H_ */
