// pg::condition: what a failure means, matched against the connection's own errors and the server's
// SQLSTATEs (docs/06-postgresql.md). SPEC §3.1 names what counts as connection-level.
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

}  // namespace respool::pg
