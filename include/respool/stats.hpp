// A consistent snapshot of a pool (SPEC.md §1.9). Contains no resource data and no credentials:
// safe to expose on a /metrics endpoint.
#pragma once

#include <cstdint>

namespace respool {

enum class circuit_state { closed = 0, open = 1, half_open = 2 };

struct pool_stats {
    std::uint32_t idle = 0;      // created, ready to lend
    std::uint32_t active = 0;    // lent out, or inside a hook / factory / health check
    std::uint32_t total = 0;     // idle + active
    std::uint32_t waiting = 0;   // acquires parked (including woken ones not yet resumed)
    std::uint32_t max = 0;
    std::uint32_t reserved = 0;  // idle resources set aside for woken waiters
    std::uint32_t creating = 0;  // factory calls under way (counted in active)
    // monotonic counters
    std::uint64_t acquires = 0;  // leases handed out
    std::uint64_t waits = 0;     // acquires that had to wait
    std::uint64_t timeouts = 0;
    std::uint64_t cancellations = 0;
    std::uint64_t creations = 0;
    std::uint64_t create_failures = 0;
    std::uint64_t destructions = 0;
    std::uint64_t poisoned = 0;
    std::uint64_t unavailable_rejections = 0;
    std::uint64_t exhausted_rejections = 0;  // max_waiters shedding
    std::uint64_t rejected = 0;              // before_acquire said no
    std::uint64_t broken = 0;                // before_release said no
    std::uint64_t unhealthy = 0;             // health check said no
    circuit_state circuit = circuit_state::closed;
    bool closed = false;
};

}  // namespace respool
