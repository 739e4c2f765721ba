// sqlite::connection on its own (a thread pool of the test's): every completion token (callback,
// use_future, deferred, use_awaitable), completion on the handler's associated executor and never
// inside the initiating call, one operation at a time, an unopened connection, the statement cache
// (and that it evicts the least recently used statement).
#include "sqlite_test_support.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>

#include <sqlite3.h>

#include <future>
#include <set>
#include <thread>

using namespace sqlite_test;
using respool::error_code;

namespace {

class sqlite_connection : public ::testing::Test {
protected:
    temp_dir dir;
    asio::io_context io;
    asio::thread_pool workers{2};
    sqlite::connection_options options() const {
        sqlite::connection_options o;
        o.path = dir.file("conn.db");
        return o;
    }
};

TEST_F(sqlite_connection, callback_completes_on_the_loop_never_inline) {
    sqlite::connection c(io.get_executor(), workers.get_executor());
    bool opened = false;
    c.async_open(options(), [&](error_code ec) {
        EXPECT_FALSE(ec) << ec.message();
        opened = true;
    });
    EXPECT_FALSE(opened);  // not inside the initiating call
    io.run();
    io.restart();
    ASSERT_TRUE(opened);
    // Bound to another executor (a second io_context): it completes there, not on the connection's.
    asio::io_context other;
    std::optional<std::thread::id> ran_on;
    c.async_query("SELECT 1", asio::bind_executor(other, [&](error_code ec, sqlite::result r) {
                      EXPECT_FALSE(ec);
                      EXPECT_EQ(r.get<int>(0, 0), 1);
                      ran_on = std::this_thread::get_id();
                  }));
    io.run();  // nothing for this one: the query keeps `other` busy, not io
    EXPECT_FALSE(ran_on);
    other.run();
    EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST_F(sqlite_connection, use_future_and_deferred) {
    auto guard = asio::make_work_guard(io);
    std::thread loop([&] { io.run(); });
    sqlite::connection c(io.get_executor(), workers.get_executor());
    c.async_open(options(), asio::use_future).get();
    auto r = c.async_query("SELECT ? * 2", sqlite::params(21), asio::use_future).get();
    EXPECT_EQ(r.get<int>(0, 0), 42);
    auto op = c.async_query("SELECT 'later'", asio::deferred);  // nothing starts until it is invoked
    std::promise<std::string> got;
    std::move(op)([&](error_code ec, sqlite::result res) {
        got.set_value(ec ? ec.message() : res.get<std::string>(0, 0));
    });
    EXPECT_EQ(got.get_future().get(), "later");
    guard.reset();
    loop.join();
}

TEST_F(sqlite_connection, one_operation_at_a_time_and_not_open) {
    sqlite::connection c(io.get_executor(), workers.get_executor());
    auto [ec0, r0] = run(io, c.async_query("SELECT 1", asio::as_tuple(asio::use_awaitable)));
    EXPECT_EQ(ec0, sqlite::error::not_open);
    run(io, c.async_open(options(), asio::use_awaitable));
    asio::cancellation_signal stop;
    std::optional<error_code> first, second;
    c.async_query(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000000) "
        "SELECT count(*) FROM c",
        asio::bind_cancellation_slot(stop.slot(), [&](error_code ec, sqlite::result) { first = ec; }));
    c.async_query("SELECT 2", [&](error_code ec, sqlite::result) {
        second = ec;
        stop.emit(asio::cancellation_type::terminal);  // the first is still running: stop it
    });
    io.run();
    io.restart();
    EXPECT_EQ(second, sqlite::error::operation_in_progress);
    EXPECT_EQ(first, asio::error::operation_aborted);
    EXPECT_EQ(run(io, c.async_query("SELECT 3", asio::use_awaitable)).get<int>(0, 0), 3);
}

TEST_F(sqlite_connection, statements_are_cached_per_text) {
    sqlite::connection c(io.get_executor(), workers.get_executor());
    auto o = options();
    o.statement_cache_capacity = 2;
    run(io, c.async_open(o, asio::use_awaitable));
    run(io, [&]() -> asio::awaitable<void> {
        for (int i = 0; i < 3; ++i)
            co_await c.async_query("SELECT ?", sqlite::params(i), asio::use_awaitable);
        EXPECT_EQ(c.cached_statements(), 1u);
        co_await c.async_query("SELECT 1 + 1", asio::use_awaitable);
        co_await c.async_query("SELECT 2 + 2", asio::use_awaitable);
        EXPECT_EQ(c.cached_statements(), 2u);  // the least recently used went
        co_await c.async_query("CREATE TABLE t (a INT); INSERT INTO t VALUES (1)", asio::use_awaitable);
        EXPECT_EQ(c.cached_statements(), 2u);  // scripts are not cached
        co_await c.async_query("CREATE TABLE u (a INT)", asio::use_awaitable);
        auto r = co_await c.async_query("SELECT * FROM t", asio::use_awaitable);
        co_await c.async_query("ALTER TABLE t ADD COLUMN b INT DEFAULT 5", asio::use_awaitable);
        auto r2 = co_await c.async_query("SELECT * FROM t", asio::use_awaitable);  // re-prepared by SQLite
        EXPECT_EQ(r.columns(), 1u);
        EXPECT_EQ(r2.columns(), 2u);
        EXPECT_EQ(r2.get<int>(0, 1), 5);
    }());
}

TEST_F(sqlite_connection, the_statement_cache_evicts_the_least_recently_used_statement) {
    sqlite::connection c(io.get_executor(), workers.get_executor());
    auto o = options();
    o.statement_cache_capacity = 2;
    run(io, c.async_open(o, asio::use_awaitable));
    const std::string first = "SELECT 1 AS first", second = "SELECT 2 AS second", third = "SELECT 3 AS third";
    run(io, [&]() -> asio::awaitable<void> {
        co_await c.async_query(first, asio::use_awaitable);
        co_await c.async_query(second, asio::use_awaitable);
        co_await c.async_query(first, asio::use_awaitable);  // used again: now the most recent
        co_await c.async_query(third, asio::use_awaitable);  // one too many: the second goes
    }());
    EXPECT_EQ(c.cached_statements(), 2u);
    // The statements still prepared on the handle are the cache's (the others were finalized).
    std::set<std::string> prepared;
    run(io, c.async_run(
                [&prepared](::sqlite3* h) {
                    for (::sqlite3_stmt* st = ::sqlite3_next_stmt(h, nullptr); st;
                         st = ::sqlite3_next_stmt(h, st))
                        prepared.insert(::sqlite3_sql(st));
                },
                asio::use_awaitable));
    EXPECT_EQ(prepared, (std::set<std::string>{first, third}));
}

}  // namespace
