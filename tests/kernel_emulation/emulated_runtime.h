// A device runtime for the kernel-emulation tests: one "GPU" whose memory is host memory and
// whose kernel launches run step_kernel.cu on CPU threads (kernel_emulation.h), synchronously.
// With it installed (dev::replaceRuntimeForTesting), a communicator takes the GPU path end to end:
// setupDevice, the P2P transport, descriptor building, counters in "device" memory, the kernel's
// protocol, error records. Ranks are threads; a rank thread may take an address space of its own
// (setEmulatedAddressSpace), and then its device memory is a memory file that an "IPC handle" maps
// again at another address, so the paths between GPU ranks of different processes run too.
#pragma once
#include <cstddef>
#include <cstdint>

#include "runtime/device_runtime.h"

namespace weft::testing {

dev::Runtime& emulatedRuntime();

// While on, streams of the calling thread report that they are being captured into a graph, so a
// launch takes the captured path (launches still run at once: there are no graphs to replay).
void setEmulatedCapture(bool on);

// Thread blocks of the calling thread's last kernel launch.
int lastLaunchBlocks();

// The calling thread's address space (dev::Runtime::addressSpace) from now on: ranks of different
// ones share device memory through IPC handles only. 0 returns to the process's.
void setEmulatedAddressSpace(int64_t id);

// IPC mappings open now (ipcOpen without its ipcClose), in every address space.
size_t emulatedIpcMappings();

}  // namespace weft::testing
