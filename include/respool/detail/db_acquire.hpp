// How a database pool (pg::pool, sqlite::pool) borrows from the generic pool underneath, in the
// database pools' vocabulary: a borrow that found no connection free before its deadline is
// errc::exhausted (the generic pool says timeout), and its words say how the pool stood. Used by the
// pools' .cpp files only: the public headers do not include it.
#pragma once

#include <respool/detail/db_operations.hpp>
#include <respool/error.hpp>
#include <respool/lease.hpp>
#include <respool/pool.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <string>
#include <utility>
#include <variant>

namespace respool::detail::db {

// The generic pool's code for a borrow, in the database pools' vocabulary.
inline error_code borrow_code(error_code ec) noexcept {
    return ec == errc::timeout ? error_code(errc::exhausted) : ec;
}

// Acquires from `p` until `when`, the cancellation bound to `slot`, and calls done(ec, lease) with
// borrow_code(ec). With `diag` (the caller's, alive until done runs), a failure fills diag->message with
// explain(ec, words) (words: the factory's message for a creation made for this borrow that failed,
// else empty; an empty explanation becomes the code's message) and diag->error with the factory's
// error object.
template <class T, class Explain, class Done>
void acquire(respool::pool<T>& p, borrow_deadline when, diagnostics* diag,
             boost::asio::cancellation_slot slot, Explain explain, Done done) {
    auto finish = [diag, explain = std::move(explain), done = std::move(done)](error_code ec,
                                                                               lease<T> l) mutable {
        ec = borrow_code(ec);
        if (ec && diag) {
            diag->message = explain(ec, diag->message);
            if (diag->message.empty()) diag->message = ec.message();
        }
        done(ec, std::move(l));
    };
    std::visit(
        [&](auto until) {
            auto token = boost::asio::bind_cancellation_slot(slot, std::move(finish));
            if (diag)
                p.async_acquire(until, *diag, std::move(token));
            else
                p.async_acquire(until, std::move(token));
        },
        when);
}

// A lease from `p` within `timeout`, for the pools' with_connection and transaction: a failure is
// thrown as boost::system::system_error(borrow_code(ec), explain(ec, the factory's words)).
template <class T, class Explain>
boost::asio::awaitable<lease<T>> acquire_or_throw(respool::pool<T>& p, duration timeout, Explain explain) {
    diagnostics diag;
    auto [ec, l] = co_await p.async_acquire(timeout, diag, boost::asio::as_tuple(boost::asio::use_awaitable));
    ec = borrow_code(ec);
    if (ec) throw boost::system::system_error(ec, explain(ec, diag.message));
    co_return std::move(l);
}

}  // namespace respool::detail::db
