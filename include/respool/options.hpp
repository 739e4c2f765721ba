// Pool options (docs/02-operations.md, Options). validate() rejects bad values with std::invalid_argument
// whose message names the option and the rule; pool constructors call it before creating anything.
#pragma once

#include <respool/clock.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>

namespace respool {

using duration = std::chrono::steady_clock::duration;

enum class idle_order {
    fifo,  // least recently released first: spreads use over all resources (default)
    lifo,  // most recently released first: reuses the warmest, lets the rest age out
};

struct pool_options {
    std::size_t min = 0;                        // created at construction; the floor kept after losses
    std::size_t max = 10;                       // cap on total resources, >= 1
    duration healthcheck_interval{};            // 0 = off; checks idle resources only
    std::optional<duration> acquire_timeout{};  // default deadline of async_acquire; none = forever
    std::size_t max_waiters = 0;                // 0 = unbounded; beyond it acquire fails with exhausted
    std::size_t max_concurrent_creations = 2;   // factory calls running at once, >= 1
    idle_order order = idle_order::fifo;
    bool thread_safe = false;  // allow acquire/release from any thread
    // With thread_safe: a thread that releases while nobody waits keeps the resource in a slot of its
    // own, and its next acquire takes it back without the pool's lock (HikariCP's ConcurrentBag idea).
    // Idle order becomes "this thread's last resource first"; waiters stay FIFO (a parking waiter
    // drains every slot), and other threads steal from the slots before they wait. Bypassed while a
    // circuit strategy or observer is set; see docs/03-design.md.
    bool thread_affinity = false;

    // Lifecycle (docs/01-concepts.md, Lifecycle). Off in the generic pool; the database layer turns them on
    // (300 s, 30 s). `min` is the warm baseline (min_idle): re-created in the background after losses.
    duration idle_ttl{};      // evict resources idle longer, never below min; checked every idle_ttl/4
    duration max_lifetime{};  // retire older resources (minus up to 2.5 % jitter): when idle or on release
    duration acquire_ttl{};   // a lease held longer is reported once (leak_suspected) and again on return
    bool health_check_on_borrow =
        false;  // run the healthcheck hook on a resource idle longer than validate_after
    duration validate_after = std::chrono::seconds(1);
    // A failed creation holds further creations back for initial * 2^(n-1) (capped, +-20 % jitter) while
    // demand remains; the failure itself reaches the oldest waiter at once. 0 = retry at once.
    duration create_retry_initial = std::chrono::milliseconds(10);
    duration create_retry_max = std::chrono::seconds(10);
    // Bounds of the coroutine hooks. A hook past its bound, or running when close() is
    // called, gets a terminal cancellation through its cancellation slot and counts as a failure of that
    // hook at once: a creation frees its slot (errc::hook_timeout reaches the waiter it was for and the
    // circuit strategy), a check or reset destroys its resource, and the place is free again. A hook
    // that ignores the cancellation keeps only its own resource until it returns; that resource is then
    // destroyed. Synchronous hooks cannot be interrupted and are not bounded. duration::max() = no bound.
    duration create_timeout = std::chrono::seconds(20);  // factory (connect, authenticate)
    duration check_timeout = std::chrono::seconds(5);    // validation on borrow, before_acquire, healthcheck
    duration reset_timeout = std::chrono::seconds(5);    // before_release
    // The time the pool reads and the clock its timers run on; null = default_clock() (steady clock,
    // one process-wide timer thread). Tests inject a manual_clock.
    std::shared_ptr<pool_clock> clock{};
    // Wait-time and hold-time histograms in stats(). Recording is a shift and an increment; reading the
    // clock at park, hand-out and release is the cost (~20-50 ns each), so it is opt-in.
    bool record_timings = false;
};

// Throws std::invalid_argument, e.g. "min (12) must not exceed max (10)".
void validate(const pool_options& o);

}  // namespace respool
