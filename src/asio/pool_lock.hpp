// The pool's lock in thread_safe mode.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

namespace respool::detail {

// The pool's lock in thread_safe mode: a three-state futex lock (free, held, held with sleepers) whose
// contender first gives its CPU away a few times (sched_yield), taking the lock at once when it finds
// it free, and sleeps only after that.
//
// Why yield, not spin and not sleep at once: the critical sections are a few dozen instructions, so a
// contender that comes back a moment later almost always finds the lock free. Sleeping at once (a
// plain std::mutex) pays a futex wait, a wake-up system call from the holder and two context switches
// for a wait that would have lasted nanoseconds. Spinning (glibc's adaptive mutex) pulls the lock's
// cache line away from the holder at every step, and with more threads than cores it burns the time
// slice that the holder, preempted, needs to finish. A yield does neither: the contender's core runs
// another thread (the preempted holder, if it is there) or comes straight back, one system call
// later, by which time the section is over. Measured side by side on two cores (docs/benchmarks.md):
// a bare ring under this lock does about 4-5x the take + return cycles of the same ring under
// std::mutex with 2 and with 8 threads, though less than std::mutex in phases where the machine's two
// vCPUs seem to share one core. The sleep after `yields` rounds bounds what a contender burns when a
// holder is stalled for long; the standard library's atomic wait may itself spin and yield a little
// before it enters the futex (libstdc++ 12 does).
class pool_lock {
public:
    void lock() noexcept {
        std::uint32_t s = free;
        if (!state_.compare_exchange_strong(s, held, std::memory_order_acquire, std::memory_order_relaxed))
            lock_contended();
    }
    // Once the exchange has freed the lock, another thread may take it, close the pool and free it:
    // the wake-up after it uses the state's address only (a futex wake), never the object's contents.
    void unlock() noexcept {
        if (state_.exchange(free, std::memory_order_release) == sleepers) state_.notify_one();
    }
    // Held, and the next unlock wakes a sleeper: a contender is asleep, or was, and took the lock
    // without anyone else marking it since (the state stays "with sleepers" until then).
    [[nodiscard]] bool has_sleepers() const noexcept {
        return state_.load(std::memory_order_relaxed) == sleepers;
    }

private:
    static constexpr std::uint32_t free = 0, held = 1, sleepers = 2;
    static constexpr unsigned yields = 16;

    [[gnu::noinline]] void lock_contended() noexcept {
        for (unsigned i = 0; i < yields; ++i) {
            std::this_thread::yield();
            std::uint32_t s = free;
            if (state_.load(std::memory_order_relaxed) == free &&
                state_.compare_exchange_strong(s, held, std::memory_order_acquire, std::memory_order_relaxed))
                return;
        }
        // Held with sleepers from here on, conservatively: whoever unlocks wakes one.
        while (state_.exchange(sleepers, std::memory_order_acquire) != free)
            state_.wait(sleepers, std::memory_order_relaxed);
    }

    std::atomic<std::uint32_t> state_{free};
};

}  // namespace respool::detail
