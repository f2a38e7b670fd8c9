/*
 * Weft's own extensions to the NCCL/RCCL C API. Every name here starts with "weft", and the
 * library exports these next to the nccl* functions, so a program can look them up with dlsym
 * to find out whether the libnccl.so.2 (or librccl.so.1) it loaded is Weft.
 *
 * Valid C (C99 and later) and C++. RCCL programs in host mode: include rccl/rccl.h first.
 */
#ifndef WEFT_WEFT_H_
#define WEFT_WEFT_H_

#include <stddef.h>

#include "../nccl.h"

#if defined(__GNUC__) || defined(__clang__)
#  pragma GCC visibility push(default)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The library's name, versions and backends, e.g. "Weft 0.1.0 (NCCL API 2.30.7, backends: host, cuda)".
 * Host mode is in every build; a CUDA or HIP build names its GPU backend too. A static string. */
const char* weftGetVersionString(void);

/* Weft's own version (not the NCCL API's) as MAJOR*10000 + MINOR*100 + PATCH: 0.1.0 gives 100. */
int weftGetVersionCode(void);

/* Sets *isHostMode to 1 when comm moves and reduces data on CPUs (host mode), 0 on a GPU. */
ncclResult_t weftCommIsHostMode(ncclComm_t comm, int* isHostMode);

/* Sets *name to comm's backend: "host", "cuda" or "hip". A static string; do not free it. */
ncclResult_t weftCommGetBackend(ncclComm_t comm, const char** name);

/* Writes a human-readable snapshot of where comm stands (its rank, state and counters, and, while
 * a call on comm waits, the operation's number, the step it waits on with its lane and channel,
 * and the peer it waits for) into buf, truncated to len bytes and always NUL-terminated when
 * len > 0. Safe to call from another thread while a call on comm is blocked: it is meant for
 * finding out which rank is stuck where. Host mode: a wait shows once the executor goes to sleep
 * (after WEFT_SPIN_US, 100 us by default); GPU communicators report no waits yet. */
ncclResult_t weftCommDumpState(ncclComm_t comm, char* buf, size_t len);

/* Complex datatypes, a Weft extension. Values of ncclDataType_t outside NCCL's numbering (NCCL
 * programs never see them), defined as macros so that a program can test for them with #ifdef.
 * An element is a pair {real, imaginary} of float (weftComplex64, 8 bytes) or double
 * (weftComplex128, 16 bytes), laid out as C's float _Complex / double _Complex and C++'s
 * std::complex<float> / std::complex<double>; counts are in complex elements.
 *
 * Every collective and ncclSend/ncclRecv accept them, as do weftAllGatherv/weftReduceScatterv.
 * Reductions, with every part rounded as the real types round (each rank gets the same bits):
 *   ncclSum      the real and imaginary parts are summed separately;
 *   ncclProd     complex multiplication by the textbook formula,
 *                (a+bi)(c+di) = (ac - bd) + (ad + bc)i, each product rounded on its own (never
 *                fused into the add) and without C Annex G's recovery of infinities from NaNs;
 *   ncclAvg      the sum, then each part divided by the number of ranks (one rounding);
 *   PreMulSum    ncclRedOpCreatePreMulSum with datatype weftComplex64/128 takes a complex scalar
 *                (two floats or two doubles, host-immediate or device-resident); each rank's
 *                input is multiplied by it as ncclProd multiplies, then summed.
 * ncclMax and ncclMin have no meaning on complex numbers: ncclInvalidArgument. The low-precision
 * FP8 path (RCCL_LOW_PRECISION_ENABLE) never takes them: they run at full precision. A GPU build
 * compiles the same element code into its kernels (emulated on CPUs in Weft's tests, not yet run
 * on a GPU). Complex float16/bfloat16 are not provided: other values stay invalid datatypes. */
#define WEFT_HAS_COMPLEX 1
#define weftComplex64 weftDataTypeComplex64_   /* 64, an enumerator of ncclDataType_t (nccl.h) */
#define weftComplex128 weftDataTypeComplex128_ /* 65 */

/* Uneven AllGather (like MPI_Allgatherv): rank r contributes recvcounts[r] elements from sendbuff;
 * every rank receives rank r's elements at recvbuff + displs[r] elements. In place when
 * sendbuff == recvbuff + displs[rank]. recvcounts/displs have nranks entries and must be equal on
 * every rank; any mix of counts, zeros included.
 *
 * Weft checks, on every rank: neither array is NULL; no displs[r] + recvcounts[r] of a non-empty
 * block overflows size_t or the address space (an empty block's displacement is ignored); the
 * non-empty ranges [displs[r], displs[r] + recvcounts[r]) do not overlap, which Weft checks since
 * sorting nranks ranges is cheap (all ncclInvalidArgument, with a message naming the ranks).
 * Ranks that pass different arrays fail with ncclInvalidUsage naming both calls (a hash of the
 * arrays travels with every message), not with wrong data; only a rank whose own arrays move no
 * data at all (every count zero) returns at once, and its peers then fail when they time out
 * (WEFT_TIMEOUT_MS) or at its next call, as for any collective of count 0 against a non-zero one. recvbuff must hold
 * max(displs[r] + recvcounts[r]) elements; elements between the ranges are left as they were.
 * Host-mode communicators only so far (never run on a GPU): on a GPU communicator the call returns
 * ncclInvalidUsage. Works inside ncclGroupStart/End like any collective. The stream is the type
 * the nccl* collectives take (WEFT_STREAM_T: cudaStream_t, or hipStream_t in a HIP build). */
#define WEFT_HAS_ALLGATHERV 1
ncclResult_t weftAllGatherv(const void* sendbuff, void* recvbuff, const size_t recvcounts[],
                            const size_t displs[], ncclDataType_t datatype, ncclComm_t comm,
                            WEFT_STREAM_T stream);

/* Uneven ReduceScatter: every rank's sendbuff holds the whole vector; rank r receives, in recvbuff,
 * the recvcounts[r] elements at sendbuff + displs[r] reduced with op over all ranks. In place when
 * recvbuff == sendbuff + displs[rank]. Any op a ReduceScatter takes (ncclAvg and ops from
 * ncclRedOpCreatePreMulSum included). The same checks and limits as weftAllGatherv: the ranges
 * must not overlap, so each element of the vector goes to at most one rank; sendbuff must hold
 * max(displs[r] + recvcounts[r]) elements. */
#define WEFT_HAS_REDUCESCATTERV 1
ncclResult_t weftReduceScatterv(const void* sendbuff, void* recvbuff, const size_t recvcounts[],
                                const size_t displs[], ncclDataType_t datatype, ncclRedOp_t op,
                                ncclComm_t comm, WEFT_STREAM_T stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#if defined(__GNUC__) || defined(__clang__)
#  pragma GCC visibility pop
#endif

#endif /* WEFT_WEFT_H_ */
