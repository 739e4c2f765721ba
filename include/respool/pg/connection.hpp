// respool::pg::connection: one PostgreSQL connection driven asynchronously over libpq on an Asio
// executor: connect, queries (scripts, bound parameters through a statement cache), ping, LISTEN/NOTIFY,
// cancellation, the session reset a pool runs on release, errors.
//
//   pg::connection c(io.get_executor());
//   co_await c.async_connect("host=127.0.0.1 dbname=app user=app password=...", 5s, asio::use_awaitable);
//   pg::result r = co_await c.async_query("SELECT 1", asio::use_awaitable);
//
// Every async operation takes any completion token, completes on the handler's associated executor (the
// connection's own otherwise), and never inside the initiating call. One operation at a time per
// connection (a connection is lent to one borrower). Errors are error_codes: respool::pg::error for the
// connection's own failures, a SQLSTATE (pg::sqlstate_category) for the server's, with the server's
// diagnostics in last_error(). A connection string never appears unmasked: masked() removes the
// password from every text this class produces.
#pragma once

#include <respool/detail/asio_build.hpp>
#include <respool/detail/handler_executor.hpp>
#include <respool/pg/batch.hpp>
#include <respool/pg/copy.hpp>
#include <respool/pg/errors.hpp>
#include <respool/pg/values.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace respool {
class statement_tracer;
}

RESPOOL_LAYER_ASIO_BUILD_CHECK(pg)  // a mixed Asio build fails to link (detail/asio_build.hpp)

namespace respool::pg {

// How statements with bound parameters are sent. `cache` (the default): each connection prepares a
// statement once, under a name of its own, and keeps it in a least-recently-used cache (keyed by the
// SQL text and the parameter types); `unnamed`: libpq's unnamed statement every time (one round trip
// too, but parsed and planned each time) -- for PgBouncer in transaction mode, where a named statement
// may not exist on the server connection the next transaction gets.
enum class statement_mode { cache, unnamed };

// What a connection returned to a pool gets before the next borrower (docs/06-postgresql.md).
// An open or failed transaction is always rolled back and a statement still running is always
// cancelled; then `tracked` (the default) resets the session only when the borrower changed it (SET,
// LISTEN, temporary objects, PREPARE, advisory locks, set_config: seen in command tags, the SQL sent
// and the server's ParameterStatus reports, or mark_dirty()); `always` resets it every time; `none`
// never (the borrower's session settings reach the next borrower).
enum class reset_policy { tracked, always, none };

// PQtransactionStatus: where the session stands between statements.
enum class transaction_status { idle, active, in_transaction, in_error, unknown };

namespace detail {
struct connection_access;
}

class connection {
public:
    explicit connection(boost::asio::any_io_executor ex);
    ~connection();  // closes (PQfinish), after taking the socket back from Asio
    connection(connection&&) noexcept;
    connection& operator=(connection&&) noexcept;
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    [[nodiscard]] const boost::asio::any_io_executor& get_executor() const noexcept;

    // Opens the connection. `conninfo`: keyword/value or URI (libpq's forms). A host name is resolved
    // with Asio (never libpq's blocking lookup) and passed as hostaddr. `timeout` bounds the whole
    // connect: resolution, TCP, TLS and authentication. Handler: void(error_code).
    template <class Token>
    auto async_connect(std::string conninfo, std::chrono::steady_clock::duration timeout, Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [this](auto handler, std::string info, std::chrono::steady_clock::duration t) {
                start_connect(std::move(info), t, std::move(handler));
            },
            token, std::move(conninfo), timeout);
    }

