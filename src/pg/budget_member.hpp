// One pool's membership in the connection budget shared through <schema>.respool_budget: the Asio
// driver around budget_share.hpp. On its own connection (the member connection, counted in its share)
// it runs one transaction per heartbeat under an advisory lock: expired rows out, its own row in (its
// demand), every row read, its share computed and written. Then it sets its pool's cap (pool max,
// and the gate the pool's connects pass). When the table cannot be used, the pool keeps its
// configured max and one log line says why.
#pragma once

#include <respool/observer.hpp>
#include <respool/options.hpp>
#include <respool/pg/budget.hpp>
#include <respool/pg/connection.hpp>
#include <respool/stats.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace respool::pg::detail {

class budget_member : public std::enable_shared_from_this<budget_member> {
public:
    // What the member needs of its pool (pool.cpp gives callbacks that do nothing once it is gone).
    struct pool_view {
        std::function<pool_stats()> stats;
        std::function<void(std::size_t)> set_max;  // >= 1
        std::function<void()> retire_all;
        std::function<void()> retry_now;
        std::function<void(log_level, const std::string&)> log;
    };

    // Checks the settings (std::invalid_argument naming the setting).
    static void check(const budget_config& c);

    budget_member(boost::asio::any_io_executor ex, std::string conninfo, budget_config cfg,
                  std::size_t configured_max, duration connect_timeout, pool_view pool);

    // Starts the heartbeat loop on the executor. Until the first share arrives the pool makes no
    // connection (may_connect() is false).
    void start();
    // Graceful leave, after the pool closed: waits (up to lease) for the pool's connections to be
    // gone, deletes its row, closes the member connection. `keepalive` is held until then.
    void leave(std::shared_ptr<void> keepalive);
    // Completes once leave() (or vanish()) has finished: the row deleted, or left to expire.
    boost::asio::awaitable<void> wait_left();
    // A crash, for tests: the loop ends and the member connection closes without touching the row
    // (it expires after lease).
    void vanish();

    // How many pooled connections the pool may hold now (0: none; its connects wait).
    [[nodiscard]] std::size_t allowed() const noexcept { return allowed_.load(std::memory_order_acquire); }
    [[nodiscard]] budget_stats stats() const;
    // The pool's connect waits here (on its own executor) until the share allows pooled connections,
    // up to `limit`; false when none came. Looked at every 20 ms: a share changes once per heartbeat.
    boost::asio::awaitable<bool> wait_for_share(duration limit);

private:
    boost::asio::awaitable<void> run(std::shared_ptr<budget_member> self);
    boost::asio::awaitable<void> tick();
    boost::asio::awaitable<bool> ensure_connection();
    boost::asio::awaitable<void> finish(std::shared_ptr<void> keepalive);
    void degrade(const std::string& reason);
    void on_read_only_server();
    void waiting(const std::string& reason);
    void apply_cap(std::size_t cap);
    std::string table() const;
    std::string channel() const;  // where members notify each other of changes
    std::string notify() const;   // the statement that does
    // Waits `d`, or less when another member's notification arrives (poked_).
    boost::asio::awaitable<void> pause(std::chrono::steady_clock::duration d);

    boost::asio::any_io_executor ex_;
    std::string conninfo_;
    budget_config cfg_;
    std::size_t configured_max_;
    duration connect_timeout_;
    pool_view pool_;
    std::string quoted_schema_;
    std::int64_t lock_key_;
    std::optional<connection> conn_;
    boost::asio::steady_timer timer_;
    bool table_ready_ = false;
    bool in_table_ = false;  // a row of ours may exist
    bool stopping_ = false;
    bool vanished_ = false;
    std::atomic<bool> left_{false};  // run() has ended: nothing more will touch the table
    std::shared_ptr<void> leave_keepalive_;
    std::size_t peak_busy_ = 0;
    std::array<std::size_t, 3> recent_totals_{};  // the pool's connections at the last samples
    std::size_t recent_at_ = 0;
    std::optional<std::chrono::steady_clock::time_point> last_commit_;  // of its last share
    std::chrono::steady_clock::time_point last_tick_{};                 // when the last tick began
    std::uint32_t written_demand_ = 0;  // the demand its row holds (as of its last commit)
    bool settled_ = false;              // every row at its target at the last commit
    bool listening_ = false;            // the member connection LISTENs on channel()
    bool poked_ = false;                // another member notified a change since the last tick
    std::size_t cap_ = 0;
    std::string last_note_;  // the last log line's reason (each reason is logged once)
    std::atomic<std::size_t> allowed_{0};
    std::atomic<std::size_t> gate_waiters_{
        0};                     // connects waiting in wait_for_share (counted in the pool's total)
    mutable std::mutex mutex_;  // stats_ is read from any thread
    budget_stats stats_;
};

}  // namespace respool::pg::detail
