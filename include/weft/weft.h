/*
 * Weft's own extensions to the NCCL/RCCL C API. Every name here starts with "weft", and the
 * library exports these next to the nccl* functions, so a program can look them up with dlsym
 * to find out whether the libnccl.so.2 (or librccl.so.1) it loaded is Weft.
 *
 * Valid C (C99 and later) and C++. RCCL programs in host mode: include rccl/rccl.h first.
 */
#ifndef WEFT_WEFT_H_
#define WEFT_WEFT_H_

#include <stddef.h>

#include "../nccl.h"

#if defined(__GNUC__) || defined(__clang__)
#  pragma GCC visibility push(default)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The library's name, versions and backends, e.g. "Weft 0.1.0 (NCCL API 2.28.9, backends: host, cuda)".
 * Host mode is in every build; a CUDA or HIP build names its GPU backend too. A static string. */
const char* weftGetVersionString(void);

/* Weft's own version (not the NCCL API's) as MAJOR*10000 + MINOR*100 + PATCH: 0.1.0 gives 100. */
int weftGetVersionCode(void);

/* Sets *isHostMode to 1 when comm moves and reduces data on CPUs (host mode), 0 on a GPU. */
ncclResult_t weftCommIsHostMode(ncclComm_t comm, int* isHostMode);

/* Sets *name to comm's backend: "host", "cuda" or "hip". A static string; do not free it. */
ncclResult_t weftCommGetBackend(ncclComm_t comm, const char** name);

/* Writes a human-readable snapshot of where comm stands (its rank, state and counters, and, while
 * a call on comm waits, the operation's number, the step it waits on with its lane and channel,
 * and the peer it waits for) into buf, truncated to len bytes and always NUL-terminated when
 * len > 0. Safe to call from another thread while a call on comm is blocked: it is meant for
 * finding out which rank is stuck where. Host mode: a wait shows once the executor goes to sleep
 * (after WEFT_SPIN_US, 100 us by default); GPU communicators report no waits yet. */
ncclResult_t weftCommDumpState(ncclComm_t comm, char* buf, size_t len);

#ifdef __cplusplus
} /* extern "C" */
#endif

#if defined(__GNUC__) || defined(__clang__)
#  pragma GCC visibility pop
#endif

#endif /* WEFT_WEFT_H_ */
