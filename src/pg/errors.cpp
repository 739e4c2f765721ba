// The errors of the PostgreSQL layer: the connection's own (pg::error), the server's SQLSTATEs, and
// pg::condition, what a failure means, matched against both (docs/06-postgresql.md). Only
// connection-level failures (condition::connection_broken) poison a pooled connection.
#include <respool/pg/connection.hpp>

#include <string>
#include <string_view>

namespace respool::pg {

namespace {

struct condition_names final : boost::system::error_category {
    const char* name() const noexcept override { return "respool.pg.condition"; }
    std::string message(int v) const override {
        switch (static_cast<condition>(v)) {
        case condition::connection_broken: return "connection broken";
        case condition::unique_violation: return "unique violation";
        case condition::foreign_key_violation: return "foreign key violation";
        case condition::not_null_violation: return "not-null violation";
        case condition::check_violation: return "check violation";
        case condition::serialization_failure: return "serialization failure";
        case condition::deadlock: return "deadlock detected";
        case condition::read_only: return "read-only transaction (a standby)";
        case condition::query_cancelled: return "statement cancelled";
        case condition::syntax_error: return "syntax error";
        case condition::undefined_table: return "undefined table";
        case condition::insufficient_privilege: return "insufficient privilege";
        }
        return "unknown respool.pg condition";
    }
};

}  // namespace

const boost::system::error_category& condition_category() noexcept {
    static const condition_names c;
    return c;
}

boost::system::error_condition make_error_condition(condition c) noexcept {
    return {static_cast<int>(c), condition_category()};
}

namespace {

// Whether SQLSTATE `s` (five characters) means condition `c`.
bool sqlstate_means(std::string_view s, condition c) noexcept {
    switch (c) {
    case condition::connection_broken:
        return s.compare(0, 2, "08") == 0 || s == "57P01" || s == "57P02" || s == "57P03";
    case condition::unique_violation: return s == "23505";
    case condition::foreign_key_violation: return s == "23503";
    case condition::not_null_violation: return s == "23502";
    case condition::check_violation: return s == "23514";
    case condition::serialization_failure: return s == "40001";
    case condition::deadlock: return s == "40P01";
    case condition::read_only: return s == "25006";
    case condition::query_cancelled: return s == "57014";
    case condition::syntax_error: return s == "42601";
    case condition::undefined_table: return s == "42P01";
    case condition::insufficient_privilege: return s == "42501";
    }
    return false;
}

// Whether SQLSTATE `s` (five characters) means the database-neutral condition `c`. Every SQLSTATE is
// a database_error; the classes the server uses for "try again later" are unavailable.
bool sqlstate_means(std::string_view s, db::condition c) noexcept {
    const std::string_view cls = s.substr(0, 2);
    switch (c) {
    case db::condition::database_error: return true;
    // Class 08 (connection exception), class 28 (authentication), 57P01-57P03 (shutting down, crashed,
    // not accepting connections), 53300 (too many connections), 25006 (a read-only transaction: the
    // server became a standby, a failover is under way and the pool reconnects to the new primary).
    case db::condition::unavailable:
        return cls == "08" || cls == "28" || s == "57P01" || s == "57P02" || s == "57P03" || s == "53300" ||
               s == "25006";
    case db::condition::connection_broken: return sqlstate_means(s, condition::connection_broken);
    case db::condition::statement_timeout: return s == "57014";                      // query_canceled
    case db::condition::serialization_failure: return s == "40001" || s == "40P01";  // or a deadlock
    case db::condition::constraint_violation: return cls == "23";
    case db::condition::unique_violation: return s == "23505";
    case db::condition::foreign_key_violation: return s == "23503";
    case db::condition::not_null_violation: return s == "23502";
    case db::condition::check_violation: return s == "23514";
    case db::condition::read_only: return s == "25006";
    // Class 22 (data exception: a parameter's value), class 42 (syntax error, undefined object, ...)
    // but 42501, a missing privilege: the statement is fine, the role may not run it.
    case db::condition::invalid_statement: return cls == "22" || (cls == "42" && s != "42501");
    // The server waits for locks (lock_timeout ends in 55P03, not busy); the others are the pool's.
    case db::condition::busy:
    case db::condition::operation_in_progress:
    case db::condition::exhausted:
    case db::condition::closed:
    case db::condition::cancelled: return false;
    }
    return false;
}

// Whether the connection's own error `e` means the database-neutral condition `c`. No default:
// -Wswitch names an error added without a decision.
bool error_means(error e, db::condition c) noexcept {
    switch (e) {
    case error::bad_connection_string: return false;  // configuration: no retry fixes it
    case error::connect_failed:
    case error::connect_timeout:
    case error::connection_broken:
        return c == db::condition::unavailable || c == db::condition::connection_broken;
    case error::authentication_failed:  // no connection can be made (a rotated password, say)
    case error::not_connected:          // what a statement on a connection that broke says
        return c == db::condition::unavailable;
    case error::busy: return c == db::condition::operation_in_progress;
    case error::statement_timeout: return c == db::condition::statement_timeout;
    case error::unsupported_statement: return c == db::condition::invalid_statement;
    case error::copy_aborted: return false;  // the caller's own code failed: nothing the pool knows
    }
    return false;
}

// Whether the connection's own error `e` means condition `c`.
bool error_means(error e, condition c) noexcept {
    switch (e) {
    case error::connect_failed:
    case error::connect_timeout:
    case error::connection_broken: return c == condition::connection_broken;
    case error::statement_timeout: return c == condition::query_cancelled;
    default: return false;
    }
}

}  // namespace

// ---- error codes ------------------------------------------------------------------------------

namespace {

class pg_category final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "respool.pg"; }
    bool equivalent(int code, const boost::system::error_condition& cond) const noexcept override {
        if (cond.category() == condition_category())
            return error_means(static_cast<error>(code), static_cast<condition>(cond.value()));
        if (cond.category() == db::condition_category())
            return error_means(static_cast<error>(code), static_cast<db::condition>(cond.value()));
        return default_error_condition(code) == cond;
    }
    std::string message(int v) const override {
        switch (static_cast<error>(v)) {
        case error::bad_connection_string: return "bad connection string";
        case error::connect_failed: return "could not connect to the server";
        case error::authentication_failed: return "authentication failed";
        case error::connect_timeout: return "connect timed out";
        case error::connection_broken: return "connection broken";
        case error::not_connected: return "not connected";
        case error::busy: return "another operation is under way on this connection";
        case error::statement_timeout: return "statement timed out (cancelled on the server)";
        case error::unsupported_statement:
            return "this kind of statement cannot run through this call (COPY FROM STDIN / TO STDOUT)";
        case error::copy_aborted: return "COPY aborted: the rows' range or the output's sink threw";
        }
        return "unknown respool.pg error";
    }
};

