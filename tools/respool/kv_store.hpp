// The database adapter of `respool serve`: the four key-value operations of docs/09-service.md over
// respool::sqlite::pool, respool::pg::pool or (a multi-host URL) respool::pg::cluster, one store per
// event loop (its pool lives on that loop: every member is called on the loop's thread only).
//
// Each operation is the pool's own async_query or transaction (db_store.hpp), which borrows within
// the pool's borrow timeout, so that a full pool is a 503 at that deadline. A failure comes back as
// an error_code that respool::http::error_response turns into the response; the store also
// remembers whether the database answered, for /health (which never waits for a connection).
#pragma once

#include "cluster_view.hpp"
#include "serve_flags.hpp"

#include <respool/error.hpp>
#include <respool/http/metrics.hpp>
#include <respool/pg/budget.hpp>
#include <respool/stats.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace respool_cli {

class db_health;

// A value's bytes, as the databases take a blob parameter.
inline std::span<const std::byte> bytes_of(const std::string& s) {
    return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

struct kv_result {
    enum class outcome {
        ok,
        absent,       // GET/DELETE of a missing key (404)
        not_integer,  // incr of a stored value that is not [+-]?[0-9]+ within 64 bits (409)
        overflow,     // incr past INT64_MAX (409)
    };
    respool::error_code ec;  // a database or pool failure (respool::http::error_response)
    outcome what = outcome::ok;
    std::string value;    // GET: the stored bytes; incr: the new value in decimal
    std::string words{};  // with ec: the failure as the database said it (masked), when known
};

// One pool's state for /health and the demo's progress line.
struct pool_view {
    std::string name;  // "postgresql", "writer", "reader"
    respool::pool_stats stats;
    std::optional<respool::pg::budget_stats> budget{};  // a PostgreSQL pool with --budget auto
};

class kv_store {
public:
    virtual ~kv_store() = default;

    virtual boost::asio::awaitable<kv_result> get(std::string key) = 0;
    virtual boost::asio::awaitable<kv_result> put(std::string key, std::string value) = 0;
    virtual boost::asio::awaitable<kv_result> erase(std::string key) = 0;
    virtual boost::asio::awaitable<kv_result> incr(std::string key) = 0;

    // Creates the table when it is not there yet and runs a trivial statement: what the background
    // probe runs so that /health follows the database even when no request comes.
    virtual boost::asio::awaitable<respool::error_code> probe() = 0;

    // The pools' snapshots (pool_stats is no credential: safe on /metrics).
    virtual std::vector<pool_view> pools() const = 0;
    // A cluster client's hosts and routing (a multi-host PostgreSQL URL); nullopt for one database.
    virtual std::optional<cluster_view> cluster() const { return std::nullopt; }
    // Closes the pools: waiters fail with closed, idle connections go, lent ones as they come back;
    // completes when they are gone or `grace` has passed.
    virtual boost::asio::awaitable<void> close(std::chrono::nanoseconds grace) = 0;

    // Up: the database answered the last time it was asked and no pool's circuit is open (read from any
    // thread: /health on one loop reads every loop's stores).
    bool reachable() const noexcept { return reachable_.load(std::memory_order_relaxed); }
    bool probed() const noexcept { return probed_.load(std::memory_order_relaxed); }

    // Reports what the store learns about the database to `h` as worker `w` (and installs the pool
    // observers and log sinks that log the circuit's changes and count failed connects).
    virtual void report_to(db_health& h, std::size_t w) {
        health_ = &h;
        worker_ = w;
    }

protected:
    // Records what an operation's outcome says about the database: success means it answered; a
    // failure to connect, a connection lost, a file that cannot be opened means it did not (with
    // `words`, the driver's message, for the log and /health). Other errors (an exhausted pool, a
    // constraint, a timeout) say nothing about reachability.
    void note(const respool::error_code& ec, std::string_view words = {});
    void note_probe(const respool::error_code& ec, std::string_view words = {}) {
        note(ec, words);
        probed_.store(true, std::memory_order_relaxed);
    }

private:
    std::atomic<bool> reachable_{false};
    std::atomic<bool> probed_{false};
    db_health* health_ = nullptr;
    std::size_t worker_ = 0;
};

// The store for `target` on `ex` (the loop's executor) of event loop `worker`. Throws
// std::invalid_argument (masked) for a setting the pool refuses.
std::unique_ptr<kv_store> make_store(boost::asio::any_io_executor ex, const db_target& target,
                                     const serve_config& cfg, std::size_t worker = 0);

// The increment rule on a stored value: `[+-]?[0-9]+` within signed 64 bits, plus one
// without overflow. `current` is nullptr for a missing key (which starts at 0).
kv_result increment(const std::string* current);

}  // namespace respool_cli
