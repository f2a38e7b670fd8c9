# The vendor runtime for the GPU tests and benchmarks (tests/gpu, benchmarks/gpu): an INTERFACE
# target that brings the runtime library, the WEFT_GPU_CUDA / WEFT_GPU_HIP define gpu_api.h keys
# on, and the include folders of gpu_api.h and gpu_test_api.h. Their sources are plain C++ built by
# the host compiler (no device code), so only the runtime's headers and library are needed.
# Reuses the targets the library's own GPU build found, and finds them itself otherwise.
if(TARGET weft_gpu_test_runtime)
  return()
endif()
add_library(weft_gpu_test_runtime INTERFACE)
if(WEFT_GPU STREQUAL "cuda")
  if(NOT TARGET CUDA::cudart_static)
    find_package(CUDAToolkit REQUIRED)
  endif()
  target_link_libraries(weft_gpu_test_runtime INTERFACE CUDA::cudart_static)
  target_compile_definitions(weft_gpu_test_runtime INTERFACE WEFT_GPU_CUDA=1)
elseif(WEFT_GPU STREQUAL "hip")
  if(NOT TARGET hip::host)
    find_package(hip REQUIRED)  # hip::host also defines __HIP_PLATFORM_AMD__ (nccl.h: hipStream_t)
  endif()
  target_link_libraries(weft_gpu_test_runtime INTERFACE hip::host)
  target_compile_definitions(weft_gpu_test_runtime INTERFACE WEFT_GPU_HIP=1)
else()
  message(FATAL_ERROR "gpu_runtime.cmake: WEFT_GPU is '${WEFT_GPU}'; include it only for cuda or hip")
endif()
# (Paths from this file, so a standalone configure that includes it finds them too.)
target_include_directories(weft_gpu_test_runtime INTERFACE
  ${CMAKE_CURRENT_LIST_DIR}/../../src/runtime ${CMAKE_CURRENT_LIST_DIR})
