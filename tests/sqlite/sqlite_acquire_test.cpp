// sqlite::pool's acquires: within the pool's borrow_timeout, within a timeout of the call's own, or
// before an absolute deadline, on the writer and on a reader. Past it the acquire fails with
// errc::exhausted, counted as a timeout by the pool it waited on.
#include "sqlite_test_support.hpp"

#include <boost/asio/as_tuple.hpp>

#include <chrono>

using namespace sqlite_test;
using respool::error_code;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

struct sqlite_acquire : ::testing::Test {
    temp_dir dir;
    asio::io_context io;
    // The pool's own timeout far beyond the calls' own: what ends a wait here is the call's.
    sqlite::pool db{io.get_executor(), [this] {
                        auto c = config(dir.file("acquire.db"), 1);
                        c.borrow_timeout = 30s;
                        return c;
                    }()};
    ~sqlite_acquire() override { db.close(); }

    // How an acquire that cannot succeed ends: its code and how long it waited.
    template <class Acquire>
    static asio::awaitable<std::pair<error_code, clock_type::duration>> refused(Acquire acquire) {
        const auto start = clock_type::now();
        auto [ec, l] = co_await acquire();
        EXPECT_FALSE(l);
        co_return std::pair{ec, clock_type::now() - start};
    }
};

TEST_F(sqlite_acquire, the_writer_waits_a_timeout_or_a_deadline_of_the_call_s_own) {
    run(io, [&]() -> asio::awaitable<void> {
        auto held = co_await db.async_acquire(asio::use_awaitable);
        const auto [by_timeout, waited] =
            co_await refused([&] { return db.async_acquire(50ms, tuple_awaitable); });
        EXPECT_EQ(by_timeout, respool::errc::exhausted);
        EXPECT_GE(waited, 50ms);
        EXPECT_LT(waited, 10s) << "the call's timeout, not borrow_timeout (30 s)";
        const auto [by_deadline, waited_too] =
            co_await refused([&] { return db.async_acquire(clock_type::now() + 50ms, tuple_awaitable); });
        EXPECT_EQ(by_deadline, respool::errc::exhausted);
        EXPECT_GE(waited_too, 50ms);
        EXPECT_LT(waited_too, 10s);
        // Zero, or a deadline already past: only a connection free now.
        const auto [at_once, no_wait] =
            co_await refused([&] { return db.async_acquire(0s, tuple_awaitable); });
        EXPECT_EQ(at_once, respool::errc::exhausted);
        EXPECT_LT(no_wait, 10s);
        held.release();
        auto [ec, free_now] = co_await db.async_acquire(clock_type::now() - 1s, tuple_awaitable);
        EXPECT_FALSE(ec) << ec.message();
        EXPECT_TRUE(free_now);
    }());
    EXPECT_EQ(db.writer_stats().timeouts, 3u);
    EXPECT_EQ(db.writer_stats().waiting, 0u);
}

TEST_F(sqlite_acquire, a_reader_waits_a_timeout_or_a_deadline_of_the_call_s_own) {
    run(io, [&]() -> asio::awaitable<void> {
        auto held = co_await db.async_acquire_reader(asio::use_awaitable);  // the one reader
        const auto [by_timeout, waited] =
            co_await refused([&] { return db.async_acquire_reader(50ms, tuple_awaitable); });
        EXPECT_EQ(by_timeout, respool::errc::exhausted);
        EXPECT_GE(waited, 50ms);
        EXPECT_LT(waited, 10s);
        const auto [by_deadline, waited_too] = co_await refused(
            [&] { return db.async_acquire_reader(clock_type::now() + 50ms, tuple_awaitable); });
        EXPECT_EQ(by_deadline, respool::errc::exhausted);
        EXPECT_GE(waited_too, 50ms);
        EXPECT_LT(waited_too, 10s);
        auto [ec, writer] = co_await db.async_acquire(10s, tuple_awaitable);  // the writer: another pool
        EXPECT_FALSE(ec) << ec.message();
    }());
    EXPECT_EQ(db.reader_stats().timeouts, 2u);
    EXPECT_EQ(db.writer_stats().timeouts, 0u);
}

TEST(sqlite_acquire_default, without_a_timeout_the_pool_s_borrow_timeout_applies) {
    temp_dir dir;
    asio::io_context io;
    auto c = config(dir.file("default.db"), 1);
    c.borrow_timeout = 50ms;
    sqlite::pool db(io.get_executor(), c);
    run(io, [&]() -> asio::awaitable<void> {
        auto held = co_await db.async_acquire(asio::use_awaitable);
        const auto start = clock_type::now();
        auto [ec, l] = co_await db.async_acquire(tuple_awaitable);
        EXPECT_EQ(ec, respool::errc::exhausted);
        EXPECT_GE(clock_type::now() - start, 50ms);
    }());
    EXPECT_EQ(db.writer_stats().timeouts, 1u);
    db.close();
}

}  // namespace
