// respool::http::borrow in a Beast handler, called with a Beast request: a connection when one is free,
// 503 + Retry-After: 1 with a JSON body when the pool stays exhausted past the pool's borrow timeout or
// the request's own deadline, which every pool takes as its acquire's deadline.
#include "../sqlite/sqlite_test_support.hpp"

#include <respool/http/request_lease.hpp>
#include <respool/pg/pool.hpp>
#include <respool/pool.hpp>
#include <respool/sqlite/pool.hpp>

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <type_traits>

namespace {

namespace asio = boost::asio;
namespace bh = boost::beast::http;
namespace http = respool::http;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using request = bh::request<bh::string_body>;

// What the pools lend (pg::pool needs a server to run; its side of borrow is checked here at compile
// time).
static_assert(std::is_same_v<http::detail::writer_t<respool::pg::pool>, respool::pg::connection>);
static_assert(std::is_same_v<http::detail::reader_t<respool::sqlite::pool>, respool::sqlite::connection>);

// A handler as a service writes it: borrow for this request, answer with the connection's value or the
// borrow's error response. The connection goes back when `conn` dies.
template <class Pool, class Use>
asio::awaitable<http::string_response> handle(const request& req, Pool& pool, clock_type::duration budget,
                                              Use use) {
    auto conn = co_await http::borrow(pool, clock_type::now() + budget);
    if (!conn) co_return conn.error_response(req.version(), req.keep_alive());
    http::string_response res{bh::status::ok, req.version()};
    res.body() = co_await use(*conn);
    res.keep_alive(req.keep_alive());
    res.prepare_payload();
    co_return res;
}

request get(std::string target) {
    request req{bh::verb::get, target, 11};
    req.keep_alive(true);
    return req;
}

// Runs `a` on `io` to its end; rethrows what it threw.
template <class T>
T run(asio::io_context& io, asio::awaitable<T> a) {
    std::exception_ptr error;
    std::optional<T> out;
    asio::co_spawn(io, std::move(a), [&](std::exception_ptr e, std::optional<T> v) {
        error = e;
        out = std::move(v);
    });
    io.run();
    io.restart();
    if (error) std::rethrow_exception(error);
    return std::move(*out);
}

// The generic pool says timeout past a deadline; the database pools say exhausted.
constexpr const char* timed_out =
    R"({"error":"pool_timeout","message":"no database connection became free before the deadline; retry"})";
constexpr const char* exhausted =
    R"({"error":"pool_exhausted","message":"no database connection is free; retry"})";

void expect_retry_later(const http::string_response& res, const char* body = timed_out) {
    EXPECT_EQ(res.result_int(), 503u);
    EXPECT_EQ(res[bh::field::retry_after], "1");
    EXPECT_EQ(res[bh::field::content_type], "application/json");
    EXPECT_TRUE(res.keep_alive());
    EXPECT_EQ(res.body(), body);
}

// ---- respool::pool<int>: the deadline becomes the acquire's deadline.

// One resource, 7. (Made in a function: g++ 12 crashes on the hooks' designated initializer in a
// default member initializer.)
respool::pool<int> one_int(asio::io_context& io, respool::duration acquire_timeout = 30s) {
    respool::pool_options o;
    o.max = 1;
    o.acquire_timeout = acquire_timeout;
    respool::hooks<int> h;
    h.factory = [] { return 7; };
    return respool::pool<int>(io.get_executor(), o, std::move(h));
}

struct int_pool_test : ::testing::Test {
    asio::io_context io;
    respool::pool<int> pool = one_int(io);
    static asio::awaitable<std::string> show(int& v) { co_return std::to_string(v); }
};

TEST_F(int_pool_test, a_free_connection_serves_the_request_and_goes_back) {
    const auto res = run(io, handle(get("/kv/a"), pool, 1s, &int_pool_test::show));
    EXPECT_EQ(res.result_int(), 200u);
    EXPECT_EQ(res.body(), "7");
    EXPECT_EQ(pool.stats().idle, 1u);
    EXPECT_EQ(pool.stats().active, 0u);
}

TEST_F(int_pool_test, an_exhausted_pool_answers_503_with_retry_after_at_the_deadline) {
    auto held = pool.try_acquire();  // the one connection, held by another request
    ASSERT_TRUE(held);
    const auto start = clock_type::now();
    const auto res = run(io, handle(get("/kv/a"), pool, 50ms, &int_pool_test::show));
    const auto took = clock_type::now() - start;
    expect_retry_later(res);
    EXPECT_GE(took, 50ms);
    EXPECT_LT(took, 5s) << "bounded by the request's deadline, never a hang";
    EXPECT_EQ(pool.stats().timeouts, 1u);
}

TEST_F(int_pool_test, a_deadline_already_past_still_takes_a_free_connection) {
    auto res = run(io, handle(get("/kv/a"), pool, -1s, &int_pool_test::show));
    EXPECT_EQ(res.result_int(), 200u);
    auto held = pool.try_acquire();
    res = run(io, handle(get("/kv/a"), pool, -1s, &int_pool_test::show));
    EXPECT_EQ(res.result_int(), 503u);
}

TEST(int_pool, without_a_deadline_a_request_waits_the_pool_s_own_acquire_timeout) {
    asio::io_context io;
    auto pool = one_int(io, 50ms);
    auto held = pool.try_acquire();
    ASSERT_TRUE(held);
    const auto start = clock_type::now();
    const auto res = run(io, [&]() -> asio::awaitable<http::string_response> {
        auto conn = co_await http::borrow(pool);
        EXPECT_FALSE(conn);
        co_return conn.error_response(11, true);
    }());
    const auto took = clock_type::now() - start;
    expect_retry_later(res);
    EXPECT_GE(took, 50ms) << "the pool's acquire_timeout, not zero";
    EXPECT_LT(took, 5s);
    EXPECT_EQ(pool.stats().timeouts, 1u);
}

// ---- sqlite::pool: the request's deadline is its acquire's deadline.

using sqlite_test::temp_dir;  // a temporary folder, removed with its files

asio::awaitable<std::string> select_42(respool::sqlite::connection& c) {
    auto r = co_await c.async_query("SELECT 42", asio::use_awaitable);
    co_return std::to_string(r.get<int>(0, 0));
}

struct sqlite_pool_test : ::testing::Test {
    temp_dir dir;
    asio::io_context io;
    // borrow_timeout far beyond the requests' deadlines: what ends a wait here is the deadline.
    respool::sqlite::pool db{io.get_executor(),
                             {.path = dir.file("http.db"), .readers = 1, .borrow_timeout = 30s}};
    ~sqlite_pool_test() override { db.close(); }
};

TEST_F(sqlite_pool_test, a_free_writer_serves_the_request) {
    const auto res = run(io, handle(get("/kv/a"), db, 5s, &select_42));
    EXPECT_EQ(res.result_int(), 200u);
    EXPECT_EQ(res.body(), "42");
    EXPECT_EQ(db.writer_stats().active, 0u);
}

TEST_F(sqlite_pool_test, a_held_writer_answers_503_with_retry_after_at_the_deadline) {
    const auto res = run(io, [&]() -> asio::awaitable<http::string_response> {
        auto held = co_await db.async_acquire(asio::use_awaitable);  // the one writer, held elsewhere
        const auto start = clock_type::now();
        auto r = co_await handle(get("/kv/a"), db, 50ms, &select_42);
        const auto took = clock_type::now() - start;
        EXPECT_GE(took, 50ms);
        EXPECT_LT(took, 5s) << "the request's deadline ends the wait, not borrow_timeout (30 s)";
        co_return r;
    }());
    expect_retry_later(res, exhausted);
    EXPECT_EQ(db.writer_stats().waiting, 0u) << "the acquire left the queue at its deadline";
    EXPECT_EQ(db.writer_stats().timeouts, 1u);
    EXPECT_EQ(db.writer_stats().cancellations, 0u) << "no timer of borrow's own cancels it";
}

TEST_F(sqlite_pool_test, borrow_reader_takes_a_reader_while_the_writer_is_held) {
    const auto res = run(io, [&]() -> asio::awaitable<http::string_response> {
        auto held = co_await db.async_acquire(asio::use_awaitable);
        auto conn = co_await http::borrow_reader(db);
        EXPECT_TRUE(conn) << conn.error().message();
        if (!conn) co_return conn.error_response(11, true);
        http::string_response ok{bh::status::ok, 11};
        ok.body() = co_await select_42(*conn);
        co_return ok;
    }());
    EXPECT_EQ(res.result_int(), 200u);
    EXPECT_EQ(res.body(), "42");
}

}  // namespace
