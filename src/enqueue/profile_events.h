// The profiler plugin's events as the enqueue layer makes them (trace/profiler.h): a group API
// event per outermost group of a thread (started by its first operation call), an API event per
// call, and at run time a group event and an operation event per task. Each function returns at
// once when no plugin is loaded.
#pragma once
#include <vector>

#include "task/task.h"

namespace weft {

// An operation call was enqueued at group depth `depth` (0: outside any group).
void profileApiCall(Task& t, int depth);
// The outermost ncclGroupEnd (or the implicit group of a call outside one) starts running, and
// is done.
void profileGroupEndStarts();
void profileGroupApiDone();

// The group and operation events of one run of tasks, open while the run executes.
struct ProfiledRun {
  void* group = nullptr;
  std::vector<void*> ops;
};
void profileRunStarts(const std::vector<Task>& tasks, ProfiledRun* run);
void profileRunDone(ProfiledRun* run);

}  // namespace weft
