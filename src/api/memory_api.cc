// Memory, registration, window and reduction-op entry points. With a usable GPU, ncclMemAlloc
// returns device memory of the current GPU and registration checks that the buffer is memory the
// communicator's GPU can use. In host mode ncclMemAlloc returns page-aligned host memory that the
// host's other processes can map (rma/window.h), so that peers read a window
// registered over it in place; ordinary memory where that cannot be had. Either way registration records the buffer, so
// that a matching deregistration can be checked, and so that DDA AllReduce can let peers read a registered input in
// place (comm/shared_input.h).
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "api/api_support.h"
#include "base/log.h"
#include "enqueue/group.h"
#include "rma/device_window.h"
#include "rma/window.h"
#include "runtime/device_runtime.h"

using namespace weft;

namespace {
std::mutex gAllocMutex;
struct Allocation {
  size_t size;
  bool device;  // from the GPU runtime, else host memory
};
std::unordered_map<void*, Allocation>& allocations() {
  static std::unordered_map<void*, Allocation> m;
  return m;
}
bool gpuMemory() { return dev::runtime().deviceCount() > 0; }

// The start of the ncclMemAlloc device allocation that holds [p, p + bytes), or null.
void* deviceAllocationHolding(const void* p, size_t bytes) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(gAllocMutex);
  for (const auto& [base, alloc] : allocations()) {
    const auto b = reinterpret_cast<uintptr_t>(base);
    if (alloc.device && a >= b && a - b <= alloc.size && bytes <= alloc.size - (a - b)) return base;
  }
  return nullptr;
}

// Frees a window handle the communicator owns.
void dropWindow(ncclComm* comm, const ncclWindow_vidmem* win) {
  std::lock_guard<std::mutex> lock(comm->regMutex);
  auto& all = comm->windowHandles;
  const size_t before = all.size();
  all.erase(std::remove_if(all.begin(), all.end(), [win](const auto& w) { return w.get() == win; }), all.end());
  comm->registeredBuffers.fetch_sub(static_cast<int>(before - all.size()));
}
}  // namespace

WEFT_ALIAS(ncclResult_t, ncclMemAlloc, void**, size_t)
WEFT_API ncclResult_t pncclMemAlloc(void** ptr, size_t size) {
  return apiGuard("ncclMemAlloc", [&] {
    if (ptr == nullptr) return setError(nullptr, ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
    *ptr = nullptr;
    if (size == 0) return setError(nullptr, ncclInvalidArgument, "ncclMemAlloc: size is 0");
    void* p = nullptr;
    const bool device = gpuMemory();
    if (device) {
      if (dev::runtime().deviceAlloc(&p, size) != ncclSuccess)
        return setError(nullptr, ncclUnhandledCudaError, "ncclMemAlloc: cannot allocate %zu bytes of GPU memory", size);
    } else {
      std::string why;
      p = allocShareableHostMemory(size, &why);
      if (p == nullptr) {
        WEFT_INFO(kLogShm, "ncclMemAlloc: %zu bytes of ordinary memory, which other processes cannot map: %s", size,
                  why.c_str());
        if (posix_memalign(&p, 4096, size) != 0)
          return setError(nullptr, ncclSystemError, "ncclMemAlloc: cannot allocate %zu bytes of host memory", size);
      }
    }
    std::lock_guard<std::mutex> lock(gAllocMutex);
    allocations()[p] = Allocation{size, device};
    *ptr = p;
    return ncclSuccess;
  });
}

WEFT_ALIAS(ncclResult_t, ncclMemFree, void*)
WEFT_API ncclResult_t pncclMemFree(void* ptr) {
  return apiGuard("ncclMemFree", [&] {
    if (ptr == nullptr) return ncclSuccess;
    std::lock_guard<std::mutex> lock(gAllocMutex);
    auto it = allocations().find(ptr);
    if (it == allocations().end())
      return setError(nullptr, ncclInvalidArgument, "ncclMemFree: %p was not allocated by ncclMemAlloc", ptr);
    const bool device = it->second.device;
    allocations().erase(it);
    if (device) return dev::runtime().deviceFree(ptr);
    if (!freeShareableHostMemory(ptr)) free(ptr);
    return ncclSuccess;
  });
}

WEFT_ALIAS(ncclResult_t, ncclCommRegister, const ncclComm_t, void*, size_t, void**)
WEFT_API ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return apiGuard("ncclCommRegister", [&] {
    const char* fn = "ncclCommRegister";
    WEFT_CHECK(checkCommHandle(fn, comm));
    if (handle == nullptr) return setError(comm, ncclInvalidArgument, "%s: handle is NULL", fn);
    if (buff == nullptr && size > 0) return setError(comm, ncclInvalidArgument, "%s: buff is NULL", fn);
    // A GPU communicator takes only memory its GPU can use, as its collectives do.
    WEFT_CHECK(checkBuffer(fn, comm, buff, size, "buff"));
    // The record lets deregistration catch a bad handle, and DDA look inputs up (comm/shared_input.h).
    auto rec = std::make_unique<Registration>(Registration{buff, size});
    std::lock_guard<std::mutex> lock(comm->regMutex);
    *handle = rec.get();
    comm->registrations.push_back(std::move(rec));
    comm->registeredBuffers.fetch_add(1);
    return ncclSuccess;
  });
}

