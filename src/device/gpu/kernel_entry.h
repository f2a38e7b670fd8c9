// The step-interpreter kernel's host-side entry (defined in step_kernel.cu, GPU builds only). The
// device runtime's launchExecutor calls it; nothing else launches kernels.
#pragma once
#include "device/runtime/device_runtime.h"

namespace weft::gpu {

// Enqueues the kernel on `stream` (a gpuStream_t). Returns the launch's error as the vendor
// runtime reports it (0 = success) and, on failure, its name and text in *what.
int launchStepKernel(const dev::KernelLaunch& l, void* stream, const char** what);

}  // namespace weft::gpu
