// A bounded spin-wait with the pause instruction (x86 `pause`, Arm `yield`): the core knows it is a
// spin loop, leaves it without a memory-order stall and gives the other hyperthread its resources.
// Short on purpose (offload_settings, batch_settings: 25 µs, about a read batch's job or the loop's
// delivery of its results): on a quiet machine the awaited thread answers within that; on a loaded one (more
// runnable threads than cores) it may not be running at all, and a longer spin, or sched_yield between the
// checks (measured: a hop of 200 µs to 1.4 ms at load 5 on 2 cores, the yield handing the core to another
// process for a whole time slice), only takes the core from it. Past the bound the spinner sleeps.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <chrono>

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
    const auto until = clock_type::now() + spin_for;
    for (unsigned i = 1;; ++i) {
        if (done()) return true;
        spin_pause();
        if ((i & 15) == 0 && clock_type::now() >= until) return false;
    }
}

}  // namespace respool::sqlite::detail
