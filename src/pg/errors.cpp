// The errors of the PostgreSQL layer: the connection's own (pg::error), the server's SQLSTATEs, and
// pg::condition, what a failure means, matched against both (docs/06-postgresql.md). SPEC §3.1 names
// what counts as connection-level.
#include <respool/pg/connection.hpp>

#include <string>

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
bool sqlstate_means(const std::string& s, condition c) noexcept {
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
