/* Prints every ABI-relevant fact of <nccl.h> in a fixed text format: type sizes, alignments and
 * field offsets, enum values, macro values (with their type's size and signedness) and the bytes
 * of the NCCL_CONFIG_INITIALIZER / NCCL_SIM_INFO_INITIALIZER values.
 *
 * It is built twice, once against Weft's include/ and once against NVIDIA's nccl.h, and the
 * abi_layout test requires the two outputs to be identical. So print only what the header
 * defines, never addresses or anything else that may differ between two builds.
 *
 * The reference may be an older NCCL than the one Weft implements (CUDA's toolkit ships whichever
 * nccl.h it ships). The build passes both version codes to both copies: WEFT_ABI_REFERENCE_VERSION
 * (NVIDIA's) and WEFT_ABI_WEFT_VERSION. When they differ, both copies print only what the reference
 * version has, and leave out the facts that differ between two versions by design (the version
 * macros, the config's size and tag, the initializer bytes), so an older reference still checks
 * every layout, value and field the two versions share. */
#include <nccl.h>

/* The build says which header this copy must see; WEFT_STREAM_T exists only in Weft's. */
#if defined(WEFT_ABI_EXPECT_NVIDIA_HEADER) && defined(WEFT_STREAM_T)
#error "compiled against Weft's nccl.h, but NVIDIA's was expected: check the include path"
#endif
#if defined(WEFT_ABI_EXPECT_WEFT_HEADER) && !defined(WEFT_STREAM_T)
#error "compiled against another nccl.h, but Weft's was expected: check the include path"
#endif

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "abi_versions.h"

/* Alignment of a type, the C99 way. */
#define ALIGN_PROBE(T, tag) \
  struct align_##tag {      \
    char c;                 \
    T x;                    \
  }
ALIGN_PROBE(ncclUniqueId, uid);
ALIGN_PROBE(ncclConfig_t, config);
ALIGN_PROBE(ncclSimInfo_t, sim);
ALIGN_PROBE(ncclComm_t, comm);
ALIGN_PROBE(ncclWindow_t, win);
ALIGN_PROBE(ncclResult_t, result);
ALIGN_PROBE(ncclRedOp_t, redop);
ALIGN_PROBE(ncclDataType_t, dtype);
ALIGN_PROBE(ncclScalarResidence_t, residence);
ALIGN_PROBE(cudaStream_t, stream);
#define ALIGNOF(tag) ((unsigned long)offsetof(struct align_##tag, x))

