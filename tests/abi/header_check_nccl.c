/* Compile-only check of include/nccl.h on its own: it must be self-contained, warning-free C99 and
 * C++ (header_check_nccl.cc compiles this file as C++), and every function must have the
 * signature NCCL 2.30.7 gives it (an assignment to a pointer of the expected type fails to
 * compile otherwise). */
#include <nccl.h>

#include "header_check_common.h"

/* Values that programs compile into themselves must be NCCL's. */
WEFT_CHECK(NCCL_MAJOR == 2 && NCCL_MINOR == 30 && NCCL_PATCH == 7, version);
WEFT_CHECK(NCCL_VERSION_CODE == 23007, version_code);
WEFT_CHECK(NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH) == NCCL_VERSION_CODE, version_macro);
WEFT_CHECK(NCCL_VERSION(2, 8, 4) == 2804 && NCCL_VERSION(2, 9, 0) == 20900, version_formula);
WEFT_CHECK(NCCL_UNIQUE_ID_BYTES == 128 && sizeof(ncclUniqueId) == 128, unique_id);
WEFT_CHECK(NCCL_CONFIG_UNDEF_INT == INT_MIN, undef_int);
WEFT_CHECK(NCCL_SPLIT_NOCOLOR == -1, nocolor);
WEFT_CHECK(NCCL_WIN_DEFAULT == 0 && NCCL_WIN_COLL_SYMMETRIC == 1 && NCCL_WIN_STRICT_ORDERING == 2,
           win_flags);
WEFT_CHECK(NCCL_API_MAGIC == 0xcafebeef && NCCL_SUSPEND_MEM == 1, magic_and_suspend);
WEFT_CHECK(NCCL_WIN_REQUIRED_ALIGNMENT == 4096, win_align);
WEFT_CHECK(NCCL_CTA_POLICY_DEFAULT == 0 && NCCL_CTA_POLICY_EFFICIENCY == 1 &&
               NCCL_CTA_POLICY_ZERO == 2,
           cta_policy);
WEFT_CHECK(NCCL_SHRINK_DEFAULT == 0 && NCCL_SHRINK_ABORT == 1 && NCCL_REVOKE_DEFAULT == 0, flags);
WEFT_CHECK(ncclSuccess == 0 && ncclInProgress == 7 && ncclTimeout == 8 && ncclNumResults == 9,
           results);
WEFT_CHECK(ncclStatGpuMemSuspend == 0 && ncclStatGpuMemSuspended == 1 &&
               ncclStatGpuMemPersist == 2 && ncclStatGpuMemTotal == 3,
           mem_stats);
WEFT_CHECK(ncclAvg == 4 && ncclNumOps == 5 && ncclMaxRedOp == 0x7fffffff, redops);
WEFT_CHECK(sizeof(ncclRedOp_t) == sizeof(int) && sizeof(ncclDataType_t) == sizeof(int), enum_size);
WEFT_CHECK(ncclChar == ncclInt8 && ncclInt == ncclInt32 && ncclHalf == ncclFloat16 &&
               ncclFloat == ncclFloat32 && ncclDouble == ncclFloat64,
           dtype_aliases);
WEFT_CHECK(ncclBfloat16 == 9 && ncclFloat8e4m3 == 10 && ncclFloat8e5m2 == 11 && ncclNumTypes == 12,
           dtypes);
WEFT_CHECK(ncclScalarDevice == 0 && ncclScalarHostImmediate == 1, residence);
#if defined(__LP64__) || defined(_LP64)
/* ncclConfig_t as NCCL 2.32.3 has it: 2.30's 96 bytes, then 2.31's and 2.32's five ints (120). */
WEFT_CHECK(sizeof(ncclConfig_t) == 120 && offsetof(ncclConfig_t, commName) == 48 &&
               offsetof(ncclConfig_t, nvlinkCentricSched) == 76 &&
               offsetof(ncclConfig_t, graphUsageMode) == 80 &&
               offsetof(ncclConfig_t, graphStreamOrdering) == 92 &&
               offsetof(ncclConfig_t, launchOrderImplicit) == 96 &&
               offsetof(ncclConfig_t, numRmaSig) == 100 &&
               offsetof(ncclConfig_t, rmaEagerInit) == 104 &&
               offsetof(ncclConfig_t, hostCftMode) == 108 &&
               offsetof(ncclConfig_t, nvlsHostMode) == 112,
           config_layout);
