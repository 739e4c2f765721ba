// Events (SPEC.md §1.9). Install an observer with pool::set_observer; with none installed the pool
// pays nothing (no clock reads, no calls). Callbacks run on whatever thread made the decision, outside
// the pool's lock; they must not block and must not throw (exceptions are swallowed).
#pragma once

#include <respool/error.hpp>
#include <respool/stats.hpp>

#include <chrono>
#include <string_view>

namespace respool {

enum class destroy_reason {
    closed,     // idle at close, or returned / created after it
    broken,     // before_release said no
    poisoned,   // the holder poisoned the lease
    rejected,   // before_acquire said no
    unhealthy,  // the background health check said no
};
const char* to_string(destroy_reason) noexcept;

class observer {
public:
    virtual ~observer() = default;
    virtual void on_created() {}
    virtual void on_create_failed(const error_code&) {}
    virtual void on_destroyed(destroy_reason) {}
    virtual void on_poisoned() {}
    virtual void on_taken(std::chrono::nanoseconds /*wait_time*/) {}
    virtual void on_released(std::chrono::nanoseconds /*held_for*/) {}
    // Fired before an acquire fails with timeout, with the pool as it was at that moment.
    virtual void on_exhausted(const pool_stats&) {}
    virtual void on_circuit_changed(circuit_state) {}
};

}  // namespace respool
