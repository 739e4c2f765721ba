// respool::sqlite::pool: an SQLite database lent to coroutines (docs/07-sqlite.md): one writer connection
// (a respool::pool<sqlite::connection> of max 1, transactions BEGIN IMMEDIATE) and `readers` reader
// connections (a second pool, query_only) on a thread pool of its own, so that no SQLite call runs on
// the caller's event loop, writers never meet SQLITE_BUSY inside the process, and reads run in
// parallel with the write.
//
//   sqlite::pool db(io.get_executor(), {.path = "/var/lib/app/app.db"});
//   sqlite::result r = co_await db.async_query("SELECT name FROM users WHERE id = ?", sqlite::params(42),
//                                              asio::use_awaitable);   // a reader: read-only statement
//   co_await db.transaction([&](sqlite::connection& c) -> asio::awaitable<void> {
//       co_await c.async_query("UPDATE ...", sqlite::params(...), asio::use_awaitable);
//   }, {}, asio::use_awaitable);                                        // the writer, BEGIN IMMEDIATE
//
// The shapes are pg::pool's (async_query, with_connection, transaction, the handlers, the poisoning
// rule), so a service can be written once against either. See docs/07-sqlite.md for every rule.
#pragma once

#include <respool/detail/db_operations.hpp>
#include <respool/detail/db_query.hpp>
#include <respool/detail/db_state_handle.hpp>
#include <respool/pool.hpp>
#include <respool/sqlite/connection.hpp>
#include <respool/trace.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

namespace respool::sqlite {

struct pool_config {
    // A file path or an SQLite URI. Rejected (std::invalid_argument): "" and ":memory:" and the other
    // private in-memory forms (every connection would see a database of its own); the shared
    // in-memory database of the memdb VFS, "file:/name?vfs=memdb", is accepted.
    std::string path;
    std::size_t readers = 4;  // reader connections (0: everything runs on the writer)
    std::size_t threads = 0;  // the thread pool SQLite runs on; 0 = readers + 1
    duration borrow_timeout = std::chrono::seconds(5);  // default acquire deadline: past it, errc::exhausted
    std::size_t max_waiters = 0;                        // per pool (writer, readers); 0 = unbounded
    duration idle_ttl = std::chrono::seconds(300);      // an idle reader longer: closed
    duration acquire_ttl = std::chrono::seconds(30);    // a lease held longer is reported (leak_suspected)
    duration reset_timeout = std::chrono::seconds(5);   // the reset on release
    // What a connection given back gets before the next borrower (reset_policy, connection.hpp): by
    // default its session is restored when the borrower changed it (a PRAGMA set, ATTACH, a TEMP object).
    reset_policy reset = reset_policy::tracked;
    duration statement_timeout{};  // per statement, every connection; 0 = none
    // Per connection (connection_options has the details).
    duration busy_timeout = std::chrono::seconds(5);
    std::string journal_mode = "WAL";
    std::string synchronous = "NORMAL";
    bool foreign_keys = true;
    std::size_t statement_cache_capacity = 128;
    bool record_timings =
        false;  // the stats fill the wait and hold histograms (pool_options::record_timings)
    // Shown every statement the borrowers run on any connection as it ends (respool/trace.hpp), on the
    // thread that ran it; those of group commits and read batches one by one (a write first tried on a
    // reader, which refuses it before it runs, is shown once, from the writer). nullptr: none.
    std::shared_ptr<statement_tracer> tracer{};
};

struct transaction_options {
    // false: the writer, BEGIN IMMEDIATE (the write lock is taken at BEGIN, never half-way).
    // true: a reader, BEGIN (a consistent snapshot for several reads; writes fail with read_only).
    bool read_only = false;
    // Attempts in all: above 1, a transaction that fails with condition::busy (another process held
    // the lock past busy_timeout) is rolled back and run again, function included.
    std::uint32_t max_attempts = 1;
};

namespace detail {
struct pool_state;
enum class role { writer, reader };
boost::asio::awaitable<lease<connection>> acquire(std::shared_ptr<pool_state> s, role r);
// Where with_connection's, with_reader's and transaction()'s connection comes from (no connection is
// taken at once: every borrow from a SQLite pool goes through the acquire).
inline auto borrow(std::shared_ptr<pool_state> s, role r) {
    return respool::detail::db::borrow_source{[] { return lease<connection>{}; },
                                              [s = std::move(s), r] { return acquire(s, r); }};
}
boost::asio::awaitable<void> begin(connection& c, const transaction_options& o);
boost::asio::awaitable<void> commit(connection& c);
// After `error` in a transaction: the connection's words into it (explain), ROLLBACK; true: run again.
boost::asio::awaitable<bool> recover(connection& c, std::exception_ptr& error, bool attempts_left);
// Gives the lease back (poisoned after a connection-level failure); `error` gets its words first.
void settle(lease<connection>& l, std::exception_ptr& error) noexcept;
// A plain boost::system::system_error whose code is the connection's last failure becomes
// error_with_diagnostics with the connection's diagnostics; anything else is left as it is.
void explain(const connection& c, std::exception_ptr& error) noexcept;

using respool::detail::db::awaited;

// What transaction() runs around the function (respool::detail::db::in_transaction).
using transaction_steps = respool::detail::db::transaction_steps<connection, transaction_options, &begin,
                                                                 &commit, &recover, &settle>;
}  // namespace detail

class pool : public respool::detail::db::query_operations<pool, params, result> {
public:
    using executor_type = boost::asio::any_io_executor;

