/* The profiler plugin ABI (NCCL_PROFILER_PLUGIN), versions 1 to 7, as NCCL defines them. Plain C
 * so that a plugin can include it.
 *
 * One descriptor layout serves all four: each version's members are prefixes of the next one's
 * (v7 appends fields, v5 added members and parentGroup at the ends), the header is the same on
 * LP64 (v4's uint8_t type reads the low byte of v5's uint64_t on little-endian machines), and a
 * plugin only reads the members of the event type it was given. Weft fills the v7 layout and
 * hands the same pointer to a v4, v5 or v6 plugin, sending each only the event types its
 * version knows. */
#ifndef WEFT_PROFILER_ABI_H_
#define WEFT_PROFILER_ABI_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/plugin_logger_abi.h"
#include "nccl.h"

enum {
  ncclProfileGroup = 1 << 0,
  ncclProfileColl = 1 << 1,
  ncclProfileP2p = 1 << 2,
  ncclProfileProxyOp = 1 << 3,
  ncclProfileProxyStep = 1 << 4,
  ncclProfileProxyCtrl = 1 << 5,
  ncclProfileKernelCh = 1 << 6,
  ncclProfileNetPlugin = 1 << 7,
  ncclProfileGroupApi = 1 << 8, /* v5+ */
  ncclProfileCollApi = 1 << 9,  /* v5+ */
  ncclProfileP2pApi = 1 << 10,  /* v5+ */
  ncclProfileKernelLaunch = 1 << 11,
  ncclProfileCeColl = 1 << 12, /* v6+ */
  ncclProfileCeSync = 1 << 13,
  ncclProfileCeBatch = 1 << 14,
  ncclProfileKernelPhase = 1 << 15 /* v7 */
};

/* The states Weft records (NCCL's numbering, shared by every version from v3 on). */
typedef enum {
  ncclProfilerProxyStepSendGPUWait = 8,
  ncclProfilerProxyStepSendWait = 9,
  ncclProfilerProxyStepRecvWait = 10,
  ncclProfilerProxyStepRecvFlushWait = 11,
  ncclProfilerProxyStepRecvGPUWait = 12,
  ncclProfilerProxyCtrlIdle = 13,
  ncclProfilerProxyCtrlActive = 14,
  ncclProfilerProxyCtrlSleep = 15,
  ncclProfilerProxyCtrlWakeup = 16,
  ncclProfilerProxyOpInProgress_v4 = 19,     /* v4+ */
  ncclProfilerProxyStepSendPeerWait_v4 = 20, /* v4+ */
  ncclProfilerNetPluginUpdate = 21,
  ncclProfilerKernelChStop = 22,      /* v4+: the kernel's clock at the end, in kernelCh.pTimer */
  ncclProfilerGroupStartApiStop = 23, /* v5+ */
  ncclProfilerGroupEndApiStart = 24,  /* v5+ */
  ncclProfilerKernelPhaseStop = 31    /* v7: the phase's end in kernelCh.pTimer */
} ncclProfilerEventState_t;

typedef struct {
  uint64_t type; /* one ncclProfile* bit; uint8_t in v4 */
  void* parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
      uint64_t userTag; /* v7 */
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
      uint64_t userTag; /* v7 */
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    struct {
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup;         /* v5+ */
      const char* kernelVariant; /* v7 */
      bool isSymColl;            /* v7 */
      uint64_t userTag;          /* v7 */
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup; /* v5+ */
      uint64_t userTag;  /* v7 */
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
    struct {
      uint8_t channelId;
      uint8_t phaseId; /* 0 initial_sync, 1 compute, 2 final_sync */
      const char* phaseName;
      uint64_t pTimer;
    } kernelPhase; /* v7 */
  };
} ncclProfilerEventDescr_t;

typedef union {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;
  } kernelCh;
} ncclProfilerEventStateArgs_t;

/* What a network plugin's profiler callback asks for (its `type` argument). */
enum {
  ncclProfilerNetEventStart = 0,
  ncclProfilerNetEventStop = 1,
  ncclProfilerNetEventUpdate = 2,
  ncclProfilerNetEventUpdateAndStop = 3
};

