// Portability macros for Weft's single-source primitives. The same headers (lowp_types.h,
// reduce_ops.h, reduce_kernel.h) are compiled by g++/clang++ for the host executor, by nvcc for
// NVIDIA GPUs and by hipcc for AMD GPUs, so every function they define is marked with these.
#pragma once

// Functions callable from both host and device code. Under plain C++ compilers the CUDA/HIP
// qualifiers do not exist, so the macro expands to nothing there.
#if defined(__CUDACC__) || defined(__HIPCC__)
#define WEFT_HOST_DEVICE __host__ __device__
#else
#define WEFT_HOST_DEVICE
#endif

// 1 while the compiler is generating device code (nvcc's device pass, hipcc's device pass), 0
// for every host pass, including the host half of a .cu/.hip file. Always defined, so that it
// can be tested with #if under -Wundef.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define WEFT_DEVICE_CODE 1
#else
#define WEFT_DEVICE_CODE 0
#endif

// The element operations are tiny and sit inside the hot loops; they must inline into the loop
// body for the host vectoriser and for GPU register allocation alike. (hipcc is clang, which takes
// the GNU attribute directly; __forceinline__ there would depend on the HIP headers being in.)
#if defined(__CUDACC__) && !defined(__HIPCC__)
#define WEFT_INLINE __forceinline__
#else
#define WEFT_INLINE inline __attribute__((always_inline))
#endif
