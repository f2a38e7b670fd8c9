// Profiler plugins (NCCL_PROFILER_PLUGIN, ABI v1 to v7: profiler_abi.h). The plugin is loaded on
// the first communicator's init and given a context per communicator; the enqueue layer
// (enqueue/group.cc) starts and stops the events Weft has: the group, collective and
// point-to-point API events, the group, and each collective and point-to-point operation; the
// network proxy (transports/net/proxy_profile.h) starts the ProxyOp, ProxyStep and NetPlugin
// events under them.
//
// Without a plugin every hook costs one relaxed load and a branch (active()).
#pragma once
#include <atomic>
#include <cstdint>

#include "trace/profiler_abi.h"

namespace weft::profiler {

namespace detail {
extern std::atomic<bool> gLoaded;
}  // namespace detail

// A plugin is loaded (some communicator may have a context).
inline bool active() { return detail::gLoaded.load(std::memory_order_relaxed); }

// The plugin's context for a new communicator (loading the plugin on the first call), or null
// when there is no plugin or its init failed (reported; the communicator goes on without one).
void* open(uint64_t commHash, const char* commName, int nNodes, int nranks, int rank);
// Finalizes a context open() returned (null is ignored).
void close(void* context);

// The ABI version of the loaded plugin (1..7), 0 when none.
int version();

// Starts an event of d->type in `context`; returns its handle, or null when the plugin does not
// want it (the mask, its version, or the plugin's own choice). d must be zero-filled but for the
// members of its type.
void* start(void* context, ncclProfilerEventDescr_t* d);
void stop(void* handle);
void record(void* handle, ncclProfilerEventState_t state, const ncclProfilerEventStateArgs_t* args = nullptr);
// Whether events of `type` would be started now (the mask, counting the events below it, and the
// plugin's version); false without a plugin.
bool wants(uint64_t type);

}  // namespace weft::profiler
