// respool::sqlite errors: SQLite's own result codes and the layer's few failures of its own, in one
// category (sqlite::error_category), the conditions that say what a failure means (named as pg's are,
// where the meaning is the same), and what SQLite said about the last failure.
#pragma once

#include <respool/db_condition.hpp>
#include <respool/error.hpp>

#include <boost/system/system_error.hpp>

#include <string>

namespace respool::sqlite {

// One category for everything the SQLite layer reports. Values below 0x10000 are SQLite's extended
// result codes (SQLITE_CONSTRAINT_UNIQUE = 2067, SQLITE_BUSY = 5, ...: the connections are opened with
// SQLITE_OPEN_EXRESCODE); message() is SQLite's own text plus the number. Values from 0x10000 on are
// the layer's own failures (sqlite::error).
const boost::system::error_category& error_category() noexcept;
// The error_code of an SQLite result code (primary or extended), e.g. from_result_code(2067).
error_code from_result_code(int code) noexcept;
// The SQLite result code inside `ec`, or 0 when `ec` is not one.
int result_code_of(const error_code& ec) noexcept;

// The layer's own failures (error_category(), values from 0x10000).
enum class error {
    statement_timeout = 0x10001,  // the statement ran past its deadline and was interrupted
    not_open,                     // an operation on a connection that is not (or no longer) open
    operation_in_progress,        // an operation while another one runs on this connection
    writes_on_reader,             // a reader connection refused a statement that may write (or a script)
    multiple_statements,          // bound parameters with more than one statement in the text
    parameter_count,              // the statement's parameters and the values given differ in number
    session_not_restorable,       // the borrower set a PRAGMA the reset does not restore: not reused
};
error_code make_error_code(error e) noexcept;

// What a failure means, for tests like `if (ec == sqlite::condition::unique_violation)`. The names
// are pg::condition's where the meaning is the same, so a service reads the same either way.
enum class condition {
    connection_broken = 1,  // the connection is unusable (SQLITE_CANTOPEN, SQLITE_NOTADB, SQLITE_CORRUPT,
                            // SQLITE_IOERR_*, error::not_open): the one kind that poisons a pooled one
    unique_violation,       // SQLITE_CONSTRAINT_UNIQUE, SQLITE_CONSTRAINT_PRIMARYKEY
    foreign_key_violation,  // SQLITE_CONSTRAINT_FOREIGNKEY
    not_null_violation,     // SQLITE_CONSTRAINT_NOTNULL
    check_violation,        // SQLITE_CONSTRAINT_CHECK
    constraint_violation,   // any SQLITE_CONSTRAINT_*
    busy,                   // SQLITE_BUSY_*, SQLITE_LOCKED_*: another process held the lock past busy_timeout
    interrupted,  // SQLITE_INTERRUPT, error::statement_timeout, or a cancelled operation (operation_aborted)
    read_only,    // SQLITE_READONLY_*: a write on a read-only database or connection
    corrupt,      // SQLITE_CORRUPT_*, SQLITE_NOTADB: the file is damaged or is not a database
    cant_open,    // SQLITE_CANTOPEN_*: a missing folder, a directory, no permission
};
const boost::system::error_category& condition_category() noexcept;
boost::system::error_condition make_error_condition(condition c) noexcept;

// What SQLite said about the last failure of a connection.
struct diagnostics {
    int code = 0;         // the extended result code (0 = no failure)
    std::string message;  // sqlite3_errmsg, prefixed with the path for a failed open
    int offset = -1;      // byte offset in the SQL text the error points at (sqlite3_error_offset), or -1
};

// A failure in words: SQLite's message (sqlite3_errmsg) and the result code, `no such table: nope
// (SQLite result code 1)`; the code's message alone when `d` has no message.
std::string describe(const error_code& ec, const diagnostics& d);

// What with_connection, with_reader and transaction throw when a statement fails (in fn, BEGIN or
// COMMIT): a boost::system::system_error (code() is the failure's code) whose what() is
// describe(code(), diagnostics), and SQLite's diagnostics whole.
class error_with_diagnostics : public boost::system::system_error {
public:
    error_with_diagnostics(const error_code& ec, diagnostics d);
    [[nodiscard]] const diagnostics& get_diagnostics() const noexcept { return diag_; }
    [[nodiscard]] const char* what() const noexcept override { return what_.c_str(); }

private:
    diagnostics diag_;
    std::string what_;
};

}  // namespace respool::sqlite

template <>
struct boost::system::is_error_code_enum<respool::sqlite::error> : std::true_type {};
template <>
struct boost::system::is_error_condition_enum<respool::sqlite::condition> : std::true_type {};
