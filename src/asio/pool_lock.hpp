// The pool's lock in thread_safe mode.
#pragma once

#include <mutex>

namespace respool::detail {

// The pool's lock in thread_safe mode: a plain std::mutex (on glibc a futex mutex that does not spin).
// The critical sections are a few dozen instructions, so what a take or release costs is the cache
// lines that move between cores. A contender that sleeps in the kernel leaves the holder a run of
// takes and releases on lines that stay in its cache; one that spins (glibc's adaptive mutex, tried
// here before) pulls the lock's line away at every step. Measured side by side on two cores, the
// adaptive mutex made the shared pool 2-6x slower with 2 threads and 2.7x slower with 8 (docs/03-design.md).
using pool_lock = std::mutex;

}  // namespace respool::detail