typedef ncclResult_t (*ncclProfilerStart_t)(void* context, void** eHandle, ncclProfilerEventDescr_t* eDescr);
typedef ncclResult_t (*ncclProfilerStop_t)(void* eHandle);
typedef ncclResult_t (*ncclProfilerRecord_t)(void* eHandle, ncclProfilerEventState_t eState,
                                             ncclProfilerEventStateArgs_t* eStateArgs);
typedef ncclResult_t (*ncclProfilerFinalize_t)(void* context);

/* ncclProfiler_v5, _v6 and _v7 (the same table; only the descriptor grew). */
typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                       int nranks, int rank, ncclDebugLogger_t logfn);
  ncclProfilerStart_t startEvent;
  ncclProfilerStop_t stopEvent;
  ncclProfilerRecord_t recordEventState;
  ncclProfilerFinalize_t finalize;
} ncclProfiler_v5_t;

/* ncclProfiler_v4: init takes the communicator's hash after its name. */
typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, int* eActivationMask, const char* commName, uint64_t commHash, int nNodes,
                       int nranks, int rank, ncclDebugLogger_t logfn);
  ncclProfilerStart_t startEvent;
  ncclProfilerStop_t stopEvent;
  ncclProfilerRecord_t recordEventState;
  ncclProfilerFinalize_t finalize;
} ncclProfiler_v4_t;

/* ---- v1 to v3 -----------------------------------------------------------------------------
 * Older layouts: the operation events carry the communicator's name and hash, and v1 gives the
 * function, datatype, algorithm and protocol as NCCL's enum values instead of names. Weft fills
 * these from the layout above (profiler.cc) and sends them Group, Coll and P2p events only. */

/* Members the three versions share. */
typedef struct {
  pid_t pid;
  uint8_t channelId;
  int peer;
  int nSteps;
  int chunkSize;
  int isSend;
} ncclProfilerProxyOpDescr_v1_t;
typedef struct {
  const char* name;
  uint64_t commHash;
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
} ncclProfilerP2pDescr_v2_t; /* v2 and v3 */

typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      uint8_t func; /* Broadcast 0, Reduce 1, AllGather 2, ReduceScatter 3, AllReduce 4, Send 6, Recv 7 */
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      uint8_t datatype; /* ncclDataType_t */
      uint32_t op;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      uint8_t algo;  /* TREE 0, RING 1, COLLNET_DIRECT 2, COLLNET_CHAIN 3, NVLS 4, NVLS_TREE 5, PAT 6 */
      uint8_t proto; /* LL 0, LL128 1, SIMPLE 2 */
      int isCollnet;
      int isNvls;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      uint8_t func;
      void* buff;
      uint8_t datatype;
      size_t count;
      int peer;
    } p2p;
    ncclProfilerProxyOpDescr_v1_t proxyOp;
    struct {
      int step;
    } proxyStep;
  };
} ncclProfilerEventDescr_v1_t;

/* v2: names instead of enum values, no op/isCollnet/isNvls. */
typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    ncclProfilerP2pDescr_v2_t p2p;
    ncclProfilerProxyOpDescr_v1_t proxyOp;
    struct {
      int step;
    } proxyStep;
  };
} ncclProfilerEventDescr_v2_t;

/* v3: v2 without trafficBytes, plus kernel-channel and network-plugin events. */
typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    ncclProfilerP2pDescr_v2_t p2p;
    ncclProfilerProxyOpDescr_v1_t proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
} ncclProfilerEventDescr_v3_t;

/* ncclProfiler_v1.._v3: init takes only the context and the mask; the state calls are the same
 * shape (Weft records no state of the events these versions get). */
#define WEFT_PROFILER_LEGACY_TABLE(N)                                                                   \
  typedef struct {                                                                                      \
    const char* name;                                                                                   \
    ncclResult_t (*init)(void** context, int* eActivationMask);                                         \
    ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v##N##_t* eDescr); \
    ncclResult_t (*stopEvent)(void* eHandle);                                                           \
    ncclResult_t (*recordEventState)(void* eHandle, int eState, void* eStateArgs);                      \
    ncclResult_t (*finalize)(void* context);                                                            \
  } ncclProfiler_v##N##_t;
WEFT_PROFILER_LEGACY_TABLE(1)
WEFT_PROFILER_LEGACY_TABLE(2)
WEFT_PROFILER_LEGACY_TABLE(3)
#undef WEFT_PROFILER_LEGACY_TABLE

#endif /* WEFT_PROFILER_ABI_H_ */
