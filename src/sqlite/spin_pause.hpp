// A bounded spin-wait. The first microseconds with the pause instruction (x86 `pause`, Arm `yield`: the
// core knows it is a spin loop, leaves it without a memory-order stall and gives the other hyperthread
// its resources); after that with sched_yield between the checks, so that a spinner never holds a core
// that the thread it waits for needs (the machine is shared: another process may hold the other core,
// and then the awaited thread is runnable on this one).
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <chrono>
#include <thread>

namespace respool::sqlite::detail {

inline void spin_pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__) || defined(__arm__)
    asm volatile("yield");
#endif
}

// Polls `done()` until it is true (returns true) or `spin_for` has passed (returns false).
template <class Done>
bool spin_until(Done done, std::chrono::nanoseconds spin_for) noexcept {
    using clock_type = std::chrono::steady_clock;
    if (spin_for <= std::chrono::nanoseconds::zero()) return done();
    const auto start = clock_type::now();
    const auto yield_after = start + std::min(spin_for, std::chrono::nanoseconds(2000));
    const auto until = start + spin_for;
    for (unsigned i = 1;; ++i) {
        if (done()) return true;
        if ((i & 15) != 0) {
            spin_pause();
            continue;
        }
        const auto now = clock_type::now();
        if (now >= until) return false;
        if (now >= yield_after) std::this_thread::yield();
    }
}

}  // namespace respool::sqlite::detail
