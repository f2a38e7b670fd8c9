// CUDA's runtime header first, then nccl.h: the collectives take CUDA's own cudaStream_t.
#include <cuda_runtime.h>
#include <nccl.h>

int weftHeaderCheckCudaFirst(ncclComm_t comm);
int weftHeaderCheckCudaFirst(ncclComm_t comm) {
  cudaStream_t stream = nullptr;
  if (cudaStreamCreate(&stream) != cudaSuccess) return -1;
  return static_cast<int>(ncclAllReduce(nullptr, nullptr, 0, ncclFloat, ncclSum, comm, stream));
}
