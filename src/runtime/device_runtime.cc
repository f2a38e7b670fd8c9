#include <unistd.h>

#include <atomic>

#include "runtime/device_runtime.h"

namespace weft::dev {
namespace {
std::atomic<Runtime*> gReplacement{nullptr};
}  // namespace

Runtime& runtime() {
  Runtime* r = gReplacement.load(std::memory_order_acquire);
  return r != nullptr ? *r : builtRuntime();
}

int64_t Runtime::addressSpace() { return getpid(); }

Runtime* replaceRuntimeForTesting(Runtime* r) { return gReplacement.exchange(r, std::memory_order_acq_rel); }

}  // namespace weft::dev
