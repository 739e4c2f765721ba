// Circuit breaker (SPEC.md §1.7): manual control plus a pluggable strategy.
#pragma once

#include <respool/error.hpp>
#include <respool/stats.hpp>

namespace respool {

// What a strategy may do to the pool it watches.
class circuit_breaker {
public:
    virtual circuit_state state() const = 0;
    virtual void activate() = 0;    // -> closed: normal operation
    virtual void deactivate() = 0;  // -> open: acquires fail fast with unavailable, waiters fail at once
    virtual void recover() = 0;     // -> half_open: probe acquires pass

protected:
    ~circuit_breaker() = default;
};

// Called outside the pool's lock, on the thread that made the decision.
//  report_success: every accepted release.
//  report_failure: every broken or poisoned release (errc::broken / errc::poisoned) and every failed
//                  factory call (the factory's error).
class circuit_strategy {
public:
    virtual ~circuit_strategy() = default;
    virtual void report_success(circuit_breaker& cb) = 0;
    virtual void report_failure(circuit_breaker& cb, const error_code& ec) = 0;
};

}  // namespace respool
