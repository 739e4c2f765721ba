// respool::pg::pool when the server misbehaves (on the pg_cluster_faults server, which these tests stop,
// restart and reconfigure): busy backends terminated, a restart with borrowers waiting, the server
// stopped (acquires fail within the borrow timeout, the circuit opens, the pool recovers by itself when
// the server is back), a failover (writes meet read_only: the connection is closed, every other one
// retired) and pipelined statements across a restart. The pool runs on an event loop of its own
// thread; the test thread drives the server with test::pg_server's blocking calls and waits on the
// pool's futures and on server state, never on a guessed time.
#include "pg_server.hpp"
#include "pg_test_support.hpp"

#include <respool/pg/pool.hpp>

#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>

#include <algorithm>
#include <atomic>
#include <thread>

using namespace pg_test;
using respool::error_code;

namespace {

class pg_pool_faults : public ::testing::Test {
protected:
    void SetUp() override {
        if (!test::pg_server::available()) GTEST_SKIP() << "run through ctest -L integration";
    }
    void TearDown() override {
        if (!test::pg_server::available()) return;
        if (db) drop_pool();  // on the pool's own thread
        try {                 // a failed test must not leave the server down or read-only for the next one
            server.start();
        } catch (...) {
        }
        server.query("ALTER SYSTEM RESET default_transaction_read_only");
        server.query("SELECT pg_reload_conf()");
    }
    test::pg_server server;
    loop l;
    std::optional<pg::pool> db;

    void make_pool(const std::string& app, std::size_t max, std::size_t min_idle,
                   std::chrono::steady_clock::duration borrow_timeout = std::chrono::seconds(5),
                   std::size_t pipeline_depth = 1) {
        l.run([&]() -> asio::awaitable<void> {
            pg::pool_config c;
            c.pipeline_depth = pipeline_depth;
            c.conninfo = server.conninfo() + " application_name=" + app;
            c.max = max;
            c.min_idle = min_idle;
            c.borrow_timeout = borrow_timeout;
            c.connect_timeout = std::chrono::seconds(2);
            c.circuit = respool::breaker_options{.cool_down = std::chrono::milliseconds(500)};
            db.emplace(co_await asio::this_coro::executor, c);
            co_await db->async_wait_ready(asio::as_tuple(asio::use_awaitable));
        });
    }
    respool::pool_stats stats() {
        return l.run([&]() -> asio::awaitable<respool::pool_stats> { co_return db->stats(); });
    }
    void drop_pool() {
        l.run([&]() -> asio::awaitable<void> {
            co_await db->async_close(std::chrono::seconds(5), asio::as_tuple(asio::use_awaitable));
            db.reset();
        });
    }
    // A query through the pool: ok, or the error.
    error_code query(const std::string& sql) {
        return l.run([&]() -> asio::awaitable<error_code> {
            auto [ec, r] = co_await db->async_query(sql, asio::as_tuple(asio::use_awaitable));
            co_return ec;
        });
    }
    // Queries until one succeeds (bounded): the pool recovers by itself.
    bool recovers(std::chrono::seconds limit) {
        const auto end = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < end) {
            if (!query("SELECT 1")) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));  // a poll interval, not a guess
        }
        return false;
    }
};

}  // namespace

