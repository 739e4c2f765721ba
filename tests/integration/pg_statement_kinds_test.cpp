// No statement kind can freeze the event loop: every kind of reply libpq can hand the query loop
// (rows, commands, the empty query, errors, notices, scripts, COPY in each direction, a statement past
// its deadline) ends the statement, and a heartbeat timer on the same loop keeps firing throughout.
// COPY ... FROM STDIN / TO STDOUT is refused before it is sent, naming what to use; one that the text
// check cannot see (standard_conforming_strings off makes the server read a literal differently) is
// ended when the server starts it. Parameters that cannot be sent exactly are refused where they are
// made. A loop that froze would never come back: a watchdog fails the test instead of hanging it.
#include "pg_test_support.hpp"

#include <respool/pg/pool.hpp>

#include <boost/asio/detached.hpp>

#include <cstdio>
#include <cstring>
#include <future>
#include <vector>

using namespace pg_test;
using respool::error_code;

namespace {

class pg_statement_kinds : public ::testing::Test {
protected:
    void SetUp() override {
        if (conninfo().empty())
            GTEST_SKIP() << "RESPOOL_PG_CONNINFO_FILE not set: run through ctest -L integration";
    }
};

// Runs `body` on a loop of its own thread next to a heartbeat timer (every 5 ms) and returns the
// longest time the heartbeat waited beyond its period. Should the loop stop coming back, the watchdog
// ends the process with a failure (a frozen loop cannot be unwound).
template <class F>
std::chrono::steady_clock::duration with_heartbeat(F body, const char* what) {
    asio::io_context io;
    auto longest = std::chrono::steady_clock::duration::zero();
    bool stop = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            asio::steady_timer t(io);
            auto last = std::chrono::steady_clock::now();
            while (!stop) {
                t.expires_after(5ms);
                co_await t.async_wait(asio::use_awaitable);
                const auto now = std::chrono::steady_clock::now();
                longest = std::max(longest, now - last - 5ms);
                last = now;
            }
        },
        asio::detached);
    auto done = asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            struct stop_heartbeat {  // also when the body throws
                bool& s;
                ~stop_heartbeat() { s = true; }
            } guard{stop};
            co_await body();
        },
        asio::use_future);
    std::thread runner([&] { io.run(); });
    if (done.wait_for(60s) != std::future_status::ready) {
        std::fprintf(stderr, "FAILED: %s: the event loop stopped coming back (frozen)\n", what);
        std::fflush(stderr);
        std::_Exit(1);
    }
    runner.join();
    done.get();
    return longest;
}

asio::awaitable<pg::connection> open() {
    pg::connection c(co_await asio::this_coro::executor);
    co_await c.async_connect(conninfo(), 10s, asio::use_awaitable);
    co_return c;
}

asio::awaitable<int> pid_of(pg::connection& c) {
    auto r = co_await c.async_query("SELECT pg_backend_pid()", asio::use_awaitable);
    co_return r.get<std::int32_t>(0, 0);
}

// The server reads '\'' as a quote when standard_conforming_strings is off; the text check reads it as
// the start of a literal that runs to the end: the COPY between is invisible to it.
std::string hidden(const std::string& copy) {
    return "SELECT '\\'' AS x; " + copy + "; -- '";
}

}  // namespace

TEST_F(pg_statement_kinds, a_heartbeat_keeps_firing_while_every_statement_kind_runs) {
    struct kind {
        std::string sql;
        bool ok;
    };
    const std::vector<kind> kinds = {
        {"SELECT 1", true},
        {"SELECT pg_sleep(0.2)", true},
        {"SELECT g, repeat('x', 100) FROM generate_series(1, 20000) g", true},
        {"", true},  // the empty query
        {"SELECT 1; SELECT 2; SELECT 3", true},
        {"DO $$ BEGIN RAISE NOTICE 'a notice'; RAISE WARNING 'a warning'; END $$", true},
        {"NOTIFY somewhere, 'x'", true},
        {"SELECT * FROM respool_no_such_table", false},
        {"COPY (SELECT 1) TO STDOUT", false},
        {"COPY respool_copy_target FROM STDIN", false},
        {"copy respool_copy_target from stdin with (format csv)", false},
        {"SELECT 1; COPY (SELECT 2) TO STDOUT", false},
        {hidden("COPY respool_copy_target FROM STDIN"), false},  // ended with CopyFail
        {hidden("COPY (SELECT 1) TO STDOUT"), false},            // the connection is closed
        {"SELECT pg_sleep(30)", false},                          // past its 300 ms deadline
    };
    for (const kind& k : kinds) {
        const auto longest = with_heartbeat(
            [&]() -> asio::awaitable<void> {
                pg::connection c = co_await open();
                c.set_statement_timeout(300ms);
                co_await c.async_query(
                    "SET standard_conforming_strings = off; SET escape_string_warning = off; "
                    "CREATE TEMP TABLE respool_copy_target (x int)",
                    asio::use_awaitable);
                const auto started = std::chrono::steady_clock::now();
                auto [ec, r] = co_await c.async_query(k.sql, asio::as_tuple(asio::use_awaitable));
                EXPECT_EQ(!ec, k.ok) << k.sql << ": " << ec.message() << ": " << c.last_error().message;
                EXPECT_LT(std::chrono::steady_clock::now() - started, 10s) << k.sql;
            },
            k.sql.c_str());
        EXPECT_LT(longest, 1s) << "the loop was held while running: " << k.sql;
    }
}

