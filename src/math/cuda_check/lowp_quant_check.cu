// nvcc compile check for the low-precision (FP8 e4m3 + block scale) primitives of lowp_quant.h:
// the quantize and dequantize loops the host executor runs for the low-precision collectives, here
// as grid-stride device kernels (one thread block row per FP8 block). Compiled, never launched.
#include <cstddef>

#include "math/lowp_quant.h"

namespace weft {
namespace cuda_check {

template <typename T>
__global__ void lowpQuantizeKernel(const MemoryType<T>* x, size_t n, LowpBlock* out) {
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  lowpQuantize<T>(x, n, out, first, static_cast<size_t>(blockDim.x) * gridDim.x);
}

template <typename T>
__global__ void lowpDequantizeKernel(const LowpBlock* in, size_t n, MemoryType<T>* out) {
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  lowpDequantize<T>(in, n, out, first, static_cast<size_t>(blockDim.x) * gridDim.x);
}

template <typename T>
int addLowpKernels(const void** out) {
  out[0] = reinterpret_cast<const void*>(&lowpQuantizeKernel<T>);
  out[1] = reinterpret_cast<const void*>(&lowpDequantizeKernel<T>);
  return 2;
}

}  // namespace cuda_check
}  // namespace weft

// Addresses of the quantize/dequantize kernels for float32, bfloat16 and float16 (6 in all).
extern "C" int weftLowpQuantCheckKernels(const void** out) {
  using namespace weft;
  using namespace weft::cuda_check;
  int n = 0;
  n += addLowpKernels<float>(out + n);
  n += addLowpKernels<BFloat16>(out + n);
  n += addLowpKernels<Float16>(out + n);
  return n;
}
