// nccl.h alone with CUDA on the include path: like NCCL's header, it brings in the CUDA runtime
// (and half/bfloat16 types), so NCCL programs that rely on that still compile.
#include <nccl.h>

int weftHeaderCheckCudaImplicit(ncclComm_t comm);
int weftHeaderCheckCudaImplicit(ncclComm_t comm) {
  cudaStream_t stream = nullptr;
  if (cudaStreamCreate(&stream) != cudaSuccess) return -1;
  __half h;
  (void)h;
  return static_cast<int>(ncclAllReduce(nullptr, nullptr, 0, ncclHalf, ncclSum, comm, stream));
}