WEFT_ALIAS(ncclResult_t, ncclCommDeregister, const ncclComm_t, void*)
WEFT_API ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle) {
  return apiGuard("ncclCommDeregister", [&] {
    const char* fn = "ncclCommDeregister";
    WEFT_CHECK(checkCommHandle(fn, comm));
    if (handle == nullptr) return setError(comm, ncclInvalidArgument, "%s: handle is NULL", fn);
    std::lock_guard<std::mutex> lock(comm->regMutex);
    for (auto it = comm->registrations.begin(); it != comm->registrations.end(); ++it)
      if (it->get() == handle) {
        comm->registrations.erase(it);
        comm->registeredBuffers.fetch_sub(1);
        return ncclSuccess;
      }
    return setError(comm, ncclInvalidArgument, "%s: handle %p is not registered on this communicator", fn, handle);
  });
}

WEFT_ALIAS(ncclResult_t, ncclCommWindowRegister, ncclComm_t, void*, size_t, ncclWindow_t*, int)
WEFT_API ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                              int winFlags) {
  return apiGuard("ncclCommWindowRegister", [&] {
    const char* fn = "ncclCommWindowRegister";
    WEFT_CHECK(checkCommUsable(fn, comm));
    if (win == nullptr) return setError(comm, ncclInvalidArgument, "%s: win is NULL", fn);
    *win = nullptr;
    if (buff == nullptr || size == 0) return setError(comm, ncclInvalidArgument, "%s: empty buffer", fn);
    // GIN_ONLY and CFT_COUNTED narrow which GPU networking paths a window is registered for; host
    // mode has neither path, and its puts work on every window.
    constexpr int kKnownFlags = NCCL_WIN_COLL_SYMMETRIC | NCCL_WIN_STRICT_ORDERING | NCCL_WIN_GIN_ONLY |
                                NCCL_WIN_CFT_COUNTED;
    if ((winFlags & ~kKnownFlags) != 0)
      return setError(comm, ncclInvalidArgument, "%s: unknown winFlags 0x%x", fn, winFlags);
    WEFT_CHECK(checkBuffer(fn, comm, buff, size, "buff"));
    ncclWindow_vidmem* w = nullptr;
    {
      // The communicator owns its windows: those never deregistered go with it.
      std::lock_guard<std::mutex> lock(comm->regMutex);
      comm->windowHandles.push_back(std::make_unique<ncclWindow_vidmem>(
          ncclWindow_vidmem{comm, buff, size, winFlags, 0, {}, {}, {}, false, -1, {}}));
      w = comm->windowHandles.back().get();
      comm->registeredBuffers.fetch_add(1);
    }
    *win = w;
    // Collective: the ranks tell each other where their buffers are (src/rma/window.h; on GPUs
    // src/rma/device_window.h, for ranks in several processes). Inside a group it completes at
    // ncclGroupEnd, beside the other ranks' registrations.
    void* allocBase = comm->hostMode ? nullptr : deviceAllocationHolding(buff, size);
    auto exchange = [comm, w, fn, allocBase] {
      std::string why;
      const ncclResult_t r = comm->hostMode ? exchangeWindow(w, &why) : exchangeDeviceWindow(w, allocBase, &why);
      return r == ncclSuccess ? r : setError(comm, r, "%s: %s", fn, why.c_str());
    };
    if (inGroup()) {
      groupDefer(exchange);
      return ncclSuccess;
    }
    const ncclResult_t r = exchange();
    if (r != ncclSuccess) {
      dropWindow(comm, w);
      *win = nullptr;
    }
    return r;
  });
}

