// respool::pg::connection: one PostgreSQL connection driven asynchronously over libpq on an Asio
// executor (the first step of the PostgreSQL layer: connect, simple-protocol queries, ping, errors).
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

#include <respool/error.hpp>

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

namespace respool::pg {

// The connection's own failures (the server's errors are SQLSTATE codes, see sqlstate_category).
enum class error {
    bad_connection_string = 1,  // libpq could not parse it (the message names the part)
    connect_failed,             // no server reached, or it refused the connection
    authentication_failed,      // the server rejected the credentials (SQLSTATE 28P01 / 28000)
    connect_timeout,            // the connect deadline passed (DNS, TCP, TLS and auth together)
    connection_broken,          // the socket or the protocol failed: the connection is unusable
    not_connected,              // an operation on a connection that is not open
    busy,                       // an operation while another one runs on this connection
    statement_timeout,          // the statement ran past set_statement_timeout(): cancelled on the server
};
const boost::system::error_category& category() noexcept;
error_code make_error_code(error e) noexcept;

// A server error: the value is the SQLSTATE in base 36 (five characters, e.g. "42P01"); message() says
// "SQLSTATE 42P01". Built with sqlstate_error("42P01"); read back with sqlstate_of(ec).
const boost::system::error_category& sqlstate_category() noexcept;
error_code sqlstate_error(std::string_view sqlstate) noexcept;
std::string sqlstate_of(const error_code& ec);

// What a failure means, for tests like `if (ec == pg::condition::unique_violation)`: each condition
// matches the SQLSTATEs (and the connection's own errors) that mean it.
enum class condition {
    connection_broken =
        1,             // the connection is unusable: pg::error::connection_broken / connect_failed /
                       // connect_timeout, SQLSTATE class 08, 57P01-57P03 (server shutting down, crashed,
                       // not accepting connections); the one kind of failure that poisons a pooled connection
    unique_violation,  // 23505
    foreign_key_violation,   // 23503
    not_null_violation,      // 23502
    check_violation,         // 23514
    serialization_failure,   // 40001: retry the transaction
    deadlock,                // 40P01: retry the transaction
    read_only,               // 25006: the server is (now) a standby; a failover happened
    query_cancelled,         // 57014: cancelled or past statement_timeout on the server
    syntax_error,            // 42601
    undefined_table,         // 42P01
    insufficient_privilege,  // 42501
};
const boost::system::error_category& condition_category() noexcept;
boost::system::error_condition make_error_condition(condition c) noexcept;

// What the server (or libpq) said about the last failure, connection strings masked.
struct diagnostics {
    std::string sqlstate;  // empty for client-side failures
    std::string severity;  // ERROR, FATAL, PANIC
    std::string message;
    std::string detail;
    std::string hint;
    int position = 0;  // 1-based character in the statement, 0 = none
};

// The connection string with the password's value replaced by "***" (keyword/value and URI forms).
std::string masked(std::string_view conninfo);

// The bound parameters $1, $2, ... of a statement, sent apart from its text (nothing to quote, nothing to
// inject). Integers, floating point and bool go in binary with their type; strings as text of a type the
// server infers from the statement; byte spans as bytea; std::nullopt (or an empty std::optional) as NULL.
//   c.async_query("SELECT name FROM users WHERE id = $1 AND active = $2", pg::params(42, true), token);
class params {
public:
    params() = default;
    template <class... T>
    explicit params(const T&... v) {
        (add(v), ...);
    }
    params& add(std::nullopt_t);
    params& add(bool v);
    params& add(std::int16_t v);
    params& add(std::int32_t v);
    params& add(std::int64_t v);
    params& add(float v);
    params& add(double v);
    params& add(std::string_view v);
    params& add(const char* v) { return add(std::string_view(v)); }
    params& add(const std::string& v) { return add(std::string_view(v)); }
    params& add(std::span<const std::byte> v);  // bytea
    params& add(const std::vector<std::byte>& v) { return add(std::span<const std::byte>(v)); }
    template <class T>
    params& add(const std::optional<T>& v) {
        return v ? add(*v) : add(std::nullopt);
    }
    [[nodiscard]] std::size_t size() const noexcept { return types_.size(); }

private:
    friend struct params_access;
    params& push(unsigned type, std::string value, bool binary, bool null = false);
    std::vector<unsigned> types_;  // OIDs; 0 = let the server infer
    std::vector<std::string> values_;
    std::vector<int> formats_;  // 1 = binary
    std::vector<bool> nulls_;
};

// The rows of one statement: the fields as the server wrote them in text, read as text or as C++ values.
class result {
public:
    result() = default;
    [[nodiscard]] std::size_t rows() const noexcept { return rows_; }
    [[nodiscard]] std::size_t columns() const noexcept { return names_.size(); }
    [[nodiscard]] const std::string& column_name(std::size_t c) const { return names_.at(c); }
    [[nodiscard]] bool is_null(std::size_t row, std::size_t col) const { return !cell(row, col).has_value(); }
    // The field as text; throws std::out_of_range for a cell outside the result, std::logic_error for NULL.
    [[nodiscard]] const std::string& text(std::size_t row, std::size_t col) const;
    // The field as a C++ value: bool, std::int16_t/int32_t/int64_t, float, double, std::string,
    // std::vector<std::byte> (bytea), or std::optional of one of them (nullopt for NULL). Throws
    // std::logic_error for NULL into a non-optional, std::invalid_argument (naming the column and the
    // text) when the text is not such a value.
    template <class T>
    [[nodiscard]] T get(std::size_t row, std::size_t col) const {
        if constexpr (is_optional<T>::value) {
            if (is_null(row, col)) return std::nullopt;
            return get<typename T::value_type>(row, col);
        } else {
            T out{};
            parse(row, col, out);
            return out;
        }
    }
    [[nodiscard]] std::uint64_t affected_rows() const noexcept { return affected_; }
    [[nodiscard]] const std::string& command_tag() const noexcept {
        return tag_;
    }  // "INSERT 0 3", "SELECT 1"

private:
    friend struct result_access;
    template <class T>
    struct is_optional : std::false_type {};
    template <class T>
    struct is_optional<std::optional<T>> : std::true_type {};
    void parse(std::size_t row, std::size_t col, bool& out) const;
    void parse(std::size_t row, std::size_t col, std::int16_t& out) const;
    void parse(std::size_t row, std::size_t col, std::int32_t& out) const;
    void parse(std::size_t row, std::size_t col, std::int64_t& out) const;
    void parse(std::size_t row, std::size_t col, float& out) const;
    void parse(std::size_t row, std::size_t col, double& out) const;
    void parse(std::size_t row, std::size_t col, std::string& out) const;
    void parse(std::size_t row, std::size_t col, std::vector<std::byte>& out) const;
    [[nodiscard]] const std::optional<std::string>& cell(std::size_t row, std::size_t col) const;
    std::size_t rows_ = 0;
    std::vector<std::string> names_;
    std::vector<std::optional<std::string>> cells_;  // row-major
    std::uint64_t affected_ = 0;
    std::string tag_;
};

// A NOTIFY delivered to a connection that LISTENs on its channel.
struct notification {
    std::string channel;
    std::string payload;
    int sender_pid = 0;  // the notifying backend
};

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
            [this](auto handler, std::string s) { start_query(std::move(s), std::move(handler)); }, token,
            std::move(sql));
    }

    // Runs one statement with bound parameters (the extended protocol; no statement cache yet). A
    // parameter the statement does not use, or a missing one, is the server's error. Handler:
    // void(error_code, result).
    template <class Token>
    auto async_query(std::string sql, params p, Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code, result)>(
            [this](auto handler, std::string s, params q) {
                start_query_params(std::move(s), std::move(q), std::move(handler));
            },
            token, std::move(sql), std::move(p));
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
    // the server has not ended the statement within 5 s of the cancel request, it is closed.
    void set_statement_timeout(std::chrono::steady_clock::duration timeout) noexcept;

    [[nodiscard]] bool is_open() const noexcept;
    [[nodiscard]] const diagnostics& last_error() const noexcept;
    // The connection string it was opened with, password masked.
    [[nodiscard]] const std::string& conninfo() const noexcept;
    // The server's process id for this connection (pg_stat_activity.pid), 0 when not open.
    [[nodiscard]] int backend_pid() const noexcept;
    void close() noexcept;

    struct impl;  // libpq's PGconn, the socket registration, the operation under way

private:
    void start_connect(std::string conninfo, std::chrono::steady_clock::duration timeout,
                       boost::asio::any_completion_handler<void(error_code)> handler);
    void start_query(std::string sql, boost::asio::any_completion_handler<void(error_code, result)> handler);
    void start_query_params(std::string sql, params p,
                            boost::asio::any_completion_handler<void(error_code, result)> handler);
    void start_ping(boost::asio::any_completion_handler<void(error_code)> handler);
    void start_wait_notification(boost::asio::any_completion_handler<void(error_code, notification)> handler);

    std::shared_ptr<impl> impl_;  // shared with the operation under way, which may outlive a move
};

}  // namespace respool::pg

template <>
struct boost::system::is_error_code_enum<respool::pg::error> : std::true_type {};
template <>
struct boost::system::is_error_condition_enum<respool::pg::condition> : std::true_type {};
