/* Compile-only check of include/weft/weft.h on its own (C99; header_check_weft.cc: C++). */
#include <weft/weft.h>

#include "header_check_common.h"

/* Weft's complex types sit outside NCCL's numbering, and the enum keeps NCCL's size. */
WEFT_CHECK(weftComplex64 == 64 && weftComplex128 == 65 && sizeof(ncclDataType_t) == sizeof(int),
           complex_values);

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
#if !defined(WEFT_HAS_COMPLEX) || WEFT_HAS_COMPLEX != 1 || !defined(weftComplex64) || \
    !defined(weftComplex128)
#error "weft/weft.h must define WEFT_HAS_COMPLEX as 1 and weftComplex64/weftComplex128 as macros"
#endif
  /* The complex datatypes are ncclDataType_t values 64 and 65: assigned, compared and used as case
   * labels without a warning (-Wconversion, -Wswitch: 64 is an enumerator), and far-off values
   * such as 1000 are inside the enum's range (in C++, converting a value outside it is undefined).
   */
  ncclDataType_t complexTypes[2] = {weftComplex64, weftComplex128};
  size_t complexBytes = 0;
  int i;
  for (i = 0; i < 2; ++i) {
    switch (complexTypes[i]) {
      case weftComplex64: complexBytes += 8; break;
      case weftComplex128: complexBytes += 16; break;
      default: return -1;
    }
  }
  if (complexBytes != 24 || WEFT_CAST(int, weftComplex64) != 64 ||
      WEFT_CAST(int, weftComplex128) != 65 ||
      WEFT_CAST(int, WEFT_CAST(ncclDataType_t, 1000)) != 1000)
    return -1;
  char buf[256];
  const char* name = NULL;
  int isHost = 0;
  (void)v, (void)code, (void)host, (void)backend, (void)dump, (void)agv, (void)rsv;
  if (weftCommIsHostMode(comm, &isHost) != ncclSuccess) return -1;
  if (weftCommGetBackend(comm, &name) != ncclSuccess) return -1;
  if (weftCommDumpState(comm, buf, sizeof(buf)) != ncclSuccess) return -1;
  return weftGetVersionCode() + isHost + (name != NULL) + (weftGetVersionString() != NULL);
}