    // Checks the settings (std::invalid_argument naming the setting and the path) and starts the
    // thread pool. Connections are opened on first use; a missing folder, an unreadable or damaged
    // file is reported then (the acquire's or query's error; with_connection's exception names the path).
    pool(executor_type ex, pool_config cfg);
    ~pool();  // closes both pools; leases still out stay valid, their release destroys the connection
    pool(pool&&) noexcept;
    pool& operator=(pool&&) noexcept;

    [[nodiscard]] executor_type get_executor() const noexcept;
    [[nodiscard]] const pool_config& config() const noexcept;

    // A lease on the writer (async_acquire) or on a reader (async_acquire_reader), within
    // borrow_timeout, or within this call's own `timeout` (zero: only a connection free now), or
    // before `deadline` (on the steady clock). Borrows that use the pool's borrow_timeout share one
    // deadline rule inside the pool (O(1) each); every other timeout or deadline costs O(log n).
    //  Handler: void(error_code, lease<connection>). Executor, cancellation, errors: as
    //  pg::pool::async_acquire (errc::exhausted past the deadline; an open's failure as its code).
    template <class Token = boost::asio::deferred_t>
    requires(!std::is_convertible_v<Token, duration> &&
             !std::is_convertible_v<
                 Token, std::chrono::steady_clock::time_point>) auto async_acquire(Token&& token = {}) {
        return async_acquire(config().borrow_timeout, std::forward<Token>(token));
    }
    template <class Token = boost::asio::deferred_t>
    auto async_acquire(duration timeout, Token&& token = {}) {
        return initiate_acquire(detail::role::writer, timeout, std::forward<Token>(token));
    }
    template <class Token = boost::asio::deferred_t>
    auto async_acquire(std::chrono::steady_clock::time_point deadline, Token&& token = {}) {
        return initiate_acquire(detail::role::writer, deadline, std::forward<Token>(token));
    }
    template <class Token = boost::asio::deferred_t>
    requires(
        !std::is_convertible_v<Token, duration> &&
        !std::is_convertible_v<
            Token, std::chrono::steady_clock::time_point>) auto async_acquire_reader(Token&& token = {}) {
        return async_acquire_reader(config().borrow_timeout, std::forward<Token>(token));
    }
    template <class Token = boost::asio::deferred_t>
    auto async_acquire_reader(duration timeout, Token&& token = {}) {
        return initiate_acquire(detail::role::reader, timeout, std::forward<Token>(token));
    }
    template <class Token = boost::asio::deferred_t>
    auto async_acquire_reader(std::chrono::steady_clock::time_point deadline, Token&& token = {}) {
        return initiate_acquire(detail::role::reader, deadline, std::forward<Token>(token));
    }

    // async_query(sql[, params][, diag], token) (query_operations, db_query.hpp): borrows a connection,
    // runs `sql`, returns it. A single read-only statement (sqlite3_stmt_readonly) runs on a reader;
    // anything else (a write, DDL, a script, a pragma that sets) on the writer. The pool learns which
    // statement is which from the first run and remembers it. A write with bound parameters (INSERT,
    // UPDATE, DELETE, REPLACE) joins the writer's next group commit: one transaction for the writes
    // queued meanwhile, each in a savepoint of its own, acknowledged after the COMMIT
    // (docs/07-sqlite.md, "Group commit").
    //  Handler: void(error_code, result). Executor: the handler's associated executor; never inline.
    //  Cancellation (terminal, partial, total): of the wait, or of the statement (interrupted).
    //  Errors: the acquire's (exhausted, closed, cancelled, an open's failure), the statement's.
    //  Diagnostics: with `diag` (kept alive by the caller until the handler runs; cleared when the
    //  operation starts), a failure fills diag->message with it in words, `no such table: nope (SQLite
    //  result code 1)` (sqlite3_errmsg; an open's failure names the path), and diag->error with a
    //  sqlite::error_with_diagnostics to rethrow for the whole of sqlite::diagnostics.