#define TYPE(T, tag) \
  printf("type %s sizeof %lu alignof %lu\n", #T, (unsigned long)sizeof(T), ALIGNOF(tag))

/* An enum type: its size and whether it behaves as signed. */
#define ENUM_TYPE(T, tag)                                                                          \
  printf("type %s sizeof %lu alignof %lu signed %d\n", #T, (unsigned long)sizeof(T), ALIGNOF(tag), \
         (int)!((T)-1 > (T)0))

#define FIELD(S, f)                                                                      \
  printf("field %s.%s offsetof %lu sizeof %lu\n", #S, #f, (unsigned long)offsetof(S, f), \
         (unsigned long)sizeof(((S*)0)->f))

#define ENUMERATOR(T, e) printf("enum %s.%s %lld\n", #T, #e, (long long)(e))

/* An arithmetic macro: its value, the size of its type, whether it is floating and signed. */
#define MACRO(m)                                                                                  \
  do {                                                                                            \
    int floating_ = (((m)*0 + 1) / 2) != 0;                                                       \
    if (floating_)                                                                                \
      printf("macro %s %.9g sizeof %lu floating 1\n", #m, (double)(m), (unsigned long)sizeof(m)); \
    else                                                                                          \
      printf("macro %s %lld sizeof %lu floating 0 signed %d\n", #m, (long long)(m),               \
             (unsigned long)sizeof(m), (int)!(((m)*0 - 1) > 0));                                  \
  } while (0)

#if WEFT_ABI_SAME_VERSION
static void dump_bytes(const char* what, const void* p, size_t n) {
  const unsigned char* b = (const unsigned char*)p;
  size_t i;
  printf("bytes %s", what);
  for (i = 0; i < n; ++i) printf("%s%02x", (i % 8) ? "" : " ", b[i]);
  printf("\n");
}
#endif

/* Static storage: padding bytes (if any) are zero, so the byte dumps are deterministic. */
static ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
static ncclSimInfo_t simInfo = NCCL_SIM_INFO_INITIALIZER;

int main(void) {
  printf("# nccl.h ABI facts\n");

  /* Types and layouts. */
  TYPE(ncclUniqueId, uid);
  FIELD(ncclUniqueId, internal);
  TYPE(ncclComm_t, comm);
  TYPE(ncclWindow_t, win);
  TYPE(cudaStream_t, stream);
  ENUM_TYPE(ncclResult_t, result);
  ENUM_TYPE(ncclRedOp_t, redop);
  ENUM_TYPE(ncclDataType_t, dtype);
  ENUM_TYPE(ncclScalarResidence_t, residence);
  printf("type ncclRedOp_dummy_t sizeof %lu\n", (unsigned long)sizeof(ncclRedOp_dummy_t));

#if !WEFT_ABI_SAME_VERSION
  printf("# version-specific facts left out: reference %d, Weft %d\n", WEFT_ABI_REFERENCE_VERSION,
         WEFT_ABI_WEFT_VERSION);
#endif
#if WEFT_ABI_SAME_CONFIG
  TYPE(ncclConfig_t, config);
#endif
  FIELD(ncclConfig_t, size);
  FIELD(ncclConfig_t, magic);
  FIELD(ncclConfig_t, version);
  FIELD(ncclConfig_t, blocking);
  FIELD(ncclConfig_t, cgaClusterSize);
  FIELD(ncclConfig_t, minCTAs);
  FIELD(ncclConfig_t, maxCTAs);
  FIELD(ncclConfig_t, netName);
  FIELD(ncclConfig_t, splitShare);
  FIELD(ncclConfig_t, trafficClass);
  FIELD(ncclConfig_t, commName);
  FIELD(ncclConfig_t, collnetEnable);
  FIELD(ncclConfig_t, CTAPolicy);
  FIELD(ncclConfig_t, shrinkShare);
  FIELD(ncclConfig_t, nvlsCTAs);
  FIELD(ncclConfig_t, nChannelsPerNetPeer);
  FIELD(ncclConfig_t, nvlinkCentricSched);
#if WEFT_ABI_HAS_2_30
  FIELD(ncclConfig_t, graphUsageMode);
  FIELD(ncclConfig_t, numRmaCtx);
  FIELD(ncclConfig_t, maxP2pPeers);
  FIELD(ncclConfig_t, graphStreamOrdering);
#endif
#if WEFT_ABI_SAME_CONFIG
  FIELD(ncclConfig_t, launchOrderImplicit);
  FIELD(ncclConfig_t, numRmaSig);
  FIELD(ncclConfig_t, rmaEagerInit);
  FIELD(ncclConfig_t, hostCftMode);
  FIELD(ncclConfig_t, nvlsHostMode);
  printf("struct tag ncclConfig_t = struct ncclConfig_v23100 sizeof %lu\n",
         (unsigned long)sizeof(struct ncclConfig_v23100));
  ENUMERATOR(ncclHostCftMode_t, ncclHostCftDefault);
  ENUMERATOR(ncclHostCftMode_t, ncclHostCftEnable);
  ENUMERATOR(ncclHostCftMode_t, ncclHostCftDisable);
  ENUMERATOR(ncclHostCftMode_t, ncclHostCftFallback);
  ENUMERATOR(ncclNvlsHostMode_t, ncclNvlsHostModeDefault);
  ENUMERATOR(ncclNvlsHostMode_t, ncclNvlsHostModeEnable);
  ENUMERATOR(ncclNvlsHostMode_t, ncclNvlsHostModeDisableTransport);
  ENUMERATOR(ncclNvlsHostMode_t, ncclNvlsHostModeDisableSymmetricMultimem);
  ENUMERATOR(ncclNvlsHostMode_t, ncclNvlsHostModeDisable);
  MACRO(NCCL_WIN_GIN_ONLY);
  MACRO(NCCL_WIN_CFT_COUNTED);
#endif
#if WEFT_ABI_HAS_2_30
  printf("type ncclWaitSignalDesc_t sizeof %lu\n", (unsigned long)sizeof(ncclWaitSignalDesc_t));
  FIELD(ncclWaitSignalDesc_t, opCnt);
  FIELD(ncclWaitSignalDesc_t, peer);
  FIELD(ncclWaitSignalDesc_t, sigIdx);
  FIELD(ncclWaitSignalDesc_t, ctx);
  printf("type ncclCommMemStat_t sizeof %lu\n", (unsigned long)sizeof(ncclCommMemStat_t));
  printf("type ncclParamHandle_t sizeof %lu\n", (unsigned long)sizeof(ncclParamHandle_t));
#endif

  TYPE(ncclSimInfo_t, sim);
  FIELD(ncclSimInfo_t, size);
  FIELD(ncclSimInfo_t, magic);
  FIELD(ncclSimInfo_t, version);
  FIELD(ncclSimInfo_t, estimatedTime);
  printf("struct tag ncclSimInfo_t = struct ncclSimInfo_v22200 sizeof %lu\n",
         (unsigned long)sizeof(struct ncclSimInfo_v22200));

  /* Enumerators. */
  ENUMERATOR(ncclResult_t, ncclSuccess);
  ENUMERATOR(ncclResult_t, ncclUnhandledCudaError);
  ENUMERATOR(ncclResult_t, ncclSystemError);
  ENUMERATOR(ncclResult_t, ncclInternalError);
  ENUMERATOR(ncclResult_t, ncclInvalidArgument);
  ENUMERATOR(ncclResult_t, ncclInvalidUsage);
  ENUMERATOR(ncclResult_t, ncclRemoteError);
  ENUMERATOR(ncclResult_t, ncclInProgress);
#if WEFT_ABI_SAME_VERSION
  ENUMERATOR(ncclResult_t, ncclNumResults);
#endif
#if WEFT_ABI_HAS_2_30
  ENUMERATOR(ncclResult_t, ncclTimeout);
  ENUMERATOR(ncclCommMemStat_t, ncclStatGpuMemSuspend);
  ENUMERATOR(ncclCommMemStat_t, ncclStatGpuMemSuspended);
  ENUMERATOR(ncclCommMemStat_t, ncclStatGpuMemPersist);
  ENUMERATOR(ncclCommMemStat_t, ncclStatGpuMemTotal);
#endif

  ENUMERATOR(ncclRedOp_dummy_t, ncclNumOps_dummy);
  ENUMERATOR(ncclRedOp_t, ncclSum);
  ENUMERATOR(ncclRedOp_t, ncclProd);
  ENUMERATOR(ncclRedOp_t, ncclMax);
  ENUMERATOR(ncclRedOp_t, ncclMin);
  ENUMERATOR(ncclRedOp_t, ncclAvg);
  ENUMERATOR(ncclRedOp_t, ncclNumOps);
  ENUMERATOR(ncclRedOp_t, ncclMaxRedOp);

  ENUMERATOR(ncclDataType_t, ncclInt8);
  ENUMERATOR(ncclDataType_t, ncclChar);
  ENUMERATOR(ncclDataType_t, ncclUint8);
  ENUMERATOR(ncclDataType_t, ncclInt32);
  ENUMERATOR(ncclDataType_t, ncclInt);
  ENUMERATOR(ncclDataType_t, ncclUint32);
  ENUMERATOR(ncclDataType_t, ncclInt64);
  ENUMERATOR(ncclDataType_t, ncclUint64);
  ENUMERATOR(ncclDataType_t, ncclFloat16);
  ENUMERATOR(ncclDataType_t, ncclHalf);
  ENUMERATOR(ncclDataType_t, ncclFloat32);
  ENUMERATOR(ncclDataType_t, ncclFloat);
  ENUMERATOR(ncclDataType_t, ncclFloat64);
  ENUMERATOR(ncclDataType_t, ncclDouble);
  ENUMERATOR(ncclDataType_t, ncclBfloat16);
  ENUMERATOR(ncclDataType_t, ncclFloat8e4m3);
  ENUMERATOR(ncclDataType_t, ncclFloat8e5m2);
  ENUMERATOR(ncclDataType_t, ncclNumTypes);

  ENUMERATOR(ncclScalarResidence_t, ncclScalarDevice);
  ENUMERATOR(ncclScalarResidence_t, ncclScalarHostImmediate);

  /* Macros. */
#if WEFT_ABI_SAME_VERSION
  MACRO(NCCL_MAJOR);
  MACRO(NCCL_MINOR);
  MACRO(NCCL_PATCH);
  printf("macro NCCL_SUFFIX \"%s\" sizeof %lu\n", NCCL_SUFFIX, (unsigned long)sizeof(NCCL_SUFFIX));
  MACRO(NCCL_VERSION_CODE);
  MACRO(NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH));
#endif
  MACRO(NCCL_VERSION(2, 28, 9));
  MACRO(NCCL_VERSION(2, 8, 4));
  MACRO(NCCL_VERSION(2, 8, 99));
  MACRO(NCCL_VERSION(2, 9, 0));
  MACRO(NCCL_VERSION(1, 9, 2));
  MACRO(NCCL_VERSION(3, 0, 0));
  MACRO(NCCL_VERSION(2, 30, 1));
  MACRO(NCCL_UNIQUE_ID_BYTES);
  MACRO(NCCL_CONFIG_UNDEF_INT);
  printf("macro NCCL_CONFIG_UNDEF_PTR null %d sizeof %lu\n", NCCL_CONFIG_UNDEF_PTR == NULL,
         (unsigned long)sizeof(NCCL_CONFIG_UNDEF_PTR));
  printf("macro NCCL_COMM_NULL null %d sizeof %lu\n", NCCL_COMM_NULL == NULL,
         (unsigned long)sizeof(NCCL_COMM_NULL));
  MACRO(NCCL_SPLIT_NOCOLOR);
  MACRO(NCCL_UNDEF_FLOAT);
  MACRO(NCCL_WIN_DEFAULT);
  MACRO(NCCL_WIN_COLL_SYMMETRIC);
  MACRO(NCCL_WIN_REQUIRED_ALIGNMENT);
  MACRO(NCCL_CTA_POLICY_DEFAULT);
  MACRO(NCCL_CTA_POLICY_EFFICIENCY);
  MACRO(NCCL_CTA_POLICY_ZERO);
  MACRO(NCCL_SHRINK_DEFAULT);
  MACRO(NCCL_SHRINK_ABORT);
  MACRO(NCCL_REVOKE_DEFAULT);
#if WEFT_ABI_HAS_2_30
  MACRO(NCCL_API_MAGIC);
  MACRO(NCCL_WIN_STRICT_ORDERING);
  MACRO(NCCL_SUSPEND_MEM);
#endif

  /* NCCL_CONFIG_INITIALIZER, field by field and byte by byte. */
#if WEFT_ABI_SAME_CONFIG
  printf("config.size %lu\n", (unsigned long)config.size);
#endif
#if WEFT_ABI_SAME_VERSION
  printf("config.version %u\n", config.version);
#endif
  printf("config.magic 0x%x\n", config.magic);
  printf("config.blocking %d\n", config.blocking);
  printf("config.cgaClusterSize %d\n", config.cgaClusterSize);
  printf("config.minCTAs %d\n", config.minCTAs);
  printf("config.maxCTAs %d\n", config.maxCTAs);
  printf("config.netName null %d\n", config.netName == NULL);
  printf("config.splitShare %d\n", config.splitShare);
  printf("config.trafficClass %d\n", config.trafficClass);
  printf("config.commName null %d\n", config.commName == NULL);
  printf("config.collnetEnable %d\n", config.collnetEnable);
  printf("config.CTAPolicy %d\n", config.CTAPolicy);
  printf("config.shrinkShare %d\n", config.shrinkShare);
  printf("config.nvlsCTAs %d\n", config.nvlsCTAs);
  printf("config.nChannelsPerNetPeer %d\n", config.nChannelsPerNetPeer);
  printf("config.nvlinkCentricSched %d\n", config.nvlinkCentricSched);
#if WEFT_ABI_HAS_2_30
  printf("config.graphUsageMode %d\n", config.graphUsageMode);
  printf("config.numRmaCtx %d\n", config.numRmaCtx);
  printf("config.maxP2pPeers %d\n", config.maxP2pPeers);
  printf("config.graphStreamOrdering %d\n", config.graphStreamOrdering);
#endif
#if WEFT_ABI_SAME_CONFIG
  printf("config.launchOrderImplicit %d\n", config.launchOrderImplicit);
  printf("config.numRmaSig %d\n", config.numRmaSig);
  printf("config.rmaEagerInit %d\n", config.rmaEagerInit);
  printf("config.hostCftMode %d\n", config.hostCftMode);
  printf("config.nvlsHostMode %d\n", config.nvlsHostMode);
#endif
#if WEFT_ABI_SAME_CONFIG && WEFT_ABI_SAME_VERSION
  /* The bytes hold the version field too. */
  dump_bytes("NCCL_CONFIG_INITIALIZER", &config, sizeof(config));
#endif

  /* NCCL_SIM_INFO_INITIALIZER. */
  printf("simInfo.size %lu\n", (unsigned long)simInfo.size);
  printf("simInfo.magic 0x%x\n", simInfo.magic);
  printf("simInfo.estimatedTime %.9g\n", (double)simInfo.estimatedTime);
#if WEFT_ABI_SAME_VERSION
  printf("simInfo.version %u\n", simInfo.version);
  dump_bytes("NCCL_SIM_INFO_INITIALIZER", &simInfo, sizeof(simInfo));
#endif

  /* An automatic (stack) config from the initializer holds the same values. */
  {
    ncclConfig_t local = NCCL_CONFIG_INITIALIZER;
    int same = local.size == config.size && local.magic == config.magic &&
               local.version == config.version && local.blocking == config.blocking &&
               local.nvlinkCentricSched == config.nvlinkCentricSched && local.netName == NULL &&
               local.commName == NULL;
    printf("config.local_matches_static %d\n", same);
  }
  return 0;
}
