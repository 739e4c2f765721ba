// Whether `respool serve`'s database answers, why not, and since when: what /health says while it is
// down and what the log says about the outage. One per service, shared by the workers (each reports
// for its own pool; the service is down while any worker's pool is).
//
// The log of an outage is bounded whatever the request rate: its first failure (error, with the
// cause), then at most one "still failing" line per summary interval (warn, with the count of failures
// and connect attempts in that interval and the cause now), then the recovery (info, with how long it
// lasted). The causes are classified (authentication failed, connection refused, DNS, TLS, too many
// connections, ...) from the error codes and the driver's message, which is masked already.
#pragma once

#include <respool/error.hpp>
#include <respool/observer.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace respool_cli {

// "<cause>: <the driver's words>", one line: e.g. "authentication failed: password authentication
// failed for user \"app\"", "connection refused: connection to server at ...". `words` may be empty.
std::string classify(const respool::error_code& ec, std::string_view words);

class db_health {
public:
    explicit db_health(std::size_t workers,
                       std::chrono::steady_clock::duration summary_every = std::chrono::seconds(10));

    // Worker `w`'s database did not answer: `reason` is classify()'s. An empty reason (the circuit
    // is open: no connect was tried) counts while `w` is down and changes nothing else.
    void failed(std::size_t w, const std::string& reason);
    // Worker `w`'s database answered.
    void answered(std::size_t w);
    // A connection attempt failed (a pool's observer): counted for the "still failing" line.
    void connect_failed() noexcept;

    struct view {
        bool down = false;
        std::string reason;                           // empty while up
        std::chrono::system_clock::time_point since;  // when the outage began (up: the service's start)
    };
    [[nodiscard]] view snapshot() const;

private:
    mutable std::mutex m_;
    std::vector<bool> down_;  // per worker
    std::size_t down_count_ = 0;
    std::string reason_;
    std::chrono::system_clock::time_point since_;
    std::chrono::steady_clock::time_point began_;         // the outage's start, for its length
    std::chrono::steady_clock::time_point window_start_;  // of the current summary interval
    std::chrono::steady_clock::duration summary_every_;
    std::chrono::system_clock::time_point started_ = std::chrono::system_clock::now();
    std::size_t failures_ = 0;        // in the current interval
    std::size_t total_failures_ = 0;  // in the outage
    std::size_t connects_ = 0;        // failed connect attempts in the current interval
};

// The observer and log sink installed on each worker's pools: the circuit's changes are logged (warn
// when it opens, info otherwise), failed connects are counted, and the pool's own messages go to the
// log at debug level.
std::shared_ptr<respool::observer> make_pool_observer(db_health& h, std::string pool_name);
std::shared_ptr<respool::log_sink> make_pool_log_sink(std::string pool_name);

}  // namespace respool_cli
