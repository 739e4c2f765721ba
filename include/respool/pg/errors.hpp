// respool::pg errors: the connection's own failures (pg::error), the server's SQLSTATEs (a category of
// their own), the conditions that say what a failure means (pg::condition, e.g. connection_broken, the
// one kind that poisons a pooled connection), the server's diagnostics, and connection-string masking.
#pragma once

#include <respool/db_condition.hpp>
#include <respool/error.hpp>

#include <boost/system/system_error.hpp>

#include <string>
#include <string_view>

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
    // A statement of a kind this call cannot carry (COPY ... FROM STDIN / TO STDOUT through async_query),
    // refused before it is sent; the diagnostics name what to use instead.
    unsupported_statement,
    // A COPY ended by the caller's own code: the rows' range (or the encoding of one of its values) or
    // the output's sink threw. The exception's what() is the diagnostics' message.
    copy_aborted,
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

// The text with every password replaced by "***": a connection string (keyword/value and URI forms),
// or any text that may quote one or a piece of one (libpq's messages, a command line's error). Every
// message, log line and metric respool makes from a connection string goes through it.
std::string masked(std::string_view text);

// Why libpq would refuse the connection string, at parse time or when a connect starts (an option's
// value malformed: port, sslmode, connect_timeout, more ports than hosts, ...), naming the option,
// masked; empty when it would not.
std::string conninfo_error(std::string_view conninfo);

// A failure in words: the server's message and its SQLSTATE, `relation "nope" does not exist (SQLSTATE
// 42P01)`; for the connection's own failures, libpq's message and the code's, `connection refused
// ... (connect failed)`; the code's message alone when `d` has no message.
std::string describe(const error_code& ec, const diagnostics& d);

// What with_connection and transaction throw when a statement fails (in fn, BEGIN or COMMIT): a
// boost::system::system_error (code() is the failure's code, so `catch (system_error&)` and
// `e.code() == pg::condition::...` work as before) whose what() is describe(code(), diagnostics),
// and the server's diagnostics whole.
class error_with_diagnostics : public boost::system::system_error {
public:
    error_with_diagnostics(const error_code& ec, diagnostics d);
    [[nodiscard]] const diagnostics& get_diagnostics() const noexcept { return diag_; }
    [[nodiscard]] const char* what() const noexcept override { return what_.c_str(); }

private:
    diagnostics diag_;
    std::string what_;
};

}  // namespace respool::pg

template <>
struct boost::system::is_error_code_enum<respool::pg::error> : std::true_type {};
template <>
struct boost::system::is_error_condition_enum<respool::pg::condition> : std::true_type {};
