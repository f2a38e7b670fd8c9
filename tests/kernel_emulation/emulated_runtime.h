// A device runtime for the kernel-emulation tests: one "GPU" whose memory is host memory and
// whose kernel launches run step_kernel.cu on CPU threads (kernel_emulation.h), synchronously.
// With it installed (dev::replaceRuntimeForTesting), a communicator takes the GPU path end to end:
// setupDevice, the P2P transport (same-process peers), descriptor building, counters in "device"
// memory, the kernel's protocol, error records. Only ranks as threads: there is no IPC.
#pragma once
#include "runtime/device_runtime.h"

namespace weft::testing {

dev::Runtime& emulatedRuntime();

}  // namespace weft::testing
