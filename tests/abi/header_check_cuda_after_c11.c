/* The C version of header_check_cuda_after.cc (C11 allows the repeated, identical typedef of
 * cudaStream_t). */
#define WEFT_NO_CUDA_HEADERS 1
#include <nccl.h>
#include <cuda_runtime.h>

int weft_header_check_cuda_after_c(ncclComm_t comm);
int weft_header_check_cuda_after_c(ncclComm_t comm) {
  cudaStream_t stream = NULL;
  if (cudaStreamCreate(&stream) != cudaSuccess) return -1;
  return (int)ncclAllReduce(NULL, NULL, 0, ncclFloat, ncclSum, comm, stream);
}