WEFT_CHECK(ncclHostCftDefault == INT_MIN && ncclHostCftEnable == 1 && ncclHostCftDisable == 2 &&
               ncclHostCftFallback == 3,
           host_cft_modes);
WEFT_CHECK(ncclNvlsHostModeDefault == INT_MIN && ncclNvlsHostModeEnable == 0 &&
               ncclNvlsHostModeDisableTransport == 1 &&
               ncclNvlsHostModeDisableSymmetricMultimem == 2 && ncclNvlsHostModeDisable == INT_MAX,
           nvls_host_modes);
WEFT_CHECK(NCCL_WIN_GIN_ONLY == 4 && NCCL_WIN_CFT_COUNTED == 8, win_flags_2_32);
WEFT_CHECK(sizeof(ncclWaitSignalDesc_t) == 16 && offsetof(ncclWaitSignalDesc_t, ctx) == 12,
           signal_desc);
WEFT_CHECK(sizeof(ncclSimInfo_t) == 24 && offsetof(ncclSimInfo_t, estimatedTime) == 16, sim_layout);
/* NCCL 2.32's encryption config, declared beside the 2.30.7 API: 32 bytes, as NCCL has it. */
WEFT_CHECK(sizeof(ncclEncryptionConfig_t) == 32 && offsetof(ncclEncryptionConfig_t, mode) == 16 &&
               offsetof(ncclEncryptionConfig_t, psk) == 24,
           encryption_layout);
WEFT_CHECK(NCCL_ENCRYPTION_MODE_NONE == 0 && NCCL_ENCRYPTION_MODE_PSK == 1, encryption_modes);
/* NCCL 2.31's per-call config (64 bytes) with 2.32's launchCompletionEvent appended (72). */
WEFT_CHECK(sizeof(ncclCollConfig_t) == 72 && offsetof(ncclCollConfig_t, ext) == 16 &&
               offsetof(ncclCollConfig_t, minCTAs) == 24 &&
               offsetof(ncclCollConfig_t, cgaClusterSize) == 36 &&
               offsetof(ncclCollConfig_t, algSelection) == 40 &&
               offsetof(ncclCollConfig_t, forceAlgSelection) == 48 &&
               offsetof(ncclCollConfig_t, CTAPolicy) == 52 &&
               offsetof(ncclCollConfig_t, userProfilerTag) == 56 &&
               offsetof(ncclCollConfig_t, launchCompletionEvent) == 64,
           collconfig_layout);
WEFT_CHECK(sizeof(ncclConfigExt_t) == 24 && offsetof(ncclConfigExt_t, key) == 8 &&
               offsetof(ncclConfigExt_t, val) == 16,
           config_ext_layout);
#endif

/* Every function and its pncclX twin, with the exact NCCL signature. */
#define CHECK_FN(name, ret, args) \
  {                               \
    ret(*f1) args = name;         \
    ret(*f2) args = p##name;      \
    (void)f1;                     \
    (void)f2;                     \
  }

typedef cudaStream_t Stream;