    // Borrows the writer (with_connection) or a reader (with_reader), runs `fn(connection&)` (a
    // coroutine: asio::awaitable<R>) on the pool's executor and returns the connection (reset when the
    // borrower left a transaction or a statement open, or changed the session: pool_config::reset).
    // Failures are exceptions: the acquire's as boost::system::system_error (its what() names the path
    // for an open that failed), and whatever fn throws; a statement of fn's that failed (the
    // boost::system::system_error that asio::use_awaitable throws, with the code the connection
    // reported last) comes out as sqlite::error_with_diagnostics, SQLite's words in its what(). The
    // connection is poisoned only when fn fails with condition::connection_broken.
    //  Handler: void(std::exception_ptr, R) (void(std::exception_ptr) for R = void).
    template <class F, class Token = boost::asio::deferred_t>
    auto with_connection(F fn, Token&& token = {}) {
        using R = typename detail::awaited<std::invoke_result_t<F&, connection&>>::type;
        return boost::asio::co_spawn(
            get_executor(),
            respool::detail::db::with_borrowed<R>(detail::borrow(state_.shared(), detail::role::writer),
                                                  std::move(fn), &detail::settle),
            std::forward<Token>(token));
    }
    template <class F, class Token = boost::asio::deferred_t>
    auto with_reader(F fn, Token&& token = {}) {
        using R = typename detail::awaited<std::invoke_result_t<F&, connection&>>::type;
        return boost::asio::co_spawn(
            get_executor(),
            respool::detail::db::with_borrowed<R>(detail::borrow(state_.shared(), detail::role::reader),
                                                  std::move(fn), &detail::settle),
            std::forward<Token>(token));
    }

    // BEGIN IMMEDIATE on the writer (BEGIN on a reader with read_only), fn(connection&), COMMIT;
    // ROLLBACK when fn throws (and the exception goes on, a failed statement's as with_connection's).
    // A failed BEGIN or COMMIT throws sqlite::error_with_diagnostics. Retries: transaction_options.
    //  Handler: as with_connection.
    template <class F, class Token = boost::asio::deferred_t>
    auto transaction(F fn, transaction_options o = {}, Token&& token = {}) {
        using R = typename detail::awaited<std::invoke_result_t<F&, connection&>>::type;
        return boost::asio::co_spawn(
            get_executor(),
            respool::detail::db::in_transaction<R>(
                detail::borrow(state_.shared(), o.read_only ? detail::role::reader : detail::role::writer),
                o.max_attempts, std::move(fn), detail::transaction_steps{o}),
            std::forward<Token>(token));
    }

    [[nodiscard]] pool_stats writer_stats() const noexcept;
    [[nodiscard]] pool_stats reader_stats() const noexcept;
    // Closes both pools (waiters fail with closed); the thread pool ends when the last connection is gone.
    void close() noexcept;
    // The generic pools underneath: observers, log sinks, set_max (readers).
    respool::pool<connection>& writer_pool() noexcept;
    respool::pool<connection>& reader_pool() noexcept;

private:
    friend class respool::detail::db::query_operations<pool, params, result>;

    template <class Token>
    auto initiate_acquire(detail::role r, respool::detail::db::borrow_deadline when, Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code, lease<connection>)>(
            [this](auto handler, detail::role side, respool::detail::db::borrow_deadline w) {
                start_acquire(side, w, std::move(handler));
            },
            token, r, when);
    }
    void start_acquire(detail::role r, respool::detail::db::borrow_deadline when,
                       boost::asio::any_completion_handler<void(error_code, lease<connection>)> handler);
    // (`handler_ex` is not used: a statement completes from its worker thread, posted to the handler.)
    void start_query(std::string sql, std::optional<params> p, respool::diagnostics* diag,
                     boost::asio::any_completion_handler<void(error_code, result)> handler,
                     const boost::asio::any_io_executor& handler_ex);

    respool::detail::db::state_handle<detail::pool_state> state_;
};

}  // namespace respool::sqlite
