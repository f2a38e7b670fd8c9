// A device runtime for the kernel-emulation tests: one "GPU" whose memory is host memory and
// whose kernel launches run step_kernel.cu on CPU threads (kernel_emulation.h), synchronously.
// With it installed (dev::replaceRuntimeForTesting), a communicator takes the GPU path end to end:
// setupDevice, the P2P transport (same-process peers), descriptor building, counters in "device"
// memory, the kernel's protocol, error records. Only ranks as threads: there is no IPC.
#pragma once
#include "runtime/device_runtime.h"

namespace weft::testing {

dev::Runtime& emulatedRuntime();

// While on, streams of the calling thread report that they are being captured into a graph, so a
// launch takes the captured path (launches still run at once: there are no graphs to replay).
void setEmulatedCapture(bool on);

// Thread blocks of the calling thread's last kernel launch.
int lastLaunchBlocks();

}  // namespace weft::testing
