// The SQLite layer's category (SQLite's result codes and the layer's own failures) and its conditions
// (what a failure means; docs/07-sqlite.md). The connection-level ones are those after which SQLite's
// handle cannot be trusted: the file could not be opened, is damaged or is not a database, or I/O failed.
#include <respool/sqlite/errors.hpp>

#include <boost/asio/error.hpp>

#include <sqlite3.h>

#include <string>

namespace respool::sqlite {

namespace {

constexpr int own_base = 0x10000;

// Whether SQLite result code `rc` (extended, > 0) means the database-neutral condition `c`. Every
// result code is a database_error.
bool code_means(int rc, db::condition c) noexcept {
    const int primary = rc & 0xff;
    switch (c) {
    case db::condition::database_error: return true;
    // The file cannot be opened or read now; a damaged file (SQLITE_CORRUPT, SQLITE_NOTADB) is broken
    // but not unavailable: no retry mends it.
    case db::condition::unavailable: return primary == SQLITE_CANTOPEN || primary == SQLITE_IOERR;
    case db::condition::connection_broken:
        return primary == SQLITE_CANTOPEN || primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT ||
               primary == SQLITE_IOERR;
    case db::condition::busy: return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
    case db::condition::statement_timeout: return primary == SQLITE_INTERRUPT;
    // A WAL read transaction whose snapshot went stale cannot become a write: run it again.
    case db::condition::serialization_failure: return rc == SQLITE_BUSY_SNAPSHOT;
    case db::condition::constraint_violation: return primary == SQLITE_CONSTRAINT;
    case db::condition::unique_violation:
        return rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY;
    case db::condition::foreign_key_violation: return rc == SQLITE_CONSTRAINT_FOREIGNKEY;
    case db::condition::not_null_violation: return rc == SQLITE_CONSTRAINT_NOTNULL;
    case db::condition::check_violation: return rc == SQLITE_CONSTRAINT_CHECK;
    case db::condition::read_only: return primary == SQLITE_READONLY;
    // SQLITE_ERROR: a syntax error, no such table or column, ...; SQLITE_RANGE: a parameter index out
    // of range; SQLITE_MISMATCH: a value of the wrong type for the column (an INTEGER PRIMARY KEY).
    case db::condition::invalid_statement:
        return primary == SQLITE_ERROR || primary == SQLITE_RANGE || primary == SQLITE_MISMATCH;
    case db::condition::operation_in_progress:
    case db::condition::exhausted:
    case db::condition::closed:
    case db::condition::cancelled: return false;
    }
    return false;
}

// Whether the layer's own failure `e` means the database-neutral condition `c`. No default: -Wswitch
// names an error added without a decision.
bool own_error_means(error e, db::condition c) noexcept {
    switch (e) {
    case error::statement_timeout: return c == db::condition::statement_timeout;
    case error::not_open: return c == db::condition::unavailable || c == db::condition::connection_broken;
    case error::operation_in_progress: return c == db::condition::operation_in_progress;
    case error::writes_on_reader: return c == db::condition::read_only;
    case error::multiple_statements:
    case error::parameter_count: return c == db::condition::invalid_statement;
    case error::session_not_restorable: return false;  // the connection is replaced; not the caller's error
    }
    return false;
}

struct sqlite_errors final : boost::system::error_category {
    const char* name() const noexcept override { return "respool.sqlite"; }
    bool equivalent(int v, const boost::system::error_condition& cond) const noexcept override {
        if (cond.category() == db::condition_category()) {
            const auto c = static_cast<db::condition>(cond.value());
            if (v >= own_base) return own_error_means(static_cast<error>(v), c);
            return v > 0 && code_means(v, c);
        }
        return default_error_condition(v) == cond;
    }
    std::string message(int v) const override {
        switch (static_cast<error>(v)) {
        case error::statement_timeout: return "statement timeout: the statement was interrupted";
        case error::not_open: return "the connection is not open";
        case error::operation_in_progress: return "another operation is running on this connection";
        case error::writes_on_reader: return "a reader connection runs one read-only statement only";
        case error::multiple_statements: return "bound parameters with more than one statement";
        case error::parameter_count:
            return "the statement's parameters and the values given differ in number";
        case error::session_not_restorable:
            return "the connection's session holds a setting the reset cannot restore";
        }
        if (v >= own_base) return "unknown respool.sqlite error " + std::to_string(v);
        return std::string(::sqlite3_errstr(v)) + " (SQLite result code " + std::to_string(v) + ")";
    }
};

struct condition_names final : boost::system::error_category {
    const char* name() const noexcept override { return "respool.sqlite.condition"; }
    std::string message(int v) const override {
        switch (static_cast<condition>(v)) {
        case condition::connection_broken: return "connection broken";
        case condition::unique_violation: return "unique violation";
        case condition::foreign_key_violation: return "foreign key violation";
        case condition::not_null_violation: return "not-null violation";
        case condition::check_violation: return "check violation";
        case condition::constraint_violation: return "constraint violation";
        case condition::busy: return "database busy (locked by another connection)";
        case condition::interrupted: return "statement interrupted";
        case condition::read_only: return "read-only database or connection";
        case condition::corrupt: return "database file damaged or not a database";
        case condition::cant_open: return "database file cannot be opened";
        }
        return "unknown respool.sqlite condition";
    }

