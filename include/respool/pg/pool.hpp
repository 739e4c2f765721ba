// respool::pg::pool: PostgreSQL connections lent to coroutines (docs/06-postgresql.md):
// respool::pool<pg::connection> with the hooks that connect, check, reset and retire them, and the operations
// a service writes.
//
//   pg::pool db(io.get_executor(), {.conninfo = "host=127.0.0.1 dbname=app user=app password=..."});
//   pg::result r = co_await db.async_query("SELECT name FROM users WHERE id = $1", pg::params(42),
//                                          asio::use_awaitable);             // borrow, run, return
//   co_await db.transaction([&](pg::connection& c) -> asio::awaitable<void> {
//       co_await c.async_query("UPDATE ...", pg::params(...), asio::use_awaitable);
//   }, {.isolation = pg::isolation::serializable, .max_attempts = 3}, asio::use_awaitable);
//
// A connection is poisoned (destroyed, never lent again) only for connection-level failures
// (pg::condition::connection_broken); an SQL error or the caller's own exception returns it, reset.
// See docs/06-postgresql.md for every rule.
#pragma once

#include <respool/detail/db_operations.hpp>
#include <respool/detail/db_query.hpp>
#include <respool/detail/db_state_handle.hpp>
#include <respool/pg/budget.hpp>
#include <respool/pg/connection.hpp>
#include <respool/pg/roles.hpp>
#include <respool/pool.hpp>
#include <respool/trace.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