    // Runs `sql` (one statement or several; the last statement's rows are returned) with the simple
    // query protocol. A server error completes with its SQLSTATE (diagnostics in last_error()); the
    // connection stays usable. Handler: void(error_code, result).
    template <class Token>
    auto async_query(std::string sql, Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code, result)>(
            [this](auto handler, std::string s) {
                auto ex = respool::detail::io_executor_of(handler, get_executor());  // before it moves
                start_query(std::move(s), std::move(handler), std::move(ex));
            },
            token, std::move(sql));
    }

    // Runs one statement with bound parameters (the extended protocol), prepared once per connection
    // and cached (statement_mode). A cached statement the server no longer accepts (0A000 "cached
    // plan must not change result type" after its table changed, 26000 after a DEALLOCATE by hand) is
    // prepared again and run once more when no transaction was open; in a transaction the error is
    // returned (the transaction is aborted). A parameter the statement does not use, or a missing
    // one, is the server's error. Handler: void(error_code, result).
    template <class Token>
    auto async_query(std::string sql, params p, Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code, result)>(
            [this](auto handler, std::string s, params q) {
                auto ex = respool::detail::io_executor_of(handler, get_executor());  // before it moves
                start_query_params(std::move(s), std::move(q), std::move(handler), std::move(ex));
            },
            token, std::move(sql), std::move(p));
    }

    // Runs the batch's statements in one round trip (pipeline mode, each with its own Sync: its own
    // implicit transaction unless the batch opened one), each with its outcome, in order. Handler:
    // void(error_code, std::vector<batch_outcome>): the error is the first failed statement's (or
    // unsupported_statement, nothing sent, for a COPY to or from the client); the outcomes are there
    // either way. The statement timeout applies to each statement. A statement that changes the
    // session (SET, LISTEN, ...) marks the connection for the reset on return. An Asio cancellation
    // (terminal, partial, total) ends every statement not yet answered with operation_aborted and asks
    // the server to stop the one it runs; a statement already sent may still have run. The handler
    // runs once the connection is idle again.
    template <class Token>
    auto async_execute(batch b, Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code, std::vector<batch_outcome>)>(
            [this](auto handler, batch bb) { start_execute(std::move(bb), std::move(handler)); }, token,
            std::move(b));
    }

    // COPY ... FROM STDIN (respool/pg/copy.hpp): `rows` (a range of tuples, of structs described with
    // BOOST_DESCRIBE_STRUCT, or of aggregates) streamed into `table` ("people", or "people (id, name)"
    // to name the columns; a described struct names its members' columns when `table` names none),
    // encoded in chunks of about 64 KiB as the socket takes them: the whole input is never held in
    // memory. An lvalue range must live until the handler runs. The statement timeout covers the
    // whole COPY; past it, or on an Asio cancellation, the COPY is ended with a failure (the server
    // rolls it back: the table is unchanged) and the operation completes with statement_timeout or
    // asio::error::operation_aborted, the connection drained and usable (closed when the server does not
    // answer within the cancel drain limit). A row the range or its encoding throws for (a string with
    // a NUL byte, say) aborts it the same way with error::copy_aborted, its what() in last_error(). A
    // value the server refuses fails with its SQLSTATE and words (last_error()).
    // Handler: void(error_code, std::uint64_t rows) (the rows the server stored).
    template <class Range, class Token>
    auto async_copy_in(std::string table, Range&& rows, copy_options o, Token&& token) {
        std::string sql = detail::copy_in_statement_for<Range>(table, o.format);
        return boost::asio::async_initiate<Token, void(error_code, std::uint64_t)>(
            [this, o](auto handler, std::string s, std::unique_ptr<detail::copy_rows> r) {
                start_copy_in(std::move(s), std::move(r), o, std::move(handler));
            },
            token, std::move(sql), detail::make_copy_rows(std::forward<Range>(rows)));
    }

    // COPY ... TO STDOUT: `sink(std::string_view chunk)` is called for each piece of data as it
    // arrives (in text format one row, its newline included; in binary format the pieces of the
    // binary COPY stream, header and trailer included), never the whole output at once. The view is
    // valid during the call. `query_or_table`: a query (starting with SELECT, WITH, VALUES or TABLE)
    // or a table ("people", "people (id, name)"). Deadline and cancellation as async_copy_in (the
    // server is asked to cancel, the rest of the output is read and dropped); a sink that throws
    // aborts it the same way with error::copy_aborted, its what() in last_error().
    // Handler: void(error_code, std::uint64_t rows).
    template <class Sink, class Token>
    auto async_copy_out(std::string query_or_table, Sink sink, copy_options o, Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code, std::uint64_t)>(
            [this, o](auto handler, std::string s, detail::copy_sink k) {
                start_copy_out(std::move(s), std::move(k), o, std::move(handler));
            },
            token, detail::copy_out_statement(query_or_table, o.format), detail::copy_sink(std::move(sink)));
    }

    // The next notification for a channel this connection LISTENs on (LISTEN is a statement: run it
    // with async_query). Notifications that arrived during other operations are kept, in order, and
    // delivered first; none is lost between waits. An Asio cancellation ends the wait with
    // asio::error::operation_aborted and leaves the connection usable. Handler:
    // void(error_code, notification).
    template <class Token>
    auto async_wait_notification(Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code, notification)>(
            [this](auto handler) { start_wait_notification(std::move(handler)); }, token);
    }

    // Makes the session fit for the next borrower under `policy` (see reset_policy): cancels and drains
    // the operation under way (or closes the connection when the server does not end it within 5 s),
    // rolls back an open transaction and, when due, runs the session reset (CLOSE ALL, SET SESSION
    // AUTHORIZATION DEFAULT, RESET ALL, UNLISTEN *, pg_advisory_unlock_all(), DISCARD TEMP, DISCARD
    // SEQUENCES; DEALLOCATE ALL after a PREPARE by hand), all in one round trip, none when clean.
    // Asio cancellation closes the connection. Handler: void(error_code); an error means the
    // connection could not be reset and must not be reused.
    template <class Token>
    auto async_reset(reset_policy policy, Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [this](auto handler, reset_policy p) { start_reset(p, std::move(handler)); }, token, policy);
    }
    // Cheap and synchronous: would async_reset(policy) have anything to do?
    [[nodiscard]] bool needs_reset(reset_policy policy) const noexcept;
    // For session effects tracking cannot see: the next reset under `tracked` runs in full.
    void mark_dirty() noexcept;

    // No round trip: reads what the socket already holds and says whether the connection is still
    // usable. Catches a terminated backend, a server shut down or restarted (they say FATAL and close
    // the socket); not a silent network partition (that needs async_ping). When the server answered
    // within `trust_for` (see last_reply), the socket is not looked at, only the connection's own
    // state: no system call (a pool's borrows under load).
    [[nodiscard]] bool alive_nowait(std::chrono::steady_clock::duration trust_for = {}) noexcept;
    // When the last operation on the connection ended with the server's answer (connect, statement,
    // reset); the epoch before any.
    [[nodiscard]] std::chrono::steady_clock::time_point last_reply() const noexcept;
    [[nodiscard]] transaction_status transaction_state() const noexcept;
    // A statement failed with read_only (25006) while the server reports itself read-only
    // (default_transaction_read_only or in_hot_standby on): the server was demoted, a failover.
    [[nodiscard]] bool failover_detected() const noexcept;
    // A setting the server reports by itself (ParameterStatus: server_version, in_hot_standby,
    // default_transaction_read_only, TimeZone, ...) as of the last reply; empty when the server has
    // not reported it or the connection is not open. No round trip.
    [[nodiscard]] std::string_view parameter_status(const char* name) const noexcept;

    // Statements with bound parameters from now on (the cache is kept; capacity 0 turns it off).
    void set_statement_mode(statement_mode mode, std::size_t cache_capacity = 512) noexcept;
    [[nodiscard]] std::size_t cached_statements() const noexcept;

    // A round trip that proves the connection alive (an empty query). Handler: void(error_code).
    template <class Token>
    auto async_ping(Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [this](auto handler) { start_ping(std::move(handler)); }, token);
    }

    // A deadline for every statement from now on (zero: none, the default). Past it the statement is
    // cancelled on the server and the query completes with error::statement_timeout; an Asio
    // cancellation of the query (terminal, partial or total) does the same and completes with
    // asio::error::operation_aborted. Either way the connection is drained and stays usable, or, when
    // the server has not ended the statement within the cancel drain limit, it is closed.
    void set_statement_timeout(std::chrono::steady_clock::duration timeout) noexcept;
    // Every statement this connection runs is shown to `tracer` as it ends (respool/trace.hpp);
    // nullptr: none. pool_config::tracer sets it on each of the pool's connections.
    void set_tracer(std::shared_ptr<statement_tracer> tracer) noexcept;
    // How long after a cancel request (a deadline, an Asio cancellation) the server gets to end the
    // statement, its reply read and every cancel request returned, before the connection is closed
    // instead (1 s by default): the query completes at most this long after it was cancelled, also when
    // the network path to the server is lost (a blackhole: no reply, no returning request).
    void set_cancel_drain_limit(std::chrono::steady_clock::duration limit) noexcept;

    [[nodiscard]] bool is_open() const noexcept;
    [[nodiscard]] const diagnostics& last_error() const noexcept;
    // The connection string it was opened with, password masked.
    [[nodiscard]] const std::string& conninfo() const noexcept;
    // The server's process id for this connection (pg_stat_activity.pid), 0 when not open.
    [[nodiscard]] int backend_pid() const noexcept;
    void close() noexcept;

    struct impl;  // libpq's PGconn, the socket registration, the operation under way

