// nccl.h with CUDA's headers kept out (its own opaque cudaStream_t), then CUDA's runtime header:
// the two declarations of cudaStream_t must agree.
#define WEFT_NO_CUDA_HEADERS 1
#include <nccl.h>
#include <cuda_runtime.h>

int weftHeaderCheckCudaAfter(ncclComm_t comm);
int weftHeaderCheckCudaAfter(ncclComm_t comm) {
  cudaStream_t stream = nullptr;
  if (cudaStreamCreate(&stream) != cudaSuccess) return -1;
  return static_cast<int>(ncclAllReduce(nullptr, nullptr, 0, ncclFloat, ncclSum, comm, stream));
}