class state_category final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "respool.pg.sqlstate"; }
    bool equivalent(int code, const boost::system::error_condition& cond) const noexcept override {
        if (cond.category() == condition_category())
            return sqlstate_means(decode(code), static_cast<condition>(cond.value()));
        if (cond.category() == db::condition_category())
            return sqlstate_means(decode(code), static_cast<db::condition>(cond.value()));
        return default_error_condition(code) == cond;
    }
    std::string message(int v) const override { return "SQLSTATE " + decode(v); }
    static std::string decode(int v) {
        std::string s(5, '0');
        for (int i = 4; i >= 0; --i) {
            const int d = v % 36;
            s[static_cast<std::size_t>(i)] = static_cast<char>(d < 10 ? '0' + d : 'A' + d - 10);
            v /= 36;
        }
        return s;
    }
};

}  // namespace

const boost::system::error_category& category() noexcept {
    static const pg_category c;
    return c;
}
error_code make_error_code(error e) noexcept {
    return {static_cast<int>(e), category()};
}
const boost::system::error_category& sqlstate_category() noexcept {
    static const state_category c;
    return c;
}
error_code sqlstate_error(std::string_view s) noexcept {
    int v = 0;
    for (std::size_t i = 0; i < 5; ++i) {
        const char ch = i < s.size() ? s[i] : '0';
        const int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'A' && ch <= 'Z' ? ch - 'A' + 10 : 0;
        v = v * 36 + d;
    }
    return {v, sqlstate_category()};
}
std::string sqlstate_of(const error_code& ec) {
    return ec.category() == sqlstate_category() ? state_category::decode(ec.value()) : std::string();
}

// ---- failures in words ------------------------------------------------------------------------

std::string describe(const error_code& ec, const diagnostics& d) {
    if (d.message.empty()) return ec.message();
    if (!d.sqlstate.empty()) return d.message + " (SQLSTATE " + d.sqlstate + ")";
    return d.message + " (" + ec.message() + ")";
}

error_with_diagnostics::error_with_diagnostics(const error_code& ec, diagnostics d)
    : boost::system::system_error(ec), diag_(std::move(d)), what_(describe(ec, diag_)) {}

}  // namespace respool::pg