    // Whether SQLite result code `rc` (extended) means `c`.
    static bool code_means(int rc, condition c) noexcept {
        const int primary = rc & 0xff;
        switch (c) {
        case condition::connection_broken:
            return primary == SQLITE_CANTOPEN || primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT ||
                   primary == SQLITE_IOERR;
        case condition::unique_violation:
            return rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY;
        case condition::foreign_key_violation: return rc == SQLITE_CONSTRAINT_FOREIGNKEY;
        case condition::not_null_violation: return rc == SQLITE_CONSTRAINT_NOTNULL;
        case condition::check_violation: return rc == SQLITE_CONSTRAINT_CHECK;
        case condition::constraint_violation: return primary == SQLITE_CONSTRAINT;
        case condition::busy: return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
        case condition::interrupted: return primary == SQLITE_INTERRUPT;
        case condition::read_only: return primary == SQLITE_READONLY;
        case condition::corrupt: return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB;
        case condition::cant_open: return primary == SQLITE_CANTOPEN;
        }
        return false;
    }

    bool equivalent(const boost::system::error_code& ec, int cv) const noexcept override {
        const auto c = static_cast<condition>(cv);
        if (ec.category() == sqlite::error_category()) {
            if (ec.value() < own_base) return code_means(ec.value(), c);
            switch (static_cast<error>(ec.value())) {
            case error::statement_timeout: return c == condition::interrupted;
            case error::not_open: return c == condition::connection_broken;
            case error::writes_on_reader: return c == condition::read_only;
            default: return false;
            }
        }
        // A cancelled operation (Asio's per-operation cancellation) was interrupted too.
        return c == condition::interrupted && ec == boost::asio::error::operation_aborted;
    }
};

}  // namespace

const boost::system::error_category& error_category() noexcept {
    static const sqlite_errors c;
    return c;
}
error_code from_result_code(int code) noexcept {
    return {code, error_category()};
}
int result_code_of(const error_code& ec) noexcept {
    return ec.category() == error_category() && ec.value() < own_base ? ec.value() : 0;
}
error_code make_error_code(error e) noexcept {
    return {static_cast<int>(e), error_category()};
}

const boost::system::error_category& condition_category() noexcept {
    static const condition_names c;
    return c;
}
boost::system::error_condition make_error_condition(condition c) noexcept {
    return {static_cast<int>(c), condition_category()};
}

// ---- failures in words ------------------------------------------------------------------------

std::string describe(const error_code& ec, const diagnostics& d) {
    if (d.message.empty()) return ec.message();
    if (const int rc = result_code_of(ec); rc != 0)
        return d.message + " (SQLite result code " + std::to_string(rc) + ")";
    return d.message + " (" + ec.message() + ")";
}

error_with_diagnostics::error_with_diagnostics(const error_code& ec, diagnostics d)
    : boost::system::system_error(ec), diag_(std::move(d)), what_(describe(ec, diag_)) {}

}  // namespace respool::sqlite
