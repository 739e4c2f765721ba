// The default circuit strategy: consecutive failures open the circuit, a cool-down
// half-opens it with a probe budget, accepted probes close it, a failed probe reopens it.
#include <respool/circuit_breaker.hpp>

#include <respool/detail/duration_text.hpp>

#include <stdexcept>
#include <string>

namespace respool {

failure_threshold_strategy::failure_threshold_strategy(breaker_options o) : o_(o) {
    auto fail = [](const std::string& m) { throw std::invalid_argument("respool: " + m); };
    if (o_.failures_to_open == 0) fail("failures_to_open (0) must be at least 1");
    if (o_.probes == 0) fail("probes (0) must be at least 1");
    if (o_.successes_to_close == 0) fail("successes_to_close (0) must be at least 1");
    if (o_.cool_down < duration::zero())
        fail("cool_down (" + detail::duration_text(o_.cool_down) + ") must not be negative");
}

void failure_threshold_strategy::trip(circuit_breaker& cb) {
    failures_ = 0;
    successes_ = 0;
    cb.deactivate();
    cb.recover_after(o_.cool_down, o_.probes);
}

void failure_threshold_strategy::report_failure(circuit_breaker& cb, const error_code&) {
    std::lock_guard<std::mutex> g(m_);
    switch (cb.state()) {
    case circuit_state::closed:
        if (++failures_ >= o_.failures_to_open) trip(cb);
        break;
    case circuit_state::half_open: trip(cb); break;  // a probe failed: open again
    case circuit_state::open: break;                 // late reports of work started before opening
    }
}

void failure_threshold_strategy::report_success(circuit_breaker& cb) {
    std::lock_guard<std::mutex> g(m_);
    switch (cb.state()) {
    case circuit_state::closed: failures_ = 0; break;
    case circuit_state::half_open:
        if (++successes_ >= o_.successes_to_close) {
            successes_ = 0;
            failures_ = 0;
            cb.activate();
        }
        break;
    case circuit_state::open: break;
    }
}

}  // namespace respool
