// Pool options (SPEC.md §1.1). validate() rejects bad values with std::invalid_argument whose
// message names the option and the rule; pool constructors call it before creating anything.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>

namespace respool {

using duration = std::chrono::steady_clock::duration;

enum class idle_order {
    fifo,  // least recently released first: spreads use over all resources (default)
    lifo,  // most recently released first: reuses the warmest, lets the rest age out
};

struct pool_options {
    std::size_t min = 0;                          // created at construction; the floor kept after losses
    std::size_t max = 10;                         // cap on total resources, >= 1
    duration healthcheck_interval{};              // 0 = off; checks idle resources only
    std::optional<duration> acquire_timeout{};    // default deadline of async_acquire; none = forever
    std::size_t max_waiters = 0;                  // 0 = unbounded; beyond it acquire fails with exhausted
    std::size_t max_concurrent_creations = 2;     // factory calls running at once, >= 1
    idle_order order = idle_order::fifo;
    bool thread_safe = false;                     // allow acquire/release from any thread
};

// Throws std::invalid_argument, e.g. "min (12) must not exceed max (10)".
void validate(const pool_options& o);

}  // namespace respool
