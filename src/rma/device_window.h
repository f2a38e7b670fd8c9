// Windows of GPU communicators whose local ranks live in several processes: at registration each
// rank exports its window buffer as an IPC handle, when the buffer is ncclMemAlloc memory (the start
// of an allocation is what the vendors' IPC calls take), every other process maps it, and each rank
// writes where every rank's buffer is into a row of its device window table
// (comm/device_window_table.h). A rank whose DDA AllReduce input lies in such a window then
// publishes it by row and offset instead of staging it, and its peers' kernels read it in place
// (comm/shared_input.h). Ranks of one process read each other's buffers by address, and exchange
// nothing here.
//
// Never run on a GPU: the kernel-emulation tests run it with ranks as threads that have address
// spaces of their own and "IPC handles" that map the same memory a second time.
#pragma once
#include <cstddef>
#include <string>

#include "comm/comm.h"

namespace weft {

// Collective (every rank registers its windows in the same order). allocBase is the ncclMemAlloc
// allocation that holds the window's buffer, or null: such a buffer is not offered, and an input in
// it is staged. Failing to share is not an error (the window still works, staged); failing to
// exchange is.
ncclResult_t exchangeDeviceWindow(ncclWindow_vidmem* win, void* allocBase, std::string* why);
// Frees the window's row and closes its mappings. The caller's operations on it have finished.
void forgetDeviceWindow(ncclWindow_vidmem* win);

}  // namespace weft