namespace respool::pg {

// The pool's settings. Defaults are chosen for a database pool (docs/06-postgresql.md has the table).
struct pool_config {
    std::string conninfo;  // libpq keyword/value or URI; checked at construction (masked in every message)
    // A setting left at its default follows the ones that were set (docs/01-concepts.md "Defaults"):
    // min_idle is lowered to a smaller max, max raised to a larger min_idle, and the connect back-off
    // pair below follow each other. Two that were both set and contradict are refused.
    defaulted<std::size_t> max{by_default, 16};
    defaulted<std::size_t> min_idle{by_default, 2};  // kept warm, re-created in the background after losses
    duration borrow_timeout = std::chrono::seconds(5);  // default acquire deadline: past it, errc::exhausted
    std::size_t max_waiters = 0;  // 0 = unbounded; beyond it an acquire fails at once (exhausted)
    duration idle_ttl = std::chrono::seconds(300);    // idle longer: closed (never below min_idle)
    duration acquire_ttl = std::chrono::seconds(30);  // a lease held longer is reported (leak_suspected)
    duration max_lifetime{};                          // off; retire connections older than this (with jitter)
    bool health_check_on_borrow = true;
    // Every borrow looks at what the socket holds (alive_nowait: a terminated backend or a restarted
    // server is caught without a round trip), except when the server answered on that connection
    // within this window: under load that saves a system call per borrow. 0 = look every time.
    duration alive_check_after = std::chrono::milliseconds(100);
    duration validate_after = std::chrono::seconds(1);  // idle longer: validation_query before it is lent
    std::string validation_query = "SELECT 1";
    duration healthcheck_interval =
        std::chrono::seconds(30);  // idle connections checked in the background; 0 = off
    duration connect_timeout = std::chrono::seconds(10);  // DNS, TCP, TLS and authentication together
    duration check_timeout = std::chrono::seconds(5);     // a validation or health check
    duration reset_timeout =
        std::chrono::seconds(5);   // the reset on release (ROLLBACK, session reset, drain)
    duration statement_timeout{};  // per statement, every connection; 0 = none
    // After a statement's deadline or cancellation, how long the server gets to end it (its reply read,
    // every cancel request returned) before its connection is closed instead: a caller waits at most
    // its deadline plus this, whatever the network does (connection::set_cancel_drain_limit).
    duration cancel_drain_limit = std::chrono::seconds(1);
    statement_mode statements = statement_mode::cache;
    // pool::async_query statements that may share one connection at a time (libpq's pipeline mode,
    // docs/06-postgresql.md "Pipelined pool statements"): 1 = each borrows a connection of its own.
    // Above 1, a statement with bound parameters that reads or writes rows is sent behind other
    // callers' on a connection already at work (up to this many in flight on it); its deadline and
    // cancellation end its wait at once, the server is asked to stop it only while it runs.
    std::size_t pipeline_depth = 1;
    std::size_t statement_cache_capacity = 512;
    reset_policy reset = reset_policy::tracked;
    // After a failed connect, the next waits initial * 2^(n-1), up to max (+-20 % jitter): a wrong
    // password or a server that is down is not hammered.
    defaulted<duration> connect_retry_initial{by_default, std::chrono::milliseconds(100)};
    defaulted<duration> connect_retry_max{by_default, std::chrono::seconds(10)};
    // The failure-threshold circuit (circuit_breaker.hpp); nullopt turns it off.
    std::optional<breaker_options> circuit = breaker_options{};
    bool thread_safe = false;     // acquire and release from any thread (a strand as executor, then)
    bool record_timings = false;  // stats() fills the wait and hold histograms (pool_options::record_timings)
    // Shown every statement of every connection as it ends (respool/trace.hpp): the borrowers' and the
    // session reset on return (pool_statement); the pool's validation checks are not. nullptr: none.
    std::shared_ptr<statement_tracer> tracer{};
    // Share the server's connections with every other pool (of this or other processes) that names the
    // same schema: the pool's max follows its share (at most `max`), its connects wait for room instead
    // of failing with "too many connections", and min_idle is not kept warm (idle connections would
    // hold slots others need). docs/06-postgresql.md "A connection budget shared by many instances".
    std::optional<budget_config> budget{};
};

enum class isolation { server_default, read_committed, repeatable_read, serializable };

struct transaction_options {
    isolation level = isolation::server_default;
    bool read_only = false;
    // Attempts in all: above 1, a transaction that fails with serialization_failure (40001) or
    // deadlock (40P01), in its statements or at COMMIT, is rolled back and run again (the function
    // too: keep it free of effects outside the database).
    std::uint32_t max_attempts = 1;
    // When set, the COMMIT's own round trip also reads how far the write-ahead log reached
    // (pg_current_wal_insert_lsn() after the commit) and stores it here: a cluster read given this
    // token sees the transaction (read-your-writes). Left empty when no statement ran.
    commit_token* commit_lsn = nullptr;
};

namespace detail {
struct pool_state;
// Helpers of the templates below (pool.cpp).
boost::asio::awaitable<lease<connection>> acquire(std::shared_ptr<pool_state> s);
// A connection free now, without waiting (pools that are not thread_safe, on the pool's executor, where
// with_connection's and transaction()'s coroutines run); else an empty lease: acquire() is the way.
lease<connection> take_free(pool_state& s) noexcept;
// Where with_connection's and transaction()'s connection comes from: a free one at once, else the acquire.
inline auto borrow(std::shared_ptr<pool_state> s) {
    return respool::detail::db::borrow_source{[s] { return take_free(*s); }, [s] { return acquire(s); }};
}
// The BEGIN of a transaction when it can travel with the first statement (an open connection outside a
// transaction): put in place, true. Else false, and begin() sends it in a round trip of its own.
bool begin_with_first_statement(connection& c, const transaction_options& o);
// The BEGIN in a round trip of its own (after begin_with_first_statement said no).
boost::asio::awaitable<void> begin(connection& c, const transaction_options& o);
// The COMMIT, in three steps so that it needs no coroutine of its own: plan_commit decides what to send
// (nullopt: no statement ran, nothing to commit; throws 25P01 when no transaction is open),
// commit_statement is the SQL, and conclude_commit reads the reply (throws when the COMMIT failed or
// rolled back; stores the position for a commit token).
struct commit_plan {
    bool failed = false;    // the transaction failed before COMMIT: the server ends it as a rollback
    bool with_lsn = false;  // the COMMIT also reads the write-ahead log position (commit_lsn)
};
std::optional<commit_plan> plan_commit(connection& c, commit_token* lsn);
const char* commit_statement(const commit_plan& p) noexcept;
void conclude_commit(const connection& c, const commit_plan& p, commit_token* lsn, error_code ec,
                     const result& r);
// After `error` in a transaction: puts the connection's words into it (explain), rolls back when the
// connection is still in one; true when the transaction may run again.
boost::asio::awaitable<bool> recover(connection& c, std::exception_ptr& error, bool attempts_left);
// Gives the lease back: poisoned after a connection-level failure, else released (and reset); `error`
// gets the connection's words first (explain).
void settle(lease<connection>& l, std::exception_ptr& error) noexcept;
// A plain boost::system::system_error whose code is the connection's last failure becomes
// error_with_diagnostics with the connection's diagnostics; anything else is left as it is.
void explain(const connection& c, std::exception_ptr& error) noexcept;

using respool::detail::db::awaited;

// What transaction() runs around the function (respool::detail::db::in_transaction).
struct transaction_steps {
    transaction_options o;
    bool begin_at_once(connection& c) const { return detail::begin_with_first_statement(c, o); }
    boost::asio::awaitable<void> begin(connection& c) const { return detail::begin(c, o); }
    std::optional<commit_plan> plan_commit(connection& c) const {
        return detail::plan_commit(c, o.commit_lsn);
    }
    auto commit_operation(connection& c, const commit_plan& p) const {
        return c.async_query(commit_statement(p), boost::asio::as_tuple(boost::asio::deferred));
    }
    void conclude_commit(const connection& c, const commit_plan& p, error_code ec, const result& r) const {
        detail::conclude_commit(c, p, o.commit_lsn, ec, r);
    }
    boost::asio::awaitable<bool> recover(connection& c, std::exception_ptr& e, bool attempts_left) const {
        return detail::recover(c, e, attempts_left);
    }
    void settle(lease<connection>& l, std::exception_ptr& e) const noexcept { detail::settle(l, e); }
};
struct pool_access;  // the cluster's view of a pool (src/pg)
}  // namespace detail

class pool : public respool::detail::db::query_operations<pool, params, result> {
public:
    using executor_type = boost::asio::any_io_executor;

