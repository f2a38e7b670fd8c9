/* All public headers together, in the order an RCCL program would use them, plus the legacy
 * <rccl.h> path and repeated inclusion (C99; header_check_all.cc: C++). */
#include <rccl.h>
#include <rccl/rccl.h>
#include <nccl.h>
#include <weft/weft.h>
#include <nccl.h>

#include "header_check_common.h"

int weft_header_check_all(hipStream_t stream, ncclComm_t comm);
int weft_header_check_all(hipStream_t stream, ncclComm_t comm) {
  int isHost = 0;
  (void)weftCommIsHostMode(comm, &isHost);
  return WEFT_CAST(int, ncclBroadcast(NULL, NULL, 0, ncclInt8, 0, comm, stream)) + isHost;
}