TEST_F(pg_pool_faults, busy_connections_whose_backends_are_terminated_are_poisoned_and_replaced) {
    make_pool("f_busy", 4, 0);
    std::atomic<int> broken{0}, finished{0};
    for (int i = 0; i < 4; ++i)
        asio::co_spawn(
            l.io,
            [&]() -> asio::awaitable<void> {
                auto [e] = co_await db->with_connection(
                    [](pg::connection& c) -> asio::awaitable<void> {
                        co_await c.async_query("SELECT pg_sleep(30)", asio::use_awaitable);
                    },
                    asio::as_tuple(asio::use_awaitable));
                try {
                    if (e) std::rethrow_exception(e);
                } catch (const boost::system::system_error& se) {
                    if (se.code() == pg::condition::connection_broken) ++broken;
                } catch (...) {
                }
                ++finished;
            },
            asio::detached);
    test::pg_server::wait_until(
        [&] {
            return server.count_backends("f_busy") == 4 &&
                   std::stoi(*server.query("SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                                           "'f_busy' AND state = 'active'")[0][0]) == 4;
        },
        std::chrono::seconds(10), "four busy backends");
    for (int pid : server.backend_pids("f_busy")) EXPECT_TRUE(server.terminate(pid));
    test::pg_server::wait_until([&] { return finished == 4; }, std::chrono::seconds(10),
                                "the borrowers' end");
    EXPECT_EQ(broken, 4) << "each borrower saw connection_broken";
    EXPECT_EQ(stats().poisoned, 4u);
    EXPECT_TRUE(recovers(std::chrono::seconds(10))) << "new connections replace them";
    EXPECT_EQ(stats().circuit_opened, 0u) << "broken connections the pool replaces do not open the circuit";
    EXPECT_LE(server.count_backends("f_busy"), 4);
    drop_pool();
    test::pg_server::wait_until([&] { return server.count_backends("f_busy") == 0; },
                                std::chrono::seconds(10), "no backend after close");
}

// Both connections are held while three borrowers wait; the server restarts; the holders give back
// connections that are now dead. The waiters never see them: each dead one is found before hand-out
// (no round trip) and replaced, and every waiter's query succeeds.
TEST_F(pg_pool_faults, waiters_across_a_restart_get_live_connections) {
    for (auto mode : {test::pg_server::stop_mode::fast, test::pg_server::stop_mode::immediate}) {
        SCOPED_TRACE(mode == test::pg_server::stop_mode::fast ? "restart -m fast" : "restart -m immediate");
        make_pool("f_restart", 2, 2);
        std::optional<respool::lease<pg::connection>> a, b;
        l.run([&]() -> asio::awaitable<void> {
            a.emplace(co_await db->async_acquire(asio::use_awaitable));
            b.emplace(co_await db->async_acquire(asio::use_awaitable));
        });
        std::atomic<int> ok{0}, failed{0};
        for (int i = 0; i < 3; ++i)
            asio::co_spawn(
                l.io,
                [&]() -> asio::awaitable<void> {
                    auto [ec, r] = co_await db->async_query("SELECT 1", asio::as_tuple(asio::use_awaitable));
                    EXPECT_FALSE(ec) << ec.message();
                    ++(ec ? failed : ok);
                },
                asio::detached);
        test::pg_server::wait_until([&] { return stats().waiting == 3; }, std::chrono::seconds(5),
                                    "three waiters");
        server.restart(mode);
        l.run([&]() -> asio::awaitable<void> {
            a.reset();  // dead connections come back; the reset on release sees nothing to do or fails
            b.reset();
            co_return;
        });
        test::pg_server::wait_until([&] { return ok + failed == 3; }, std::chrono::seconds(15),
                                    "the waiters' end");
        EXPECT_EQ(ok, 3) << "every waiter got a live connection";
        EXPECT_FALSE(query("SELECT 1"));
        drop_pool();
    }
}

// The server stops: acquires fail within the borrow timeout (never a hang), the circuit opens and
// then fails them at once; the server starts again and the same pool serves again by itself.
TEST_F(pg_pool_faults, a_stopped_server_opens_the_circuit_and_the_pool_recovers_when_it_is_back) {
    make_pool("f_stopped", 4, 2, std::chrono::seconds(1));
    EXPECT_FALSE(query("SELECT 1"));
    server.stop();
    int failures = 0;
    for (int i = 0; i < 20; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        const error_code ec = query("SELECT 1");
        const auto took = std::chrono::steady_clock::now() - t0;
        EXPECT_TRUE(ec) << "the server is down";
        EXPECT_LT(took, std::chrono::milliseconds(1500)) << "within the borrow timeout: " << ec.message();
        failures += ec ? 1 : 0;
    }
    EXPECT_EQ(failures, 20);
    const auto s = stats();
    EXPECT_GE(s.circuit_opened, 1u) << "the circuit opened";
    EXPECT_GE(s.unavailable_rejections, 1u) << "and then failed acquires at once";
    server.start();
    EXPECT_TRUE(recovers(std::chrono::seconds(20))) << "success resumes without restarting the pool";
    EXPECT_EQ(stats().circuit, respool::circuit_state::closed);
    drop_pool();
}

// A failover, simulated: the server becomes read-only (as a demoted primary would). The first write
// fails with read_only; its connection is closed and every connection made before is retired, so no
// borrower keeps writing to the old primary. When the server is writable again, writes succeed on the
// new connections.
TEST_F(pg_pool_faults, read_only_after_a_failover_retires_every_connection) {
    server.query("CREATE TABLE IF NOT EXISTS failover_t (x int)");
    make_pool("f_failover", 3, 3);
    EXPECT_FALSE(query("INSERT INTO failover_t VALUES (1)"));
    const auto before = server.backend_pids("f_failover");
    ASSERT_EQ(before.size(), 3u);
    server.query("ALTER SYSTEM SET default_transaction_read_only = on");
    server.query("SELECT pg_reload_conf()");
    test::pg_server::wait_until(
        [&] { return query("INSERT INTO failover_t VALUES (2)") == pg::condition::read_only; },
        std::chrono::seconds(10), "a write refused as read_only");
    test::pg_server::wait_until(
        [&] {
            for (int pid : server.backend_pids("f_failover"))
                if (std::find(before.begin(), before.end(), pid) != before.end()) return false;
            return true;
        },
        std::chrono::seconds(10), "every connection made before the failover gone");
    const auto s = stats();
    EXPECT_GE(s.broken, 1u) << "the connection that met read_only";
    EXPECT_GE(s.replaced, 1u) << "the others, retired";
    server.query("ALTER SYSTEM RESET default_transaction_read_only");
    server.query("SELECT pg_reload_conf()");
    test::pg_server::wait_until([&] { return !query("INSERT INTO failover_t VALUES (3)"); },
                                std::chrono::seconds(10), "writes accepted again");
    drop_pool();
}

// Pipelined statements across a restart: callers keep sending while the server restarts (fast and
// immediate). Each statement gets its own correct reply or connection_broken (those in flight on a
// connection that died), none hangs, and the same pool serves again by itself.
TEST_F(pg_pool_faults, pipelined_statements_across_a_restart_fail_cleanly_and_recover) {
    for (auto mode : {test::pg_server::stop_mode::fast, test::pg_server::stop_mode::immediate}) {
        SCOPED_TRACE(mode == test::pg_server::stop_mode::fast ? "restart -m fast" : "restart -m immediate");
        make_pool("f_pipe_restart", 2, 2, std::chrono::seconds(5), 8);
        std::atomic<bool> stop{false};
        std::atomic<int> ok{0}, broken{0}, other{0}, wrong{0}, callers_done{0};
        constexpr int callers = 16;
        for (int w = 0; w < callers; ++w)
            asio::co_spawn(
                l.io,
                [&, w]() -> asio::awaitable<void> {
                    for (int i = 0; !stop && i < 100000; ++i) {  // bounded
                        const int v = w * 100000 + i;
                        auto [ec, r] = co_await db->async_query("SELECT $1::int", pg::params(v),
                                                                asio::as_tuple(asio::use_awaitable));
                        if (!ec)
                            ++(r.get<std::int32_t>(0, 0) == v ? ok : wrong);
                        else if (ec == pg::condition::connection_broken)
                            ++broken;
                        else
                            ++other;  // the circuit, an acquire while the server was down
                    }
                    ++callers_done;
                },
                asio::detached);
        test::pg_server::wait_until([&] { return ok > 200; }, std::chrono::seconds(10), "statements flowing");
        server.restart(mode);
        const int after_restart = ok;
        test::pg_server::wait_until([&] { return ok > after_restart + 200; }, std::chrono::seconds(20),
                                    "statements flowing again after the restart");
        stop = true;
        test::pg_server::wait_until([&] { return callers_done == callers; }, std::chrono::seconds(10),
                                    "every caller's last statement answered");
        EXPECT_EQ(wrong, 0) << "every reply went to its own caller";
        EXPECT_GE(broken + other, 1) << "the restart was seen";
        EXPECT_EQ(stats().active, 0u) << "every carrier went back";
        drop_pool();
    }
}
