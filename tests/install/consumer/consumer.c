/* A program as a Weft user writes it, built against an installed Weft (tests/install): it reports
 * the versions and runs a 2-rank AllReduce in one process (host mode), checking the sum. Built with
 * -DWEFT_CONSUMER_RCCL it includes rccl.h instead of nccl.h, as an RCCL program does. */
#include <stdio.h>
#include <string.h>

#ifdef WEFT_CONSUMER_RCCL
#include <rccl.h>
#else
#include <nccl.h>
#endif
#include <weft/weft.h>

int main(void) {
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess) return 1;
  printf("nccl version %d\n%s\n", version, weftGetVersionString());
  /* The installed header and the installed library must be the same release. */
  if (version != NCCL_VERSION_CODE) {
    fprintf(stderr, "the library reports %d, the header says %d\n", version, NCCL_VERSION_CODE);
    return 1;
  }

  ncclComm_t comms[2];
  ncclResult_t r = ncclCommInitAll(comms, 2, NULL);
  if (r != ncclSuccess) {
    fprintf(stderr, "ncclCommInitAll: %s\n", ncclGetErrorString(r));
    return 1;
  }
  float in[2][4], out[2][4];
  for (int rank = 0; rank < 2; ++rank)
    for (int i = 0; i < 4; ++i) in[rank][i] = (float)(rank * 10 + i);
  memset(out, 0, sizeof(out));
  ncclGroupStart();
  for (int rank = 0; rank < 2; ++rank) ncclAllReduce(in[rank], out[rank], 4, ncclFloat32, ncclSum, comms[rank], NULL);
  r = ncclGroupEnd();
  if (r != ncclSuccess) {
    fprintf(stderr, "AllReduce: %s\n", ncclGetErrorString(r));
    return 1;
  }
  for (int rank = 0; rank < 2; ++rank)
    for (int i = 0; i < 4; ++i)
      if (out[rank][i] != (float)(10 + 2 * i)) {
        fprintf(stderr, "rank %d element %d: %g, expected %d\n", rank, i, out[rank][i], 10 + 2 * i);
        return 1;
      }
  for (int rank = 0; rank < 2; ++rank) ncclCommDestroy(comms[rank]);
  printf("allreduce ok\n");
  return 0;
}
