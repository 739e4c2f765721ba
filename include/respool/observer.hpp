// Events. Install an observer with pool::set_observer; with none installed the pool
// pays nothing (no clock reads, no calls). Callbacks run on whatever thread made the decision, outside
// the pool's lock; they must not block and must not throw (exceptions are swallowed).
#pragma once

#include <respool/destroy_reason.hpp>
#include <respool/error.hpp>
#include <respool/stats.hpp>

#include <chrono>
#include <iosfwd>
#include <memory>
#include <respool/source_location.hpp>
#include <string>
#include <string_view>

namespace respool {

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
    // A lease held longer than acquire_ttl (once per lease), and its eventual return.
    virtual void on_leak_suspected(std::chrono::nanoseconds /*held_for*/,
                                   const respool::source_location& /*acquired_at*/) {}
    virtual void on_leak_returned(std::chrono::nanoseconds /*held_for*/,
                                  const respool::source_location& /*acquired_at*/) {}
    // A failed creation holds creations back for `delay` before the next attempt.
    virtual void on_creation_retry(const error_code& /*cause*/, std::chrono::nanoseconds /*delay*/) {}
};

// Logging sink. The default pool has none and formats nothing. Messages never contain
// resource data or credentials.
enum class log_level { debug = 0, info = 1, warning = 2, error = 3 };
const char* to_string(log_level) noexcept;

class log_sink {
public:
    virtual ~log_sink() = default;
    virtual bool enabled(log_level) const noexcept { return true; }
    virtual void log(log_level level, std::string_view message) = 0;
};

// Human-readable lines ("<name> warning: leak suspected: ...") to a stream, from any thread.
std::shared_ptr<log_sink> make_ostream_log_sink(std::ostream& os, log_level min = log_level::info,
                                                std::string name = "respool");

}  // namespace respool
