// nvcc compile check for Weft's single-source primitives: one grid-stride kernel per datatype x
// base op x variant, each the loop the host executor runs (reduceCopyRange), here as device code.
// The kernels are only compiled, never launched; taking their addresses below is what makes nvcc
// generate them.
#include <cstddef>
#include <cstdint>
#include <utility>

#include "math/lowp_types.h"
#include "math/port.h"
#include "math/reduce_kernel.h"
#include "math/reduce_ops.h"

#if defined(__CUDA_ARCH__) && !WEFT_DEVICE_CODE
#error "WEFT_DEVICE_CODE must be 1 in nvcc's device pass"
#endif
#if !defined(__CUDA_ARCH__) && WEFT_DEVICE_CODE
#error "WEFT_DEVICE_CODE must be 0 in nvcc's host pass"
#endif

namespace weft {
namespace cuda_check {

template <typename T, typename Op, unsigned kVariant>
__global__ void reduceCopyKernel(MemoryType<T>* dst0, MemoryType<T>* dst1, const MemoryType<T>* partial,
                                 const MemoryType<T>* local, T preScalar, int divisor, size_t count) {
  const size_t begin = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(blockDim.x) * gridDim.x;
  reduceCopyRange<T, Op, kVariant>(dst0, dst1, partial, local, preScalar, divisor, begin, count, stride);
}

// The variants each (type, op) is compiled with: the plain two-source reduction and its fused
// pre-multiply / post-divide forms, all parts at once, and the single-source forms.
constexpr unsigned kVariants[] = {
    kVarLocal | kVarPartial,
    kVarLocal | kVarPartial | kVarPre,
    kVarLocal | kVarPartial | kVarPost,
    kVarLocal | kVarPartial | kVarPre | kVarPost | kVarDst1,
    kVarLocal | kVarPre,
    kVarPartial | kVarPost | kVarDst1,
};
constexpr size_t kNumVariants = sizeof(kVariants) / sizeof(kVariants[0]);

template <typename T, typename Op, size_t... kIndex>
constexpr int addKernels(const void** out, std::index_sequence<kIndex...>) {
  ((out[kIndex] = reinterpret_cast<const void*>(&reduceCopyKernel<T, Op, kVariants[kIndex]>)), ...);
  return static_cast<int>(sizeof...(kIndex));
}

template <typename T>
int addTypeKernels(const void** out) {
  const auto seq = std::make_index_sequence<kNumVariants>();
  int n = 0;
  n += addKernels<T, FuncSum<T>>(out + n, seq);
  n += addKernels<T, FuncProd<T>>(out + n, seq);
  if constexpr (!kIsComplex<T>) {  // complex numbers have no order: no Max/Min
    n += addKernels<T, FuncMax<T>>(out + n, seq);
    n += addKernels<T, FuncMin<T>>(out + n, seq);
  }
  return n;
}

}  // namespace cuda_check
}  // namespace weft

// Addresses of every kernel, in ncclDataType_t order (12 types x 4 ops x the variants above), then
// the complex types (2 x Sum/Prod x the variants). Returns how many were written to `out` (which
// must have room for (12 * 4 + 2 * 2) * 6).
extern "C" int weftPrimitivesCheckKernels(const void** out) {
  using namespace weft;
  using namespace weft::cuda_check;
  int n = 0;
  n += addTypeKernels<int8_t>(out + n);
  n += addTypeKernels<uint8_t>(out + n);
  n += addTypeKernels<int32_t>(out + n);
  n += addTypeKernels<uint32_t>(out + n);
  n += addTypeKernels<int64_t>(out + n);
  n += addTypeKernels<uint64_t>(out + n);
  n += addTypeKernels<Float16>(out + n);
  n += addTypeKernels<float>(out + n);
  n += addTypeKernels<double>(out + n);
  n += addTypeKernels<BFloat16>(out + n);
  n += addTypeKernels<Float8E4M3>(out + n);
  n += addTypeKernels<Float8E5M2>(out + n);
  n += addTypeKernels<Complex<float>>(out + n);
  n += addTypeKernels<Complex<double>>(out + n);
  return n;
}
