// The step-interpreter kernel's host-side entry (defined in step_kernel.cu, GPU builds only). The
// GPU executor puts it in every KernelLaunch, and the device runtime's launchExecutor calls it;
// nothing else launches kernels. Weak: a host-only build has no step_kernel.cu, and the address is
// then null (such a build never launches).
#pragma once
#include "runtime/device_runtime.h"

namespace weft::gpu {

// Enqueues the kernel on `stream` (a gpuStream_t). Returns the launch's error as the vendor
// runtime reports it (0 = success) and, on failure, its name and text in *what.
int launchStepKernel(const dev::KernelLaunch& l, void* stream, const char** what) __attribute__((weak));

}  // namespace weft::gpu
