/* A program as a Weft user writes it, built against an installed Weft: it reports the versions and
 * runs a 2-rank AllReduce in one process (host mode), checking the sum. */
#include <stdio.h>
#include <string.h>

#include <nccl.h>
#include <weft/weft.h>

int main(void) {
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess) return 1;
  printf("nccl version %d\n%s\n", version, weftGetVersionString());

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
