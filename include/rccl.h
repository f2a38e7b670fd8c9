/*
 * Weft: the RCCL C API, as provided by librccl.so.1 built from Weft. Programs include it as
 * <rccl/rccl.h> (RCCL's path today; that file forwards here) or <rccl.h> (RCCL's older path).
 *
 * RCCL's API is NCCL's (see nccl.h, NCCL 2.30.7) with the stream arguments spelled
 * hipStream_t, plus a few RCCL-only calls and feature macros declared here.
 *
 * hipStream_t comes from HIP's headers on AMD platforms (__HIP_PLATFORM_AMD__ or clang's HIP
 * mode); otherwise (Weft's host mode) it is declared here as the same opaque pointer type HIP
 * uses, so HIP's headers may still be included later. Pass NULL as the stream in host mode.
 *
 * Include this header before nccl.h (or instead of it): nccl.h picks the stream type of every
 * collective once, and only when it is included through this file does host mode get hipStream_t.
 */
#ifndef WEFT_RCCL_H_
#define WEFT_RCCL_H_

#if !defined(NCCL_H_) && !defined(WEFT_USE_HIP_STREAM)
#  define WEFT_USE_HIP_STREAM 1
#  define WEFT_RCCL_SET_HIP_STREAM_ 1
#endif
#include "nccl.h"
#if defined(WEFT_RCCL_SET_HIP_STREAM_)
#  undef WEFT_USE_HIP_STREAM
#  undef WEFT_RCCL_SET_HIP_STREAM_
#endif

/* hipStream_t, when nccl.h did not already provide it (it was included first, for CUDA). */
#if defined(__HIP_PLATFORM_NVIDIA__) || defined(__HIP_PLATFORM_NVCC__)
#  include <hip/hip_runtime.h>
#elif !defined(HIP_INCLUDE_HIP_HIP_RUNTIME_API_H) && !defined(WEFT_HIP_STREAM_DECLARED_)
#  define WEFT_HIP_STREAM_DECLARED_ 1
typedef struct ihipStream_t* hipStream_t;
#endif

/* Feature tests, as RCCL defines them. */
#define RCCL_BFLOAT16 1       /* ncclBfloat16 is supported */
#define RCCL_FLOAT8 1         /* ncclFloat8e4m3 and ncclFloat8e5m2 are supported */
#define RCCL_GATHER_SCATTER 1 /* ncclGather and ncclScatter exist */
#define RCCL_ALLTOALLV 1      /* ncclAlltoAllv exists */
#define RCCL_ALLREDUCE_WITH_BIAS 1 /* ncclAllReduceWithBias exists */
#define RCCL_SUSPEND_RESUME 1      /* ncclCommSuspend and ncclCommResume exist */

#if defined(__GNUC__) || defined(__clang__)
#  pragma GCC visibility push(default)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* All-to-all with per-peer sizes: sendcounts[j] elements from sendbuff + sdispls[j] go to rank j;
 * recvcounts[i] elements from rank i land at recvbuff + rdispls[i] (counts and displacements are
 * in elements). */
ncclResult_t ncclAlltoAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[],
                           void* recvbuff, const size_t recvcounts[], const size_t rdispls[],
                           ncclDataType_t datatype, ncclComm_t comm, WEFT_STREAM_T stream);
ncclResult_t pncclAlltoAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[],
                            void* recvbuff, const size_t recvcounts[], const size_t rdispls[],
                            ncclDataType_t datatype, ncclComm_t comm, WEFT_STREAM_T stream);

/* Older spelling of ncclAlltoAll (deprecated; kept so existing RCCL programs build and link). */
ncclResult_t ncclAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, WEFT_STREAM_T stream);
ncclResult_t pncclAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclComm_t comm, WEFT_STREAM_T stream);

/* Older spelling of ncclAlltoAllv (deprecated; kept so existing RCCL programs build and link). */
ncclResult_t ncclAllToAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[],
                           void* recvbuff, const size_t recvcounts[], const size_t rdispls[],
                           ncclDataType_t datatype, ncclComm_t comm, WEFT_STREAM_T stream);
ncclResult_t pncclAllToAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[],
                            void* recvbuff, const size_t recvcounts[], const size_t rdispls[],
                            ncclDataType_t datatype, ncclComm_t comm, WEFT_STREAM_T stream);

/* AllReduce, then each rank combines its own bias acc (count elements of datatype) into its result
 * with the same op: recvbuff = op(allreduce(sendbuff), acc). Avg and PreMulSum operators add the
 * bias. The biases are not reduced across ranks, so ranks that pass different ones get different
 * results. acc must not be NULL. Host mode only for now (a GPU communicator returns
 * ncclInvalidUsage). */
ncclResult_t ncclAllReduceWithBias(const void* sendbuff, void* recvbuff, size_t count,
                                   ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                   WEFT_STREAM_T stream, const void* acc);
ncclResult_t pncclAllReduceWithBias(const void* sendbuff, void* recvbuff, size_t count,
                                    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                    WEFT_STREAM_T stream, const void* acc);

/* MSCCL, which RCCL has removed: these remain so that programs written for it link and run. They do
 * nothing but log a warning (NCCL_DEBUG=WARN) and return ncclSuccess, as RCCL's do now;
 * mscclLoadAlgo leaves *mscclAlgoHandle unchanged. Deprecated. */
typedef int mscclAlgoHandle_t;
ncclResult_t mscclLoadAlgo(const char* mscclAlgoFilePath, mscclAlgoHandle_t* mscclAlgoHandle, int rank);
ncclResult_t pmscclLoadAlgo(const char* mscclAlgoFilePath, mscclAlgoHandle_t* mscclAlgoHandle, int rank);
ncclResult_t mscclRunAlgo(const void* sendBuff, const size_t sendCounts[], const size_t sDisPls[],
                          void* recvBuff, const size_t recvCounts[], const size_t rDisPls[],
                          size_t count, ncclDataType_t dataType, int root, int peer, ncclRedOp_t op,
                          mscclAlgoHandle_t mscclAlgoHandle, ncclComm_t comm, WEFT_STREAM_T stream);
ncclResult_t pmscclRunAlgo(const void* sendBuff, const size_t sendCounts[], const size_t sDisPls[],
                           void* recvBuff, const size_t recvCounts[], const size_t rDisPls[],
                           size_t count, ncclDataType_t dataType, int root, int peer, ncclRedOp_t op,
                           mscclAlgoHandle_t mscclAlgoHandle, ncclComm_t comm, WEFT_STREAM_T stream);
ncclResult_t mscclUnloadAlgo(mscclAlgoHandle_t mscclAlgoHandle);
ncclResult_t pmscclUnloadAlgo(mscclAlgoHandle_t mscclAlgoHandle);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* RCCL's one C++ function: fills map with the communicator's state as text, one entry per fact
 * ("rank", "nRanks", "commHash", "state", "opCount", "activeOps", "connections",
 * "connectionBytes", "lastError", "waitingFor"). C++ linkage, as in RCCL; no pncclCommDump. */
#ifdef __cplusplus
#  define NCCL_COMM_DUMP
#  include <string>
#  include <unordered_map>
ncclResult_t ncclCommDump(ncclComm_t comm, std::unordered_map<std::string, std::string>& map);
#endif

#if defined(__GNUC__) || defined(__clang__)
#  pragma GCC visibility pop
#endif

#endif /* WEFT_RCCL_H_ */