WEFT_ALIAS(ncclResult_t, ncclCommWindowDeregister, ncclComm_t, ncclWindow_t)
WEFT_API ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return apiGuard("ncclCommWindowDeregister", [&] {
    const char* fn = "ncclCommWindowDeregister";
    WEFT_CHECK(checkCommHandle(fn, comm));
    WEFT_CHECK(checkWindow(fn, comm, win, "win"));
    if (win->id != 0) forgetWindow(win);  // no put arriving over the network writes into it any more
    if (!comm->hostMode) forgetDeviceWindow(win);
    dropWindow(comm, win);
    return ncclSuccess;
  });
}

WEFT_ALIAS(ncclResult_t, ncclWinGetUserPtr, ncclComm_t, ncclWindow_t, void**)
WEFT_API ncclResult_t pncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr) {
  return apiGuard("ncclWinGetUserPtr", [&] {
    const char* fn = "ncclWinGetUserPtr";
    WEFT_CHECK(checkCommHandle(fn, comm));
    if (outUserPtr == nullptr) return setError(comm, ncclInvalidArgument, "%s: outUserPtr is NULL", fn);
    WEFT_CHECK(checkWindow(fn, comm, win, "win"));
    *outUserPtr = win->buff;
    return ncclSuccess;
  });
}

WEFT_ALIAS(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t*, void*, ncclDataType_t, ncclScalarResidence_t,
           ncclComm_t)
WEFT_API ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                                ncclScalarResidence_t residence, ncclComm_t comm) {
  keepEnumArgInRange(&datatype);
  return apiGuard("ncclRedOpCreatePreMulSum", [&] {
    const char* fn = "ncclRedOpCreatePreMulSum";
    WEFT_CHECK(checkCommHandle(fn, comm));
    WEFT_CHECK(checkDtype(fn, comm, datatype));
    if (op == nullptr || scalar == nullptr) return setError(comm, ncclInvalidArgument, "%s: op or scalar is NULL", fn);
    const int32_t residenceBits = enumArgBits(residence);  // read as the enum only once known valid
    if (residenceBits != ncclScalarDevice && residenceBits != ncclScalarHostImmediate)
      return setError(comm, ncclInvalidArgument, "%s: invalid scalar residence %d", fn,
                      static_cast<int>(residenceBits));
    UserRedOp u;
    u.dtype = datatype;
    u.residence = residence;
    if (residence == ncclScalarHostImmediate) {
      // The value is captured now; a complex scalar is two words' worth of parts.
      uint64_t words[2] = {0, 0};
      memcpy(words, scalar, dataTypeSize(datatype));
      u.scalarBits = words[0];
      u.scalarBitsHi = words[1];
    } else {
      u.scalarPtr = scalar;  // read each time an operation runs (host memory in host mode)
    }
    *op = comm->redOps.create(u);
    return ncclSuccess;
  });
}

WEFT_ALIAS(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t, ncclComm_t)
WEFT_API ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  keepEnumArgInRange(&op);
  return apiGuard("ncclRedOpDestroy", [&] {
    const char* fn = "ncclRedOpDestroy";
    WEFT_CHECK(checkCommHandle(fn, comm));
    if (static_cast<int>(op) >= 0 && op < ncclNumOps)
      return setError(comm, ncclInvalidArgument, "%s: op %d is built in and cannot be destroyed", fn,
                      static_cast<int>(op));
    if (!comm->redOps.destroy(op))
      return setError(comm, ncclInvalidArgument, "%s: op %d was not created on this communicator", fn,
                      static_cast<int>(op));
    return ncclSuccess;
  });
}
