// respool::sqlite::connection: one SQLite database connection whose every SQLite call (open, prepare,
// step, busy waits, reset, close) runs on an offload executor (a thread pool), never on the caller's
// event loop; results come back on the caller's executor.
//
//   asio::thread_pool workers(2);
//   sqlite::connection c(io.get_executor(), workers.get_executor());
//   co_await c.async_open({.path = "/var/lib/app/app.db"}, asio::use_awaitable);
//   sqlite::result r = co_await c.async_query("SELECT ?1 + 1", sqlite::params(41), asio::use_awaitable);
//
// Every async operation takes any completion token, completes on the handler's associated executor
// (the connection's own otherwise), and never inside the initiating call; while it runs it keeps
// that executor's io_context from running out of work. One operation at a time per connection (a
// connection is lent to one borrower): a second one fails with error::operation_in_progress.
// Errors are error_codes in sqlite::error_category(); SQLite's message is in last_error().
#pragma once

#include <respool/detail/unique_function.hpp>
#include <respool/sqlite/errors.hpp>
#include <respool/sqlite/values.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>

#include <chrono>
#include <cstddef>
#include <exception>
#include <memory>
#include <string>
#include <utility>

struct sqlite3;  // SQLite's connection handle (sqlite3.h stays out of respool's headers)

namespace respool {
class statement_tracer;
}

namespace respool::sqlite {

namespace detail {
struct connection_access;  // the pool's own jobs on a connection (group commit), in src/sqlite
}

// What a connection given back to a pool gets before the next borrower (docs/07-sqlite.md, "Reset on
// return"). A transaction left open is always rolled back and a statement left stepping is always reset;
// then `tracked` (the default) restores the session only when the borrower changed it (a PRAGMA that
// sets a value, ATTACH or DETACH, a TEMP table, view, index or trigger: seen by an SQLite authorizer when
// the statement is prepared, and remembered with the cached statement; or async_run, or mark_dirty());
// `always` restores it every time; `none` never (the borrower's settings reach the next borrower; a
// reader is made query_only again all the same).
enum class reset_policy { tracked, always, none };

// How a connection is opened. Every pragma is set per connection, after the open; an empty string
// leaves SQLite's default.
struct connection_options {
    // A file path or an SQLite URI ("file:app.db?mode=rwc"; URIs are on). The folder must exist.
    std::string path;
    // A reader: query_only=1, and async_query refuses (error::writes_on_reader) any statement that
    // is not read-only (sqlite3_stmt_readonly) or a script, without running it. It is opened
    // read-write all the same, so that it can open a database the writer has not created yet and
    // take part in WAL recovery like any other connection.
    bool reader = false;
    // How long a statement waits for another process's lock before SQLITE_BUSY (a busy handler that
    // sleeps on the offload thread and gives up at once on cancellation or the statement deadline).
    std::chrono::steady_clock::duration busy_timeout = std::chrono::seconds(5);
    std::string journal_mode = "WAL";  // set by writers only (it is a property of the file)
    std::string synchronous = "NORMAL";
    bool foreign_keys = true;
    std::size_t statement_cache_capacity = 128;  // prepared statements kept per connection (LRU); 0 = none
};

class connection {
public:
    // `ex`: where completions go by default. `offload`: where SQLite runs (an asio::thread_pool's
    // executor); it must outlive the connection, or `keep_alive` must own it (the pool's way).
    connection(boost::asio::any_io_executor ex, boost::asio::any_io_executor offload,
               std::shared_ptr<void> keep_alive = {});
    // Closes the database on the offload executor (after the operation under way, if any).
    ~connection();
    connection(connection&&) noexcept;
    connection& operator=(connection&&) noexcept;
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    [[nodiscard]] const boost::asio::any_io_executor& get_executor() const noexcept;

    // Opens the database, sets the pragmas and reads the schema version (so that a file that is not
    // a database fails here, not at the first statement). Errors: the SQLite code (cant_open for a
    // missing folder or a directory, corrupt for a file that is not a database); last_error().message
    // names the path. Handler: void(error_code).
    template <class Token>
    auto async_open(connection_options o, Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [this](auto handler, connection_options opts) {
                auto hex = completion_executor(handler);
                start_open(std::move(opts), hex, std::move(handler));
            },
            token, std::move(o));
    }

