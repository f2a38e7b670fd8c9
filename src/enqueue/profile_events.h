// The profiler plugin's events as the enqueue layer makes them (trace/profiler.h): a group API
// event per outermost group of a thread (started by its first operation call), an API event per
// call, and at run time a group event and an operation event per task, with what each operation's
// program moves over network links for the proxy's events. Each function returns at once when no
// plugin is loaded.
#pragma once
#include <vector>

#include "program/program.h"
#include "task/task.h"

namespace weft {

// An operation call was enqueued at group depth `depth` (0: outside any group).
void profileApiCall(Task& t, int depth);
// The outermost ncclGroupEnd (or the implicit group of a call outside one) starts running, and
// is done.
void profileGroupEndStarts();
void profileGroupApiDone();

// The group event of one run of tasks, open while the run executes; each task's operation event
// is its Task::profilerOp (the parent of its kernel events on a GPU). An operation whose network
// traffic the proxy profiles is handed to its communicator's ProxyProfile
// (transports/net/proxy_profile.h), which stops its event once the proxy is done too.
struct ProfiledRun {
  void* group = nullptr;
  std::vector<uint64_t> proxyKeys;  // per task of a profiled run: its key there, or kNotProxied
  static constexpr uint64_t kNotProxied = ~uint64_t(0);
};
void profileRunStarts(std::vector<Task>& tasks, const Program& prog, ProfiledRun* run);
void profileRunDone(const std::vector<Task>& tasks, ProfiledRun* run);

}  // namespace weft
