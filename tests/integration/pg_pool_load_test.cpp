// respool::pg::pool under load and against a wrong password, on the real server: the server never
// sees more of the pool's backends than max, none after close, and a wrong password fails fast with
// a clear, masked message while the pool backs off (the attempts are counted in the server's log).
#include "pg_test_support.hpp"

#include <respool/pg/pool.hpp>

#include <boost/asio/detached.hpp>

#include <algorithm>
#include <cstdio>
#include <set>

using namespace pg_test;
using respool::error_code;

namespace {

class pg_pool_load : public ::testing::Test {
protected:
    void SetUp() override {
        if (conninfo().empty())
            GTEST_SKIP() << "RESPOOL_PG_CONNINFO_FILE not set: run through ctest -L integration";
    }
};

std::size_t occurrences(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
    return n;
}

}  // namespace

TEST_F(pg_pool_load, the_server_never_sees_more_than_max_backends_and_none_after_close) {
    run([]() -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        pg::pool_config c;
        c.conninfo = tagged("t_load");
        c.max = 8;
        pg::pool db(ex, c);
        admin a = co_await admin::open();
        constexpr int workers = 64, rounds = 20;
        int ok = 0, finished = 0;
        for (int w = 0; w < workers; ++w)
            asio::co_spawn(
                ex,
                [&, w]() -> asio::awaitable<void> {
                    for (int i = 0; i < rounds; ++i) {
                        if (i % 4 == 0) {
                            co_await db.transaction(
                                [w](pg::connection& conn) -> asio::awaitable<void> {
                                    co_await conn.async_query("SELECT $1::int", pg::params(w),
                                                              asio::use_awaitable);
                                },
                                {}, asio::use_awaitable);
                        } else {
                            auto r = co_await db.async_query("SELECT $1::int, pg_sleep(0.001)", pg::params(w),
                                                             asio::use_awaitable);
                            EXPECT_EQ(r.get<std::int32_t>(0, 0), w);
                        }
                        ++ok;
                    }
                    ++finished;
                },
                asio::detached);
        std::int64_t most = 0;
        asio::steady_timer tick(ex);
        for (int samples = 0; finished < workers && samples < 2000; ++samples) {  // bounded: 2000 samples
            most = std::max(most, co_await a.backends("t_load"));
            tick.expires_after(5ms);
            co_await tick.async_wait(asio::use_awaitable);
        }
        EXPECT_EQ(finished, workers);
        EXPECT_EQ(ok, workers * rounds);
        EXPECT_GE(most, 1);
        EXPECT_LE(most, 8) << "pg_stat_activity never above max";
        const auto s = db.stats();
        EXPECT_EQ(s.acquires, static_cast<std::uint64_t>(workers * rounds));
        EXPECT_EQ(s.poisoned, 0u);
        EXPECT_LE(s.creations, 8u);
        auto [closed] = co_await db.async_close(std::chrono::seconds(5), asio::as_tuple(asio::use_awaitable));
        EXPECT_FALSE(closed) << closed.message();
        co_await a.wait_until(
            [](admin& x) -> asio::awaitable<bool> { co_return co_await x.backends("t_load") == 0; });
    });
}

// A wrong password: every acquire fails at once (authentication_failed, then unavailable once the
// circuit opens; never a hang), the message names authentication and never holds the password, and
// the server sees few attempts (back-off), each of them counted in its log.
TEST_F(pg_pool_load, a_wrong_password_fails_fast_names_authentication_and_backs_off) {
    run([]() -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        admin a = co_await admin::open();
        co_await a.query("DROP ROLE IF EXISTS backoff_user");
        co_await a.query("CREATE ROLE backoff_user LOGIN PASSWORD 'the-right-one'");
        const std::string logged = "password authentication failed for user \"backoff_user\"";
        const std::size_t before = occurrences(server_log(), logged);

        pg::pool_config c;
        c.conninfo = tagged("t_backoff") + " user=backoff_user password=wrong-secret";
        c.max = 4;
        c.borrow_timeout = std::chrono::milliseconds(500);
        pg::pool db(ex, c);
        int attempts = 0, done = 0;
        std::set<std::string> kinds;
        std::string first_message;
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        for (int w = 0; w < 4; ++w)
            asio::co_spawn(
                ex,
                [&]() -> asio::awaitable<void> {
                    asio::steady_timer pause(ex);
                    while (std::chrono::steady_clock::now() < end) {
                        respool::diagnostics diag;
                        const auto t0 = std::chrono::steady_clock::now();
                        auto [ec, l] = co_await db.async_acquire(c.borrow_timeout, &diag,
                                                                 asio::as_tuple(asio::use_awaitable));
                        ++attempts;
                        EXPECT_TRUE(ec);
                        EXPECT_LT(std::chrono::steady_clock::now() - t0, c.borrow_timeout + 200ms)
                            << "never a hang";
                        kinds.insert(ec.message());
                        if (ec == pg::error::authentication_failed && first_message.empty())
                            first_message = diag.message;
                        pause.expires_after(20ms);
                        co_await pause.async_wait(asio::use_awaitable);
                    }
                    ++done;
                },
                asio::detached);
        asio::steady_timer wait(ex);
        while (done < 4) {
            wait.expires_after(50ms);
            co_await wait.async_wait(asio::use_awaitable);
        }
        EXPECT_NE(first_message.find("authentication"), std::string::npos) << first_message;
        EXPECT_EQ(first_message.find("wrong-secret"), std::string::npos) << first_message;
        for (const auto& k : kinds) EXPECT_EQ(k.find("wrong-secret"), std::string::npos);
        EXPECT_TRUE(kinds.count(pg::make_error_code(pg::error::authentication_failed).message())) << "named";
        const auto s = db.stats();
        const std::size_t seen = occurrences(server_log(), logged) - before;
        std::printf(
            "[ figures  ] wrong password: %d acquires in 2 s, %llu connection attempts (server log: %zu), "
            "circuit opened %llu time(s)\n",
            attempts, static_cast<unsigned long long>(s.create_failures), seen,
            static_cast<unsigned long long>(s.circuit_opened));
        EXPECT_EQ(seen, s.create_failures) << "every attempt reached the server once";
        EXPECT_GE(s.create_failures, 1u);
        EXPECT_LE(s.create_failures, 12u) << "backed off: " << attempts << " acquires in 2 s";
        EXPECT_GE(attempts, 40);
        EXPECT_GE(s.circuit_opened, 1u) << "the circuit opened";
        db.close();
        co_await a.query("DROP ROLE backoff_user");
    });
}
