// The vendor runtime as the GPU tests and benchmarks see it: src/runtime/gpu_api.h (one
// spelling for CUDA and HIP, picked by WEFT_GPU_CUDA / WEFT_GPU_HIP) plus the few names it does
// not have yet: graph capture and replay, event timing. They live here, not in gpu_api.h, so the
// library's header stays what the library uses; fold them in when the library needs them too.
#pragma once

#include "gpu_api.h"

#if defined(WEFT_GPU_HIP)
using gpuGraph_t = hipGraph_t;
using gpuGraphExec_t = hipGraphExec_t;
#define gpuStreamBeginCapture hipStreamBeginCapture
#define gpuStreamEndCapture hipStreamEndCapture
#define gpuStreamCaptureModeGlobal hipStreamCaptureModeGlobal
#define gpuStreamCaptureModeThreadLocal hipStreamCaptureModeThreadLocal
#define gpuGraphInstantiateWithFlags hipGraphInstantiateWithFlags
#define gpuGraphLaunch hipGraphLaunch
#define gpuGraphDestroy hipGraphDestroy
#define gpuGraphExecDestroy hipGraphExecDestroy
#define gpuEventDefault hipEventDefault
#define gpuEventElapsedTime hipEventElapsedTime
#else
using gpuGraph_t = cudaGraph_t;
using gpuGraphExec_t = cudaGraphExec_t;
#define gpuStreamBeginCapture cudaStreamBeginCapture
#define gpuStreamEndCapture cudaStreamEndCapture
#define gpuStreamCaptureModeGlobal cudaStreamCaptureModeGlobal
#define gpuStreamCaptureModeThreadLocal cudaStreamCaptureModeThreadLocal
#define gpuGraphInstantiateWithFlags cudaGraphInstantiateWithFlags
#define gpuGraphLaunch cudaGraphLaunch
#define gpuGraphDestroy cudaGraphDestroy
#define gpuGraphExecDestroy cudaGraphExecDestroy
#define gpuEventDefault cudaEventDefault
#define gpuEventElapsedTime cudaEventElapsedTime
#endif

// "cudaErrorNoDevice (no CUDA-capable device is detected)": what a skip or failure message shows.
#include <string>
inline std::string gpuErrorText(gpuError_t e) {
  return std::string(gpuGetErrorName(e)) + " (" + gpuGetErrorString(e) + ")";
}