private:
    friend struct detail::connection_access;  // the pool's pipelined statements (src/pg/pipeline.cpp)

    void start_connect(std::string conninfo, std::chrono::steady_clock::duration timeout,
                       boost::asio::any_completion_handler<void(error_code)> handler);
    // `handler_ex`: the handler's executor when it is an any_io_executor (handler_executor.hpp).
    void start_query(std::string sql, boost::asio::any_completion_handler<void(error_code, result)> handler,
                     boost::asio::any_io_executor handler_ex);
    void start_query_params(std::string sql, params p,
                            boost::asio::any_completion_handler<void(error_code, result)> handler,
                            boost::asio::any_io_executor handler_ex);
    void start_ping(boost::asio::any_completion_handler<void(error_code)> handler);
    void start_wait_notification(boost::asio::any_completion_handler<void(error_code, notification)> handler);
    void start_execute(
        batch b, boost::asio::any_completion_handler<void(error_code, std::vector<batch_outcome>)> handler);
    void start_reset(reset_policy policy, boost::asio::any_completion_handler<void(error_code)> handler);
    void start_copy_in(std::string sql, std::unique_ptr<detail::copy_rows> rows, copy_options o,
                       boost::asio::any_completion_handler<void(error_code, std::uint64_t)> handler);
    void start_copy_out(std::string sql, detail::copy_sink sink, copy_options o,
                        boost::asio::any_completion_handler<void(error_code, std::uint64_t)> handler);

    std::shared_ptr<impl> impl_;  // shared with the operation under way, which may outlive a move
};

}  // namespace respool::pg
