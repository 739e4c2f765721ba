// What a database pool (pg::pool, sqlite::pool) does with a failure of a borrower's function
// (with_connection, transaction): finds its code, gives it the connection's words, and decides the
// lease's fate. Used by the pools' .cpp files only: the public headers do not include it.
#pragma once

#include <respool/error.hpp>
#include <respool/lease.hpp>

#include <boost/system/system_error.hpp>

#include <exception>
#include <typeinfo>

namespace respool::detail::db {

// The code of the boost::system::system_error in `e`; none for anything else.
inline error_code code_of(const std::exception_ptr& e) noexcept {
    if (!e) return {};
    try {
        std::rethrow_exception(e);
    } catch (const boost::system::system_error& se) {
        return se.code();
    } catch (...) {
        return {};
    }
}

// A plain boost::system::system_error (the one asio::use_awaitable throws for a failed statement, not
// a type of the caller's own) whose code is the failure the connection describes last
// (is_last_failure(c, code)) becomes Error(code, c.last_error()): the failure with its words.
// Anything else, an Error already among it, is left as it is.
template <class Error, class Connection, class IsLastFailure>
void explain(const Connection& c, std::exception_ptr& error, IsLastFailure is_last_failure) noexcept {
    if (!error) return;
    try {
        std::rethrow_exception(error);
    } catch (const Error&) {
        return;
    } catch (const boost::system::system_error& e) {
        if (typeid(e) != typeid(boost::system::system_error) || !is_last_failure(c, e.code())) return;
        try {
            error = std::make_exception_ptr(Error(e.code(), c.last_error()));
        } catch (...) {  // out of memory: the failure without its words
        }
    } catch (...) {
    }
}

// Gives the lease back after the function: poisoned when it failed with `broken` (the database's
// connection-level condition), else released (and reset); `error` gets the connection's words first
// (explain(connection, error)).
template <class Connection, class Explain, class Condition>
void settle(lease<Connection>& l, std::exception_ptr& error, Explain explain, Condition broken) noexcept {
    if (error && l) explain(*l, error);
    if (error && code_of(error) == broken)
        l.poison();
    else
        l.release();
}

}  // namespace respool::detail::db
