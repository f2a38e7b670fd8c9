/* Compile-only check of include/rccl/rccl.h on its own (C99; header_check_rccl.cc: C++). Without
 * HIP, hipStream_t is Weft's opaque declaration and every collective takes it. */
#include <rccl/rccl.h>

#include "header_check_common.h"

WEFT_CHECK(RCCL_BFLOAT16 == 1 && RCCL_FLOAT8 == 1, rccl_types);
WEFT_CHECK(RCCL_GATHER_SCATTER == 1 && RCCL_ALLTOALLV == 1, rccl_colls);
WEFT_CHECK(RCCL_ALLREDUCE_WITH_BIAS == 1 && RCCL_SUSPEND_RESUME == 1, rccl_extras);
WEFT_CHECK(sizeof(mscclAlgoHandle_t) == sizeof(int), msccl_handle);
WEFT_CHECK(NCCL_VERSION_CODE == 23007, rccl_version);

#define CHECK_FN(name, ret, args) \
  {                               \
    ret(*f1) args = name;         \
    ret(*f2) args = p##name;      \
    (void)f1;                     \
    (void)f2;                     \
  }

int weft_header_check_rccl(hipStream_t stream, ncclComm_t comm);
int weft_header_check_rccl(hipStream_t stream, ncclComm_t comm) {
  size_t counts[2] = {1, 1}, displs[2] = {0, 1};
  float send[2] = {1.0f, 2.0f}, recv[2];
  int rc = 0;
  CHECK_FN(ncclAlltoAllv, ncclResult_t,
           (const void*, const size_t*, const size_t*, void*, const size_t*, const size_t*,
            ncclDataType_t, ncclComm_t, hipStream_t));
  CHECK_FN(ncclAllToAllv, ncclResult_t,
           (const void*, const size_t*, const size_t*, void*, const size_t*, const size_t*,
            ncclDataType_t, ncclComm_t, hipStream_t));
  CHECK_FN(ncclAllToAll, ncclResult_t,
           (const void*, void*, size_t, ncclDataType_t, ncclComm_t, hipStream_t));
  CHECK_FN(ncclAllReduce, ncclResult_t,
           (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, hipStream_t));
  CHECK_FN(ncclAllReduceWithBias, ncclResult_t,
           (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, hipStream_t,
            const void*));
  CHECK_FN(mscclLoadAlgo, ncclResult_t, (const char*, mscclAlgoHandle_t*, int));
  CHECK_FN(mscclRunAlgo, ncclResult_t,
           (const void*, const size_t*, const size_t*, void*, const size_t*, const size_t*, size_t,
            ncclDataType_t, int, int, ncclRedOp_t, mscclAlgoHandle_t, ncclComm_t, hipStream_t));
  CHECK_FN(mscclUnloadAlgo, ncclResult_t, (mscclAlgoHandle_t));
#ifdef __cplusplus
  {
    /* RCCL's one C++ function, with its C++ signature. */
    ncclResult_t (*dump)(ncclComm_t, std::unordered_map<std::string, std::string>&) = ncclCommDump;
    (void)dump;
  }
#ifndef NCCL_COMM_DUMP
#error "rccl/rccl.h must define NCCL_COMM_DUMP in C++"
#endif
#endif
  /* Calls exactly as an RCCL program writes them. */
  rc += WEFT_CAST(int, ncclAllReduce(send, recv, 2, ncclFloat, ncclSum, comm, stream));
  rc += WEFT_CAST(int, ncclAlltoAllv(send, counts, displs, recv, counts, displs, ncclFloat, comm,
                                     stream));
  rc += WEFT_CAST(int, ncclAllToAllv(send, counts, displs, recv, counts, displs, ncclFloat, comm,
                                     stream));
  rc += WEFT_CAST(int, ncclAllToAll(send, recv, 1, ncclFloat, comm, stream));
  rc += WEFT_CAST(int, ncclGather(send, recv, 1, ncclFloat, 0, comm, stream));
  return rc;
}
