// Tells ThreadSanitizer of a happens-before it cannot see itself. Ranks that are threads of one
// process meet at counters in shared memory that each maps at its own address, so where they then
// touch the same user memory (a peer's input read in place), TSan sees no synchronization between
// them. The real ordering comes from those counters; these calls only describe it. Nothing in
// other builds.
#pragma once

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace weft {

#if defined(__SANITIZE_THREAD__)
inline void tsanRelease(const void* key) { __tsan_release(const_cast<void*>(key)); }
inline void tsanAcquire(const void* key) { __tsan_acquire(const_cast<void*>(key)); }
#else
inline void tsanRelease(const void*) {}
inline void tsanAcquire(const void*) {}
#endif

}  // namespace weft