    // Runs `sql`: one statement through the statement cache, or a script of several (each prepared
    // and run in turn, not cached; the last statement's rows are returned). An SQL error completes
    // with its extended result code (message in last_error()); the connection stays usable.
    // Cancellation (terminal, partial, total): the statement is interrupted (sqlite3_interrupt) and
    // the operation completes with asio::error::operation_aborted; past the statement timeout it is
    // interrupted too and completes with error::statement_timeout. An interrupted statement's
    // changes are undone (in an explicit transaction, SQLite rolls the transaction back).
    //  Handler: void(error_code, result).
    template <class Token>
    auto async_query(std::string sql, Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code, result)>(
            [this](auto handler, std::string s) {
                auto hex = completion_executor(handler);
                start_query(std::move(s), params(), false, hex, std::move(handler));
            },
            token, std::move(sql));
    }
    // One statement with bound parameters (error::multiple_statements for a script).
    template <class Token>
    auto async_query(std::string sql, params p, Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code, result)>(
            [this](auto handler, std::string s, params q) {
                auto hex = completion_executor(handler);
                start_query(std::move(s), std::move(q), true, hex, std::move(handler));
            },
            token, std::move(sql), std::move(p));
    }

    // Runs fn(db) on the offload executor with SQLite's own handle, for what the API does not cover
    // (user functions, backups, sqlite3_blob). fn must leave no statement of its own running when it
    // returns (or the release resets it) and must not close the handle. After it the next reset runs
    // in full; what fn registers on the handle (functions, collations, hooks) stays: undo it in fn. Handler:
    // void(std::exception_ptr) carrying what fn threw; error::not_open (as boost::system::system_error) when
    // the connection is not open.
    template <class Token>
    auto async_run(respool::detail::unique_function<void(::sqlite3*)> fn, Token&& token) {
        return boost::asio::async_initiate<Token, void(std::exception_ptr)>(
            [this](auto handler, respool::detail::unique_function<void(::sqlite3*)> f) {
                auto hex = completion_executor(handler);
                start_run(std::move(f), hex, std::move(handler));
            },
            token, std::move(fn));
    }

    // Makes the connection fit for the next borrower: resets every statement still stepping
    // (sqlite3_next_stmt + sqlite3_stmt_busy), rolls back an open transaction (sqlite3_get_autocommit);
    // then, when `policy` says so (reset_policy), restores the session as it was after async_open:
    // every per-connection PRAGMA read back at the open set to that value again (foreign_keys,
    // synchronous, journal_mode, query_only, cache_size, temp_store, busy_timeout, ...), every
    // attached database detached, every TEMP object dropped, the connection's busy, progress and
    // authorizer handlers installed again. Handler: void(error_code); an error (among them
    // error::session_not_restorable: the borrower set a PRAGMA that is not among those restored) means
    // the connection could not be reset and must not be reused.
    template <class Token>
    auto async_reset(reset_policy policy, Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [this](auto handler, reset_policy p) {
                auto hex = completion_executor(handler);
                start_reset(p, hex, std::move(handler));
            },
            token, policy);
    }
    // async_reset(reset_policy::tracked, token).
    template <class Token>
    auto async_reset(Token&& token) {
        return async_reset(reset_policy::tracked, std::forward<Token>(token));
    }
    // Cheap, synchronous, no SQLite call: would async_reset(policy) have anything to do? (As of the end
    // of the last operation; true while one runs.)
    [[nodiscard]] bool needs_reset(reset_policy policy = reset_policy::tracked) const noexcept;
    // For session effects tracking cannot see: the next reset under `tracked` runs in full.
    void mark_dirty() noexcept;
    // Whether the last operation left a transaction open.
    [[nodiscard]] bool in_transaction() const noexcept;

    // A deadline for every statement from now on (zero: none, the default), checked by a progress
    // handler every few thousand virtual-machine steps and by the busy handler.
    void set_statement_timeout(std::chrono::steady_clock::duration timeout) noexcept;
    // Every statement this connection runs is shown to `tracer` as it ends, on the thread that ran it
    // (respool/trace.hpp); nullptr: none. Set it between operations. pool_config::tracer sets it on
    // each of the pool's connections.
    void set_tracer(std::shared_ptr<statement_tracer> tracer) noexcept;

    [[nodiscard]] bool is_open() const noexcept;
    [[nodiscard]] bool is_reader() const noexcept;
    [[nodiscard]] const std::string& path() const noexcept;
    [[nodiscard]] const diagnostics& last_error() const noexcept;
    [[nodiscard]] std::size_t cached_statements() const noexcept;

    struct impl;  // the sqlite3 handle, the statement cache, the operation under way

private:
    friend struct detail::connection_access;
    // Where a handler completes: its associated executor, or the connection's (read while the
    // handler's type is known; the type-erased handler's executor cannot be posted to).
    template <class Handler>
    boost::asio::any_io_executor completion_executor(const Handler& h) const {
        return boost::asio::get_associated_executor(h, get_executor());
    }
    using hex_t = boost::asio::any_io_executor;
    void start_open(connection_options o, hex_t hex,
                    boost::asio::any_completion_handler<void(error_code)> handler);
    void start_query(std::string sql, params p, bool bound, hex_t hex,
                     boost::asio::any_completion_handler<void(error_code, result)> handler);
    void start_run(respool::detail::unique_function<void(::sqlite3*)> fn, hex_t hex,
                   boost::asio::any_completion_handler<void(std::exception_ptr)> handler);
    void start_reset(reset_policy policy, hex_t hex,
                     boost::asio::any_completion_handler<void(error_code)> handler);

    std::shared_ptr<void> keep_alive_;  // the offload executor's owner, released after impl_
    std::shared_ptr<impl> impl_;        // shared with the operation under way, which may outlive a move
};

}  // namespace respool::sqlite