TEST_F(pg_statement_kinds, a_copy_is_refused_before_it_is_sent_naming_what_to_use) {
    run([]() -> asio::awaitable<void> {
        pg::connection c = co_await open();
        const int pid = co_await pid_of(c);
        co_await c.async_query("CREATE TEMP TABLE respool_copy_target (x int)", asio::use_awaitable);
        for (const char* sql : {"COPY respool_copy_target FROM STDIN", "COPY (SELECT 1) TO STDOUT",
                                "/* bulk */ Copy respool_copy_target (x) FROM stdin",
                                "SELECT 1; COPY "
                                "respool_copy_target TO STDOUT"}) {
            for (const bool bound : {false, true}) {
                error_code ec;
                if (bound)
                    std::tie(ec, std::ignore) =
                        co_await c.async_query(sql, pg::params(), asio::as_tuple(asio::use_awaitable));
                else
                    std::tie(ec, std::ignore) =
                        co_await c.async_query(sql, asio::as_tuple(asio::use_awaitable));
                EXPECT_EQ(ec, pg::error::unsupported_statement) << sql;
                EXPECT_NE(c.last_error().message.find("INSERT"), std::string::npos) << c.last_error().message;
                EXPECT_NE(c.last_error().message.find("COPY sub-protocol"), std::string::npos);
            }
        }
        EXPECT_EQ(co_await pid_of(c), pid) << "nothing was sent: the connection is as it was";
        auto r = co_await c.async_query("SELECT count(*) FROM respool_copy_target", asio::use_awaitable);
        EXPECT_EQ(r.get<std::int64_t>(0, 0), 0);
        // A COPY with a server-side file or program is an ordinary statement, not refused.
        auto [ec, r2] = co_await c.async_query("COPY respool_copy_target FROM '/nonexistent/respool'",
                                               asio::as_tuple(asio::use_awaitable));
        EXPECT_NE(ec, pg::error::unsupported_statement);
    });
}

TEST_F(pg_statement_kinds, a_copy_the_text_check_cannot_see_is_ended_when_the_server_starts_it) {
    run([]() -> asio::awaitable<void> {
        pg::connection c = co_await open();
        const int pid = co_await pid_of(c);
        co_await c.async_query(
            "SET standard_conforming_strings = off; SET escape_string_warning = off; "
            "CREATE TEMP TABLE respool_copy_target (x int)",
            asio::use_awaitable);
        // FROM STDIN: CopyFail ends it on the server; the connection stays, outside any transaction.
        auto [ec, r] = co_await c.async_query(hidden("COPY respool_copy_target FROM STDIN"),
                                              asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, pg::error::unsupported_statement);
        EXPECT_NE(c.last_error().message.find("COPY sub-protocol"), std::string::npos);
        EXPECT_EQ(c.transaction_state(), pg::transaction_status::idle);
        EXPECT_EQ(co_await pid_of(c), pid) << "the same backend, still usable";
        // TO STDOUT: the rows already on their way cannot be refused: the connection is closed.
        std::tie(ec, r) =
            co_await c.async_query(hidden("COPY (SELECT 1) TO STDOUT"), asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, pg::error::unsupported_statement);
        EXPECT_FALSE(c.is_open());
    });
}

TEST_F(pg_statement_kinds, a_pool_refuses_a_copy_and_keeps_its_connection) {
    run([]() -> asio::awaitable<void> {
        pg::pool_config cfg;
        cfg.conninfo = tagged("t_copy_pool");
        cfg.statements = pg_test::statements();
        cfg.max = 1;
        cfg.min_idle = 1;
        cfg.pipeline_depth = 4;
        pg::pool db(co_await asio::this_coro::executor, cfg);
        auto [ec, r] =
            co_await db.async_query("COPY (SELECT 1) TO STDOUT", asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, pg::error::unsupported_statement);
        std::tie(ec, r) =
            co_await db.async_query("COPY (SELECT $1::int) TO STDOUT", pg::params(std::int32_t{1}),
                                    asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, pg::error::unsupported_statement);
        r = co_await db.async_query("SELECT 1", asio::use_awaitable);
        EXPECT_EQ(r.get<std::int32_t>(0, 0), 1);
        EXPECT_EQ(db.stats().destructions, 0u);
    });
}

TEST_F(pg_statement_kinds, a_text_parameter_with_a_nul_byte_is_refused_before_anything_is_sent) {
    const std::string with_nul("abc\0def", 7);
    try {
        pg::params p(std::int32_t{1}, with_nul);
        ADD_FAILURE() << "accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("$2"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("NUL"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("bytea"), std::string::npos) << e.what();
    }
    EXPECT_THROW(pg::params().add(std::string_view("\0", 1)), std::invalid_argument);
    pg::params many;
    for (int i = 0; i < 65535; ++i) many.add(std::int32_t{i});
    EXPECT_THROW(many.add(std::int32_t{0}), std::invalid_argument) << "a Bind carries at most 65535";
    // The same bytes as bytea arrive whole.
    run([&]() -> asio::awaitable<void> {
        pg::connection c = co_await open();
        std::vector<std::byte> bytes(with_nul.size());
        std::memcpy(bytes.data(), with_nul.data(), bytes.size());
        auto r = co_await c.async_query("SELECT $1::bytea", pg::params(bytes), asio::use_awaitable);
        EXPECT_EQ(r.get<std::vector<std::byte>>(0, 0), bytes);
    });
}