int weft_header_check_nccl(void);
int weft_header_check_nccl(void) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  ncclComm_t comm = NCCL_COMM_NULL;
  ncclWindow_t win = NULL;
  const char* p = NCCL_CONFIG_UNDEF_PTR;
  float undef = NCCL_UNDEF_FLOAT;
  const char* suffix = NCCL_SUFFIX;
  (void)comm, (void)win, (void)p, (void)undef, (void)suffix;

  CHECK_FN(ncclMemAlloc, ncclResult_t, (void**, size_t));
  CHECK_FN(ncclMemFree, ncclResult_t, (void*));
  CHECK_FN(ncclGetVersion, ncclResult_t, (int*));
  CHECK_FN(ncclGetUniqueId, ncclResult_t, (ncclUniqueId*));
  CHECK_FN(ncclSetEncryption, ncclResult_t, (const ncclEncryptionConfig_t*));
  CHECK_FN(ncclCommInitRankConfig, ncclResult_t,
           (ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*));
  CHECK_FN(ncclCommInitRank, ncclResult_t, (ncclComm_t*, int, ncclUniqueId, int));
  CHECK_FN(ncclCommInitAll, ncclResult_t, (ncclComm_t*, int, const int*));
  CHECK_FN(ncclCommFinalize, ncclResult_t, (ncclComm_t));
  CHECK_FN(ncclCommDestroy, ncclResult_t, (ncclComm_t));
  CHECK_FN(ncclCommAbort, ncclResult_t, (ncclComm_t));
  CHECK_FN(ncclCommRevoke, ncclResult_t, (ncclComm_t, int));
  CHECK_FN(ncclCommSplit, ncclResult_t, (ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*));
  CHECK_FN(ncclCommShrink, ncclResult_t, (ncclComm_t, int*, int, ncclComm_t*, ncclConfig_t*, int));
  CHECK_FN(ncclCommInitRankScalable, ncclResult_t,
           (ncclComm_t*, int, int, int, ncclUniqueId*, ncclConfig_t*));
  CHECK_FN(ncclGetErrorString, const char*, (ncclResult_t));
  CHECK_FN(ncclGetLastError, const char*, (ncclComm_t));
  WEFT_BEGIN_ALLOW_DEPRECATED
  CHECK_FN(ncclResetDebugInit, void, (void));
  WEFT_END_ALLOW_DEPRECATED
  CHECK_FN(ncclCommGetAsyncError, ncclResult_t, (ncclComm_t, ncclResult_t*));
  CHECK_FN(ncclCommCount, ncclResult_t, (const ncclComm_t, int*));
  CHECK_FN(ncclCommCuDevice, ncclResult_t, (const ncclComm_t, int*));
  CHECK_FN(ncclCommUserRank, ncclResult_t, (const ncclComm_t, int*));
  CHECK_FN(ncclCommRegister, ncclResult_t, (const ncclComm_t, void*, size_t, void**));
  CHECK_FN(ncclCommDeregister, ncclResult_t, (const ncclComm_t, void*));
  CHECK_FN(ncclCommWindowRegister, ncclResult_t, (ncclComm_t, void*, size_t, ncclWindow_t*, int));
  CHECK_FN(ncclCommWindowDeregister, ncclResult_t, (ncclComm_t, ncclWindow_t));
  CHECK_FN(ncclRedOpCreatePreMulSum, ncclResult_t,
           (ncclRedOp_t*, void*, ncclDataType_t, ncclScalarResidence_t, ncclComm_t));
  CHECK_FN(ncclRedOpDestroy, ncclResult_t, (ncclRedOp_t, ncclComm_t));
  CHECK_FN(ncclReduce, ncclResult_t,
           (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, Stream));
  CHECK_FN(ncclBcast, ncclResult_t, (void*, size_t, ncclDataType_t, int, ncclComm_t, Stream));
  CHECK_FN(ncclBroadcast, ncclResult_t,
           (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, Stream));
  CHECK_FN(ncclAllReduce, ncclResult_t,
           (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, Stream));
  CHECK_FN(ncclReduceScatter, ncclResult_t,
           (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, Stream));
  CHECK_FN(ncclAllGather, ncclResult_t,
           (const void*, void*, size_t, ncclDataType_t, ncclComm_t, Stream));
  CHECK_FN(ncclAlltoAll, ncclResult_t,
           (const void*, void*, size_t, ncclDataType_t, ncclComm_t, Stream));
  CHECK_FN(ncclGather, ncclResult_t,
           (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, Stream));
  CHECK_FN(ncclScatter, ncclResult_t,
           (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, Stream));
  CHECK_FN(ncclAllReduceConfig, ncclResult_t,
           (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, Stream,
            const ncclCollConfig_t*));
  CHECK_FN(ncclBroadcastConfig, ncclResult_t,
           (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, Stream,
            const ncclCollConfig_t*));
  CHECK_FN(ncclReduceConfig, ncclResult_t,
           (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, Stream,
            const ncclCollConfig_t*));
  CHECK_FN(ncclAllGatherConfig, ncclResult_t,
           (const void*, void*, size_t, ncclDataType_t, ncclComm_t, Stream,
            const ncclCollConfig_t*));
  CHECK_FN(ncclReduceScatterConfig, ncclResult_t,
           (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, Stream,
            const ncclCollConfig_t*));
  CHECK_FN(ncclAlltoAllConfig, ncclResult_t,
           (const void*, void*, size_t, ncclDataType_t, ncclComm_t, Stream,
            const ncclCollConfig_t*));
  CHECK_FN(ncclGatherConfig, ncclResult_t,
           (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, Stream,
            const ncclCollConfig_t*));
  CHECK_FN(ncclScatterConfig, ncclResult_t,
           (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, Stream,
            const ncclCollConfig_t*));
  CHECK_FN(ncclSend, ncclResult_t, (const void*, size_t, ncclDataType_t, int, ncclComm_t, Stream));
  CHECK_FN(ncclRecv, ncclResult_t, (void*, size_t, ncclDataType_t, int, ncclComm_t, Stream));
  CHECK_FN(ncclGroupStart, ncclResult_t, (void));
  CHECK_FN(ncclGroupEnd, ncclResult_t, (void));
  CHECK_FN(ncclGroupSimulateEnd, ncclResult_t, (ncclSimInfo_t*));
  /* NCCL 2.30 */
  CHECK_FN(ncclCommGetUniqueId, ncclResult_t, (ncclComm_t, ncclUniqueId*));
  CHECK_FN(ncclCommGrow, ncclResult_t,
           (ncclComm_t, int, const ncclUniqueId*, int, ncclComm_t*, ncclConfig_t*));
  CHECK_FN(ncclCommSuspend, ncclResult_t, (ncclComm_t, int));
  CHECK_FN(ncclCommResume, ncclResult_t, (ncclComm_t));
  CHECK_FN(ncclCommMemStats, ncclResult_t, (ncclComm_t, ncclCommMemStat_t, uint64_t*));
  CHECK_FN(ncclWinGetUserPtr, ncclResult_t, (ncclComm_t, ncclWindow_t, void**));
  CHECK_FN(ncclPutSignal, ncclResult_t,
           (const void*, size_t, ncclDataType_t, int, ncclWindow_t, size_t, int, int, unsigned int,
            ncclComm_t, Stream));
  CHECK_FN(ncclSignal, ncclResult_t, (int, int, int, unsigned int, ncclComm_t, Stream));
  CHECK_FN(ncclWaitSignal, ncclResult_t, (int, ncclWaitSignalDesc_t*, ncclComm_t, Stream));
  CHECK_FN(ncclParamBind, ncclResult_t, (ncclParamHandle_t*, const char*));
  CHECK_FN(ncclParamGetI8, ncclResult_t, (ncclParamHandle_t, int8_t*));
  CHECK_FN(ncclParamGetI16, ncclResult_t, (ncclParamHandle_t, int16_t*));
  CHECK_FN(ncclParamGetI32, ncclResult_t, (ncclParamHandle_t, int32_t*));
  CHECK_FN(ncclParamGetI64, ncclResult_t, (ncclParamHandle_t, int64_t*));
  CHECK_FN(ncclParamGetU8, ncclResult_t, (ncclParamHandle_t, uint8_t*));
  CHECK_FN(ncclParamGetU16, ncclResult_t, (ncclParamHandle_t, uint16_t*));
  CHECK_FN(ncclParamGetU32, ncclResult_t, (ncclParamHandle_t, uint32_t*));
  CHECK_FN(ncclParamGetU64, ncclResult_t, (ncclParamHandle_t, uint64_t*));
  CHECK_FN(ncclParamGetStr, ncclResult_t, (ncclParamHandle_t, const char**));
  CHECK_FN(ncclParamGet, ncclResult_t, (ncclParamHandle_t, void*, int, int*));
  CHECK_FN(ncclParamGetParameter, ncclResult_t, (const char*, const char**, int*));
  CHECK_FN(ncclParamGetAllParameterKeys, ncclResult_t, (const char***, int*));
  CHECK_FN(ncclParamDumpAll, void, (void));

  /* A host-mode call as a program would write it: a NULL stream. */
  if (0) (void)ncclAllReduce(NULL, NULL, 0, ncclFloat, ncclSum, NULL, WEFT_CAST(cudaStream_t, 0));
  return WEFT_CAST(int, config.version) + WEFT_CAST(int, sim.version);
}