    // Checks the settings (std::invalid_argument naming the setting; a bad conninfo with libpq's
    // reason, masked) and starts the pre-warm of min_idle connections.
    pool(executor_type ex, pool_config cfg);
    ~pool();  // closes; leases still out stay valid, their release destroys the connection
    pool(pool&&) noexcept;
    pool& operator=(pool&&) noexcept;

    [[nodiscard]] executor_type get_executor() const noexcept;
    [[nodiscard]] const pool_config& config() const noexcept;

    // A lease on a connection, within borrow_timeout, or within this call's own `timeout`, or before
    // `deadline` (on the steady clock). Borrows that use borrow_timeout share one deadline rule inside
    // the pool (O(1) each); every other timeout or deadline costs O(log n).
    //  Handler:      void(error_code, lease<connection>).
    //  Executor:     the handler's associated executor (the pool's by default); never inline.
    //  Cancellation: terminal, partial, total (errc::cancelled).
    //  Errors:       errc::exhausted (no connection free in time; `diag`, when given, says how the
    //                pool stood), unavailable (circuit open), closed, cancelled, or the connect's own
    //                error when a connection made for this acquire failed (authentication_failed,
    //                connect_failed, connect_timeout; `diag` has libpq's message, masked). For
    //                exhausted and unavailable, `diag` adds libpq's message of the last failed connect.
    template <class Token = boost::asio::deferred_t>
    requires(!std::is_convertible_v<Token, duration> &&
             !std::is_convertible_v<
                 Token, std::chrono::steady_clock::time_point>) auto async_acquire(Token&& token = {}) {
        return async_acquire(config().borrow_timeout, nullptr, std::forward<Token>(token));
    }
    template <class Token = boost::asio::deferred_t>
    auto async_acquire(duration timeout, Token&& token = {}) {
        return async_acquire(timeout, nullptr, std::forward<Token>(token));
    }
    template <class Token = boost::asio::deferred_t>
    auto async_acquire(std::chrono::steady_clock::time_point deadline, Token&& token = {}) {
        return async_acquire(deadline, nullptr, std::forward<Token>(token));
    }
    template <class Token = boost::asio::deferred_t>
    auto async_acquire(duration timeout, respool::diagnostics* diag, Token&& token = {}) {
        return initiate_acquire(timeout, diag, std::forward<Token>(token));
    }
    template <class Token = boost::asio::deferred_t>
    auto async_acquire(std::chrono::steady_clock::time_point deadline, respool::diagnostics* diag,
                       Token&& token = {}) {
        return initiate_acquire(deadline, diag, std::forward<Token>(token));
    }

