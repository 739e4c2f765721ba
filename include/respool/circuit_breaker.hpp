// Circuit breaker: manual control plus a pluggable strategy.
#pragma once

#include <respool/error.hpp>
#include <respool/options.hpp>
#include <respool/stats.hpp>

#include <cstdint>
#include <mutex>

namespace respool {

// What a strategy may do to the pool it watches.
class circuit_breaker {
public:
    virtual circuit_state state() const = 0;
    virtual void activate() = 0;    // -> closed: normal operation
    virtual void deactivate() = 0;  // -> open: acquires fail fast with unavailable, waiters fail at once
    virtual void recover() = 0;     // -> half_open: probe acquires pass (no limit)
    virtual void recover(std::uint32_t max_probes) = 0;  // -> half_open: at most max_probes acquires pass
    // -> half_open(max_probes) after `delay`, unless the state changes first. Does not keep an event
    // loop alive; stopped by close.
    virtual void recover_after(duration delay, std::uint32_t max_probes) = 0;

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

// The working default: opens after `failures_to_open` consecutive failures (failed
// creations, broken or poisoned releases, failed validations), half-opens after `cool_down` letting at
// most `probes` acquires through, closes after `successes_to_close` accepted releases, reopens on a
// failure while half-open. Thread-safe; one instance per pool.
struct breaker_options {
    std::uint32_t failures_to_open = 5;
    duration cool_down = std::chrono::seconds(5);
    std::uint32_t probes = 1;
    std::uint32_t successes_to_close = 1;
};

class failure_threshold_strategy final : public circuit_strategy {
public:
    // Throws std::invalid_argument naming the option (failures_to_open, probes, successes_to_close
    // must be >= 1; cool_down must not be negative).
    explicit failure_threshold_strategy(breaker_options o = {});
    void report_success(circuit_breaker& cb) override;
    void report_failure(circuit_breaker& cb, const error_code& ec) override;
    [[nodiscard]] const breaker_options& options() const noexcept { return o_; }

private:
    void trip(circuit_breaker& cb);
    breaker_options o_;
    std::mutex m_;
    std::uint32_t failures_ = 0;
    std::uint32_t successes_ = 0;
};

}  // namespace respool
