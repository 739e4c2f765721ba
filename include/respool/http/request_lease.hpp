// respool::http::borrow: a connection for the duration of one HTTP request, within the pool's borrow
// timeout or the request's own deadline, and the response to send when there is none (503 +
// Retry-After: 1).
//
//   asio::awaitable<http::string_response> get_kv(const http::request<http::string_body>& req,
//                                                 sqlite::pool& db, std::string key) {
//       auto conn = co_await respool::http::borrow_reader(db);       // within the pool's borrow_timeout
//       if (!conn) co_return conn.error_response(req.version(), req.keep_alive());   // 503, JSON body
//       auto [ec, r] = co_await conn->async_query("SELECT v FROM kv WHERE k = ?", sqlite::params(key),
//                                                 asio::as_tuple(asio::use_awaitable));
//       if (ec) co_return respool::http::error_response(ec, req.version(), req.keep_alive());
//       ...                                    // the connection goes back when `conn` dies, here
//   }
//
// Pools: anything whose async_acquire(token) and async_acquire(time_point, token) complete with
// void(error_code, lease<T>): respool::pool<T>, pg::pool, sqlite::pool (borrow: the writer;
// borrow_reader: a reader, through async_acquire_reader).
//  Deadline:     without one, the pool's own borrow timeout: every request's wait follows the one
//                deadline rule the pool keeps for it (O(1) per borrow). With one (a request that has a
//                budget of its own), the pool's acquire gets it as it is; a deadline already past fails
//                at once unless a connection is free now. A late acquire is errc::timeout
//                (respool::pool) or errc::exhausted (the database pools), which map to 503.
//  Executor:     the calling coroutine's; the lease's own rules otherwise (lease.hpp).
//  Cancellation: the coroutine's own cancellation reaches the acquire.
//  Errors:       none thrown for a failed acquire: the request_lease carries the error_code.
#pragma once

#include <respool/error.hpp>
#include <respool/http/response.hpp>
#include <respool/lease.hpp>
#include <respool/options.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <tuple>
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

inline constexpr auto tuple_awaitable = boost::asio::as_tuple(boost::asio::use_awaitable);

template <class Awaitable>
struct lease_value;
template <class T, class Executor>
struct lease_value<boost::asio::awaitable<std::tuple<error_code, lease<T>>, Executor>> {
    using type = T;
};
// What `pool` lends: the T of the lease<T> its async_acquire (writer) or async_acquire_reader
// (reader) completes with.
template <class Pool>
using writer_t = typename lease_value<decltype(std::declval<Pool&>().async_acquire(tuple_awaitable))>::type;
template <class Pool>
using reader_t =
    typename lease_value<decltype(std::declval<Pool&>().async_acquire_reader(tuple_awaitable))>::type;

template <class T>
request_lease<T> to_request_lease(std::tuple<error_code, lease<T>> acquired) {
    auto& [ec, l] = acquired;
    if (ec) return request_lease<T>(ec);
    return request_lease<T>(std::move(l));
}

}  // namespace detail

// A connection from `pool` (sqlite::pool: the writer) within the pool's borrow timeout, or the error.
template <class Pool>
boost::asio::awaitable<request_lease<detail::writer_t<Pool>>> borrow(Pool& pool) {
    co_return detail::to_request_lease(co_await pool.async_acquire(detail::tuple_awaitable));
}
// The same before `deadline`: the request's own budget.
template <class Pool>
boost::asio::awaitable<request_lease<detail::writer_t<Pool>>> borrow(
    Pool& pool, std::chrono::steady_clock::time_point deadline) {
    co_return detail::to_request_lease(co_await pool.async_acquire(deadline, detail::tuple_awaitable));
}

// A reader connection (pool.async_acquire_reader: sqlite::pool) within the pool's borrow timeout, or
// before `deadline`; or the error.
template <class Pool>
boost::asio::awaitable<request_lease<detail::reader_t<Pool>>> borrow_reader(Pool& pool) {
    co_return detail::to_request_lease(co_await pool.async_acquire_reader(detail::tuple_awaitable));
}
template <class Pool>
boost::asio::awaitable<request_lease<detail::reader_t<Pool>>> borrow_reader(
    Pool& pool, std::chrono::steady_clock::time_point deadline) {
    co_return detail::to_request_lease(co_await pool.async_acquire_reader(deadline, detail::tuple_awaitable));
}

}  // namespace respool::http