    // async_query(sql[, params][, diag], token) (query_operations, db_query.hpp): borrows a connection,
    // runs `sql` on it and returns it: the connection's async_query (a script with the simple
    // protocol, or one statement with bound parameters through the statement cache).
    // A connection-level failure poisons the connection; the pool's errors are async_acquire's.
    //  Handler: void(error_code, result). Executor, cancellation (of the wait and of the statement,
    //  which is cancelled on the server): as async_acquire and connection::async_query.
    //  Diagnostics: with `diag` (kept alive by the caller until the handler runs), a failure fills
    //  diag->message with it in words, `relation "nope" does not exist (SQLSTATE 42P01)` (the server's
    //  message, libpq's for a failed connect, the pool's state for exhausted; masked), and diag->error
    //  with a pg::error_with_diagnostics to rethrow for the whole of pg::diagnostics. Cleared when
    //  the operation starts, so it is empty after a success (Boost.MySQL's convention).

    // Borrows a connection, runs `fn(connection&)` (a coroutine: asio::awaitable<R>) on the pool's
    // executor and returns the connection. Failures are exceptions (asio::co_spawn's convention):
    // the acquire's as boost::system::system_error (exhausted's what() says how the pool stood; a
    // failed connect's has libpq's message), and whatever fn throws; a statement of fn's that failed
    // (the boost::system::system_error that asio::use_awaitable throws, with the code the connection
    // reported last) comes out as pg::error_with_diagnostics, the server's words in its what(). The
    // connection is poisoned only when fn fails with connection_broken.
    //  Handler: void(std::exception_ptr, R) (void(std::exception_ptr) for R = void).
    template <class F, class Token = boost::asio::deferred_t>
    auto with_connection(F fn, Token&& token = {}) {
        using R = typename detail::awaited<std::invoke_result_t<F&, connection&>>::type;
        return boost::asio::co_spawn(get_executor(),
                                     respool::detail::db::with_borrowed<R>(detail::borrow(state_.shared()),
                                                                           std::move(fn), &detail::settle),
                                     std::forward<Token>(token));
    }

    // BEGIN (isolation level, read-only), fn(connection&), COMMIT, on one borrowed connection; ROLLBACK
    // when fn throws (and the exception goes on, a failed statement's as with_connection's). A failed
    // BEGIN or COMMIT throws pg::error_with_diagnostics. A COMMIT the server turned into a rollback (a
    // statement failed and fn caught it) fails with SQLSTATE 25P02; no transaction open at COMMIT (its
    // BEGIN failed and fn went on, or fn ended it itself) with 25P01. Retries: transaction_options.
    //  Handler: as with_connection.
    template <class F, class Token = boost::asio::deferred_t>
    auto transaction(F fn, transaction_options o = {}, Token&& token = {}) {
        using R = typename detail::awaited<std::invoke_result_t<F&, connection&>>::type;
        return boost::asio::co_spawn(
            get_executor(),
            respool::detail::db::in_transaction<R>(detail::borrow(state_.shared()), o.max_attempts,
                                                   std::move(fn), detail::transaction_steps{o}),
            std::forward<Token>(token));
    }

    // A batch (respool/pg/batch.hpp) on one connection borrowed for it, in one round trip, as
    // connection::async_execute runs it; the connection goes back afterwards (reset when a statement
    // changed the session). A failed borrow fails every statement with its error. An Asio
    // cancellation (terminal, partial, total) reaches the borrow, then the batch (as
    // connection::async_execute).
    //  Handler: void(error_code, std::vector<batch_outcome>): the first failure, and every outcome.
    template <class Token = boost::asio::deferred_t>
    auto async_execute(batch b, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code, std::vector<batch_outcome>)>(
            [this](auto handler, batch bb) { start_execute(std::move(bb), std::move(handler)); }, token,
            std::move(b));
    }

