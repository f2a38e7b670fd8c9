/* Compile-only check of include/weft/weft.h on its own (C99; header_check_weft.cc: C++). */
#include <weft/weft.h>

#include "header_check_common.h"

int weft_header_check_weft(ncclComm_t comm);
int weft_header_check_weft(ncclComm_t comm) {
  const char* (*v)(void) = weftGetVersionString;
  int (*code)(void) = weftGetVersionCode;
  ncclResult_t (*host)(ncclComm_t, int*) = weftCommIsHostMode;
  ncclResult_t (*backend)(ncclComm_t, const char**) = weftCommGetBackend;
  ncclResult_t (*dump)(ncclComm_t, char*, size_t) = weftCommDumpState;
  ncclResult_t (*agv)(const void*, void*, const size_t[], const size_t[], ncclDataType_t,
                      ncclComm_t, WEFT_STREAM_T) = weftAllGatherv;
  ncclResult_t (*rsv)(const void*, void*, const size_t[], const size_t[], ncclDataType_t,
                      ncclRedOp_t, ncclComm_t, WEFT_STREAM_T) = weftReduceScatterv;
#if !defined(WEFT_HAS_ALLGATHERV) || !defined(WEFT_HAS_REDUCESCATTERV) || \
    WEFT_HAS_ALLGATHERV != 1 || WEFT_HAS_REDUCESCATTERV != 1
#error "weft/weft.h must define WEFT_HAS_ALLGATHERV and WEFT_HAS_REDUCESCATTERV as 1"
#endif
  char buf[256];
  const char* name = NULL;
  int isHost = 0;
  (void)v, (void)code, (void)host, (void)backend, (void)dump, (void)agv, (void)rsv;
  if (weftCommIsHostMode(comm, &isHost) != ncclSuccess) return -1;
  if (weftCommGetBackend(comm, &name) != ncclSuccess) return -1;
  if (weftCommDumpState(comm, buf, sizeof(buf)) != ncclSuccess) return -1;
  return weftGetVersionCode() + isHost + (name != NULL) + (weftGetVersionString() != NULL);
}
