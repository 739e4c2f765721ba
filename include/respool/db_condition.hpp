// What a failure means, whichever database reported it. The error codes of respool (errc), respool::pg
// (pg::error and the server's SQLSTATEs) and respool::sqlite (SQLite's result codes and sqlite::error)
// compare equal to the conditions they mean, so code that serves either database asks one question:
//
//   if (ec == respool::db::condition::unique_violation) return conflict();
//   if (ec == respool::db::condition::unavailable) return retry_later();
//
// A code may mean several (a connection lost is unavailable and connection_broken; every SQLSTATE is a
// database_error too); pg::condition and sqlite::condition keep their finer, database-specific names.
// docs/02-operations.md lists which codes each condition matches.
#pragma once

#include <boost/system/error_category.hpp>
#include <boost/system/error_condition.hpp>
#include <boost/system/is_error_condition_enum.hpp>

#include <type_traits>

namespace respool::db {

enum class condition {
    // The database cannot serve the request now; the same request may succeed later (a connect failed,
    // the server went away or is restarting, a failover is under way, the circuit is open).
    unavailable = 1,
    // The connection is unusable: the pool destroys it instead of lending it again. The same codes as
    // pg::condition::connection_broken and sqlite::condition::connection_broken.
    connection_broken,
    busy,                   // another connection holds the lock the statement needs, past the wait allowed
    statement_timeout,      // the statement ran past its deadline and was stopped
    serialization_failure,  // the transaction lost to a concurrent one: run it again from the start
    constraint_violation,   // any integrity constraint (the four below among them)
    unique_violation,
    foreign_key_violation,
    not_null_violation,
    check_violation,
    read_only,              // a write where only reads are allowed
    invalid_statement,      // the statement or its parameters are wrong: no retry helps
    operation_in_progress,  // an operation on a connection while another one runs on it: a program's bug
    exhausted,              // no connection was free in time (errc::exhausted, errc::timeout)
    closed,                 // the pool is closed (errc::closed)
    cancelled,              // the caller cancelled (errc::cancelled, Asio's operation_aborted)
    database_error,         // the database itself reported it: any SQLSTATE, any SQLite result code
};

const boost::system::error_category& condition_category() noexcept;
boost::system::error_condition make_error_condition(condition c) noexcept;

}  // namespace respool::db

template <>
struct boost::system::is_error_condition_enum<respool::db::condition> : std::true_type {};
