// respool::http::borrow: a connection for the duration of one HTTP request, within the request's
// deadline, and the response to send when there is none (503 + Retry-After: 1, SPEC.md §6).
//
//   asio::awaitable<http::string_response> get_kv(const http::request<http::string_body>& req,
//                                                 sqlite::pool& db, std::string key) {
//       auto deadline = std::chrono::steady_clock::now() + 2s;       // the request's budget
//       auto conn = co_await respool::http::borrow_reader(db, deadline);
//       if (!conn) co_return conn.error_response(req.version(), req.keep_alive());   // 503, JSON body
//       auto [ec, r] = co_await conn->async_query("SELECT v FROM kv WHERE k = ?", sqlite::params(key),
//                                                 asio::as_tuple(asio::use_awaitable));
//       if (ec) co_return respool::http::error_response(ec, req.version(), req.keep_alive());
//       ...                                    // the connection goes back when `conn` dies, here
//   }
//
// Pools: anything whose async_acquire(token) completes with void(error_code, lease<T>):
// respool::pool<T>, pg::pool, sqlite::pool (borrow: the writer; borrow_reader: a reader).
//  Deadline:     a pool whose async_acquire takes a timeout (respool::pool, pg::pool) gets the time
//                left; any other (sqlite::pool) has its acquire cancelled when the deadline passes. A
//                deadline already past fails at once unless a connection is free now. Either way a
//                late acquire is errc::timeout or errc::exhausted, which map to 503.
//  Executor:     the calling coroutine's; the lease's own rules otherwise (lease.hpp).
//  Cancellation: the coroutine's own cancellation reaches the acquire of a pool that takes a timeout;
//                for the others the deadline is what bounds the wait.
//  Errors:       none thrown for a failed acquire: the request_lease carries the error_code.
#pragma once

#include <respool/error.hpp>
#include <respool/http/response.hpp>
#include <respool/lease.hpp>
#include <respool/options.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

namespace respool::http {

// A borrowed connection, or why there is none. Move-only; the connection goes back to its pool when
// this dies (or with get().release()).
template <class T>
class request_lease {
public:
    explicit request_lease(lease<T> l) noexcept : lease_(std::move(l)) {}
    explicit request_lease(error_code ec) noexcept : ec_(ec) {}

    explicit operator bool() const noexcept { return !lease_.empty(); }
    T& operator*() const noexcept { return *lease_; }
    T* operator->() const noexcept { return &*lease_; }
    // The lease itself: to poison() a connection the request found broken, or release() it early.
    lease<T>& get() noexcept { return lease_; }

    // Why the borrow failed (empty when it did not).
    [[nodiscard]] const error_code& error() const noexcept { return ec_; }
    // The response to send for that: error_response(error(), version, keep_alive).
    [[nodiscard]] string_response error_response(unsigned version, bool keep_alive) const {
        return http::error_response(ec_, version, keep_alive);
    }

private:
    lease<T> lease_;
    error_code ec_;
};

namespace detail {

template <class Awaitable>
struct lease_value;
template <class T, class Executor>
struct lease_value<boost::asio::awaitable<std::tuple<error_code, lease<T>>, Executor>> {
    using type = T;
};
// The T of the lease<T> that `Acquire` (a callable taking a completion token) completes with.
template <class Acquire>
using acquired_t = typename lease_value<
    std::invoke_result_t<Acquire&, decltype(boost::asio::as_tuple(boost::asio::use_awaitable))>>::type;

template <class Pool>
concept acquire_with_timeout = requires(Pool& p, duration d) {
    p.async_acquire(d, boost::asio::as_tuple(boost::asio::use_awaitable));
};

// The time left until `deadline`, zero once it passed.
duration time_left(std::chrono::steady_clock::time_point deadline) noexcept;

// A timer on the coroutine's executor that emits a terminal cancellation into slot() at the deadline.
// It must be emitted on that executor: Asio's cancellation slots are not thread-safe.
class acquire_deadline {
public:
    acquire_deadline(const boost::asio::any_io_executor& ex, std::chrono::steady_clock::time_point deadline);
    ~acquire_deadline();  // stops the timer
    acquire_deadline(const acquire_deadline&) = delete;
    acquire_deadline& operator=(const acquire_deadline&) = delete;

    [[nodiscard]] boost::asio::cancellation_slot slot() noexcept;
    [[nodiscard]] bool expired() const noexcept;  // the deadline passed and the signal went out

private:
    struct state;
    std::shared_ptr<state> s_;
};

template <class T, class Acquire>
boost::asio::awaitable<request_lease<T>> borrow_until(Acquire acquire,
                                                      std::chrono::steady_clock::time_point deadline) {
    acquire_deadline guard(co_await boost::asio::this_coro::executor, deadline);
    auto [ec, l] = co_await acquire(
        boost::asio::bind_cancellation_slot(guard.slot(), boost::asio::as_tuple(boost::asio::use_awaitable)));
    if (ec == errc::cancelled && guard.expired()) ec = errc::timeout;  // our deadline, not the caller
    if (ec) co_return request_lease<T>(ec);
    co_return request_lease<T>(std::move(l));
}

template <class Pool>
struct writer_side {
    Pool* pool;
    template <class Token>
    auto operator()(Token&& token) const {
        return pool->async_acquire(std::forward<Token>(token));
    }
};
template <class Pool>
struct reader_side {
    Pool* pool;
    template <class Token>
    auto operator()(Token&& token) const {
        return pool->async_acquire_reader(std::forward<Token>(token));
    }
};

}  // namespace detail

// A connection from `pool` (sqlite::pool: the writer) before `deadline`, or the error.
template <class Pool>
boost::asio::awaitable<request_lease<detail::acquired_t<detail::writer_side<Pool>>>> borrow(
    Pool& pool, std::chrono::steady_clock::time_point deadline) {
    using T = detail::acquired_t<detail::writer_side<Pool>>;
    if constexpr (detail::acquire_with_timeout<Pool>) {
        auto [ec, l] = co_await pool.async_acquire(detail::time_left(deadline),
                                                   boost::asio::as_tuple(boost::asio::use_awaitable));
        if (ec) co_return request_lease<T>(ec);
        co_return request_lease<T>(std::move(l));
    } else {
        co_return co_await detail::borrow_until<T>(detail::writer_side<Pool>{&pool}, deadline);
    }
}

// A reader connection (pool.async_acquire_reader: sqlite::pool) before `deadline`, or the error.
template <class Pool>
boost::asio::awaitable<request_lease<detail::acquired_t<detail::reader_side<Pool>>>> borrow_reader(
    Pool& pool, std::chrono::steady_clock::time_point deadline) {
    using T = detail::acquired_t<detail::reader_side<Pool>>;
    co_return co_await detail::borrow_until<T>(detail::reader_side<Pool>{&pool}, deadline);
}

}  // namespace respool::http
