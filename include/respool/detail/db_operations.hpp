// What the database pools' with_connection and transaction share (pg::pool, sqlite::pool): run a
// coroutine on a leased connection and give the lease back by the database's rule, and the
// BEGIN / fn / COMMIT loop with its bounded retry. Each database supplies its own steps.
#pragma once

#include <respool/lease.hpp>
#include <respool/options.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <type_traits>
#include <variant>

namespace respool::detail::db {

// When a borrow from a database pool ends: after a timeout (the pool's borrow_timeout, or the
// caller's own), or at an absolute deadline on the steady clock.
using borrow_deadline = std::variant<duration, std::chrono::steady_clock::time_point>;

// R of asio::awaitable<R>: what with_connection's and transaction's functions return.
template <class A>
struct awaited;
template <class R, class E>
struct awaited<boost::asio::awaitable<R, E>> {
    using type = R;
};

// Where with_connection's or a transaction's connection comes from: `now()` is a lease taken at once
// (empty when none is free, or when the pool has no such path) and `wait()` an awaitable of one (it
// throws on failure). The borrow happens inside the operation's own coroutine, so a with_connection or
// a transaction costs one coroutine frame for its borrow, its work and its retries.
template <class Now, class Wait>
struct borrow_source {
    Now now;
    Wait wait;
};
template <class Now, class Wait>
borrow_source(Now, Wait) -> borrow_source<Now, Wait>;

// A connection already borrowed (a source for callers that borrow on their own).
template <class T>
auto borrowed(lease<T> l) {
    return borrow_source{[l = std::move(l)]() mutable { return std::move(l); },
                         []() -> boost::asio::awaitable<lease<T>> { co_return lease<T>{}; }};
}

// Borrows from `source`, runs fn(connection&) on the connection; `settle(lease, error)` gives the
// lease back (the database decides whether the error poisons it); fn's exception goes on.
template <class R, class Source, class F, class Settle>
boost::asio::awaitable<R> with_borrowed(Source source, F fn, Settle settle) {
    auto l = source.now();
    if (!l) l = co_await source.wait();
    std::exception_ptr error;
    if constexpr (std::is_void_v<R>) {
        try {
            co_await fn(*l);
        } catch (...) {
            error = std::current_exception();
        }
        settle(l, error);
        if (error) std::rethrow_exception(error);
    } else {
        std::optional<R> out;
        try {
            out.emplace(co_await fn(*l));
        } catch (...) {
            error = std::current_exception();
        }
        settle(l, error);
        if (error) std::rethrow_exception(error);
        co_return std::move(*out);
    }
}

// with_borrowed on a connection borrowed already; fn stays the caller's.
template <class R, class T, class F, class Settle>
boost::asio::awaitable<R> with_lease(lease<T> l, F& fn, Settle settle) {
    return with_borrowed<R>(borrowed(std::move(l)), std::ref(fn), std::move(settle));
}

// The steps of a transaction, from the database's functions: begin(conn, options), commit(conn) (both
// throw on failure), recover(conn, error, attempts_left) -> awaitable<bool> (rolls back; true: run it
// again), settle(lease, error). A database's steps may add begin_at_once(conn) -> bool, which then starts
// every attempt (a check before each attempt goes there): true when the BEGIN was put in place without
// waiting; false, and begin() sends it. They may split commit into plan_commit(conn) -> optional plan
// (empty: nothing to commit; throws what fails before sending), commit_operation(conn, plan) (an async
// operation completing with an error code and a reply) and conclude_commit(conn, plan, ec, reply)
// (throws what failed): then the COMMIT needs no coroutine frame of its own.
template <class Connection, class Options, auto Begin, auto Commit, auto Recover, auto Settle>
struct transaction_steps {
    Options o;
    boost::asio::awaitable<void> begin(Connection& c) const { return Begin(c, o); }
    boost::asio::awaitable<void> commit(Connection& c) const { return Commit(c); }
    boost::asio::awaitable<bool> recover(Connection& c, std::exception_ptr& e, bool attempts_left) const {
        return Recover(c, e, attempts_left);
    }
    void settle(lease<Connection>& l, std::exception_ptr& e) const noexcept { Settle(l, e); }
};

// Borrows from `source`, then runs `steps` around fn on the connection, up to max_attempts times (see
// transaction_steps).
template <class R, class Source, class F, class Steps>
boost::asio::awaitable<R> in_transaction(Source source, std::uint32_t max_attempts, F fn, Steps steps) {
    using slot = std::conditional_t<std::is_void_v<R>, bool, std::optional<R>>;
    auto l = source.now();
    if (!l) l = co_await source.wait();
    for (std::uint32_t attempt = 1;; ++attempt) {
        std::exception_ptr error;
        slot out{};
        try {
            // A BEGIN that travels with the first statement needs no coroutine of its own.
            if constexpr (requires { steps.begin_at_once(*l); }) {
                if (!steps.begin_at_once(*l)) co_await steps.begin(*l);
            } else {
                co_await steps.begin(*l);
            }
            if constexpr (std::is_void_v<R>)
                co_await fn(*l);
            else
                out.emplace(co_await fn(*l));
            if constexpr (requires { steps.plan_commit(*l); }) {
                if (auto plan = steps.plan_commit(*l)) {
                    auto [ec, reply] = co_await steps.commit_operation(*l, *plan);
                    steps.conclude_commit(*l, *plan, ec, reply);
                }
            } else {
                co_await steps.commit(*l);
            }
        } catch (...) {
            error = std::current_exception();
        }
        if (!error) {
            steps.settle(l, error);
            if constexpr (std::is_void_v<R>)
                co_return;
            else
                co_return std::move(*out);
        }
        if (co_await steps.recover(*l, error, attempt < max_attempts)) continue;
        steps.settle(l, error);
        std::rethrow_exception(error);
    }
}

}  // namespace respool::detail::db