    // COPY ... FROM STDIN / TO STDOUT (respool/pg/copy.hpp) on a connection borrowed for it, as
    // connection::async_copy_in / async_copy_out run them (streamed; the statement timeout covers the
    // whole COPY; cancellation ends it on the server); the connection goes back afterwards, or is
    // poisoned after a connection-level failure. A failed borrow completes with its error. The words
    // of a failure: copy_options::diag.
    //  Handler: void(error_code, std::uint64_t rows).
    template <class Range, class Token = boost::asio::deferred_t>
    auto async_copy_in(std::string table, Range&& rows, copy_options o = {}, Token&& token = {}) {
        std::string sql = detail::copy_in_statement_for<Range>(table, o.format);
        return boost::asio::async_initiate<Token, void(error_code, std::uint64_t)>(
            [this, o](auto handler, std::string s, std::unique_ptr<detail::copy_rows> r) {
                start_copy(std::move(s), std::move(r), {}, o, std::move(handler));
            },
            token, std::move(sql), detail::make_copy_rows(std::forward<Range>(rows)));
    }
    template <class Sink, class Token = boost::asio::deferred_t>
    auto async_copy_out(std::string query_or_table, Sink sink, copy_options o = {}, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code, std::uint64_t)>(
            [this, o](auto handler, std::string s, detail::copy_sink k) {
                start_copy(std::move(s), nullptr, std::move(k), o, std::move(handler));
            },
            token, detail::copy_out_statement(query_or_table, o.format), detail::copy_sink(std::move(sink)));
    }

    [[nodiscard]] pool_stats stats() const noexcept;
    // The shared connection budget as this pool last saw it (enabled false without pool_config::budget).
    [[nodiscard]] respool::pg::budget_stats budget_stats() const;
    [[nodiscard]] circuit_state state() const;
    // Soft eviction: every connection that exists now is closed when next idle or returned.
    void retire_all() noexcept;
    void close() noexcept;
    // Closes, then completes once every connection is gone (or after `grace` with errc::timeout, as
    // respool::pool::async_close) and, with pool_config::budget, once the pool has left the budget:
    // its row deleted after its connections closed (so that the others may take its share at once),
    // which takes up to budget_config::lease more. A process that exits after this leaves nothing
    // behind for the others to wait for.
    //  Handler: void(error_code), exactly once, on its associated executor; never inline.
    template <class Token = boost::asio::deferred_t>
    auto async_close(duration grace, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [this](auto handler, duration g) { start_close(g, std::move(handler)); }, token, grace);
    }
    // Completes when the pre-warm of min_idle connections is done (or the first connect failed).
    template <class Token = boost::asio::deferred_t>
    auto async_wait_ready(Token&& token = {}) {
        return base().async_wait_ready(std::forward<Token>(token));
    }
    // The generic pool underneath: observers, log sink, circuit control, set_max.
    respool::pool<connection>& base() noexcept;

private:
    friend class respool::detail::db::query_operations<pool, params, result>;
    friend struct detail::pool_access;
    // A cluster's host pool: `on_return` sees each connection as its lease ends, before its reset
    // (the session's ParameterStatus: was the host promoted or demoted?).
    pool(executor_type ex, pool_config cfg, std::function<void(connection&)> on_return);

    template <class Token>
    auto initiate_acquire(respool::detail::db::borrow_deadline when, respool::diagnostics* diag,
                          Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code, lease<connection>)>(
            [this](auto handler, respool::detail::db::borrow_deadline w, respool::diagnostics* d) {
                start_acquire(w, d, std::move(handler));
            },
            token, when, diag);
    }
    void start_acquire(respool::detail::db::borrow_deadline when, respool::diagnostics* diag,
                       boost::asio::any_completion_handler<void(error_code, lease<connection>)> handler);
    // `handler_ex`: the handler's executor when it is an any_io_executor (handler_executor.hpp).
    void start_query(std::string sql, std::optional<params> p, respool::diagnostics* diag,
                     boost::asio::any_completion_handler<void(error_code, result)> handler,
                     boost::asio::any_io_executor handler_ex);
    void start_close(duration grace, boost::asio::any_completion_handler<void(error_code)> handler);
    void start_copy(std::string sql, std::unique_ptr<detail::copy_rows> rows, detail::copy_sink sink,
                    copy_options o,
                    boost::asio::any_completion_handler<void(error_code, std::uint64_t)> handler);
    void start_execute(
        batch b, boost::asio::any_completion_handler<void(error_code, std::vector<batch_outcome>)> handler);

    respool::detail::db::state_handle<detail::pool_state> state_;
};

}  // namespace respool::pg
