// respool::pg::connection against a real PostgreSQL server (the pg_cluster ctest fixture:
// tests/integration/pg_cluster.sh starts it and writes the connection string to the file named by
// RESPOOL_PG_CONNINFO_FILE). Connect, queries, results, server errors with their SQLSTATE, a wrong
// password (named, masked), the connect deadline against a loopback listener that never answers, and
// the completion tokens. Nothing waits on a guessed time: every step waits on its own completion.
#include "connect_targets.hpp"
#include "pg_test_support.hpp"

#include <respool/pg/connection.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "connect_targets.hpp"

#include <gtest/gtest.h>

#include <libpq-fe.h>

#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace pg = respool::pg;
using respool::error_code;

namespace {

using pg_test::conninfo;

// Runs one operation to completion on a fresh io_context and returns its outcome.
struct rig {
    asio::io_context io;
    pg::connection c{io.get_executor()};
    rig() { c.set_statement_mode(pg_test::statements()); }

    error_code connect(const std::string& info, std::chrono::steady_clock::duration timeout = 10s) {
        error_code out = pg::error::busy;
        c.async_connect(info, timeout, [&](error_code ec) { out = ec; });
        io.run();
        io.restart();
        return out;
    }
    std::pair<error_code, pg::result> query(const std::string& sql) {
        std::pair<error_code, pg::result> out{pg::error::busy, {}};
        c.async_query(sql, [&](error_code ec, pg::result r) { out = {ec, std::move(r)}; });
        io.run();
        io.restart();
        return out;
    }
};

class pg_connection : public ::testing::Test {
protected:
    void SetUp() override {
        info = conninfo();
        if (info.empty())
            GTEST_SKIP() << "RESPOOL_PG_CONNINFO_FILE not set: run through ctest -L integration";
    }
    std::string info;
};

TEST_F(pg_connection, connects_pings_and_reads_a_row) {
    rig r;
    ASSERT_FALSE(r.connect(info)) << r.c.last_error().message;
    EXPECT_TRUE(r.c.is_open());
    EXPECT_GT(r.c.backend_pid(), 0);
    error_code ping = pg::error::busy;
    r.c.async_ping([&](error_code ec) { ping = ec; });
    r.io.run();
    r.io.restart();
    EXPECT_FALSE(ping) << ping.message();
    auto [ec, res] = r.query("SELECT 1 AS one, pg_backend_pid() AS pid, NULL::int AS nothing");
    ASSERT_FALSE(ec) << r.c.last_error().message;
    ASSERT_EQ(res.rows(), 1u);
    ASSERT_EQ(res.columns(), 3u);
    EXPECT_EQ(res.column_name(0), "one");
    EXPECT_EQ(res.text(0, 0), "1");
    EXPECT_EQ(res.get<std::int32_t>(0, 1), r.c.backend_pid()) << "the pid is this connection's backend";
    EXPECT_TRUE(res.is_null(0, 2));
    EXPECT_THROW((void)res.text(0, 2), std::logic_error);
    EXPECT_THROW((void)res.text(1, 0), std::out_of_range);
    EXPECT_EQ(res.command_tag(), "SELECT 1");
}

// A host name is resolved by Asio, every address handed to libpq: "localhost" may list ::1 before
// 127.0.0.1, where the test server listens alone, and still connects.
TEST_F(pg_connection, a_host_name_is_resolved_asynchronously_and_every_address_is_tried) {
    std::string named = info;
    const auto h = named.find("host=127.0.0.1");
    ASSERT_NE(h, std::string::npos);
    named.replace(h, 14, "host=localhost");
    rig r;
    ASSERT_FALSE(r.connect(named)) << r.c.last_error().message;
    EXPECT_TRUE(r.c.is_open());
}

TEST_F(pg_connection, scripts_report_the_last_statement_and_affected_rows) {
    rig r;
    ASSERT_FALSE(r.connect(info)) << r.c.last_error().message;
    auto [ec, res] = r.query(
        "CREATE TEMP TABLE t (id int PRIMARY KEY, name text); INSERT INTO t VALUES (1, 'a'), (2, NULL), (3, "
        "'c')");
    ASSERT_FALSE(ec) << r.c.last_error().message;
    EXPECT_EQ(res.affected_rows(), 3u);
    EXPECT_EQ(res.command_tag(), "INSERT 0 3");
    std::tie(ec, res) = r.query("UPDATE t SET name = 'z' WHERE id >= 2");
    ASSERT_FALSE(ec);
    EXPECT_EQ(res.affected_rows(), 2u);
    std::tie(ec, res) = r.query("SELECT id, name FROM t ORDER BY id");
    ASSERT_FALSE(ec);
    ASSERT_EQ(res.rows(), 3u);
    EXPECT_EQ(res.text(2, 1), "z");
}

TEST_F(pg_connection, a_server_error_carries_its_sqlstate_and_the_connection_stays_usable) {
    rig r;
    ASSERT_FALSE(r.connect(info)) << r.c.last_error().message;
    auto [ec, res] = r.query("SELECT * FROM no_such_table");
    EXPECT_EQ(ec.category(), pg::sqlstate_category());
    EXPECT_EQ(pg::sqlstate_of(ec), "42P01") << ec.message();
    EXPECT_EQ(ec, pg::sqlstate_error("42P01"));
    EXPECT_EQ(ec.message(), "SQLSTATE 42P01");
    const pg::diagnostics& d = r.c.last_error();
    EXPECT_EQ(d.sqlstate, "42P01");
    EXPECT_EQ(d.severity, "ERROR");
    EXPECT_NE(d.message.find("no_such_table"), std::string::npos) << d.message;
    EXPECT_EQ(d.position, 15);
    std::tie(ec, res) = r.query("SELECT 2");
    EXPECT_FALSE(ec) << "still usable after a statement error";
    EXPECT_EQ(res.text(0, 0), "2");
    EXPECT_TRUE(r.c.last_error().message.empty()) << "a success clears the diagnostics";
}

TEST_F(pg_connection, a_wrong_password_is_an_authentication_error_and_never_shows_the_password) {
    std::string wrong = info;
    const auto p = wrong.find("password=");
    ASSERT_NE(p, std::string::npos);
    wrong = wrong.substr(0, p) + "password=not-the-secret-42";
    rig r;
    const error_code ec = r.connect(wrong);
    EXPECT_EQ(ec, pg::error::authentication_failed) << ec.message() << ": " << r.c.last_error().message;
    // Behind PgBouncer the pooler refuses the login itself, in its own words.
    const char* words =
        pg_test::behind_pooler() ? "SASL authentication failed" : "password authentication failed";
    EXPECT_NE(r.c.last_error().message.find(words), std::string::npos) << r.c.last_error().message;
    EXPECT_FALSE(r.c.is_open());
    EXPECT_EQ(r.c.conninfo().find("not-the-secret-42"), std::string::npos) << r.c.conninfo();
    EXPECT_NE(r.c.conninfo().find("password=***"), std::string::npos) << r.c.conninfo();
    EXPECT_EQ(r.c.last_error().message.find("not-the-secret-42"), std::string::npos);
}

// A TLS setting libpq does not know is refused at connect with libpq's words, and nothing is opened.
TEST_F(pg_connection, a_wrong_sslmode_is_a_connect_error_naming_it) {
    rig r;
    const error_code ec = r.connect(info + " sslmode=bogus");
    EXPECT_EQ(ec, pg::error::connect_failed) << ec.message() << ": " << r.c.last_error().message;
    EXPECT_NE(r.c.last_error().message.find("sslmode"), std::string::npos) << r.c.last_error().message;
    EXPECT_FALSE(r.c.is_open());
}

// A listener on loopback that accepts TCP but never speaks the protocol: only the deadline ends it.
TEST_F(pg_connection, the_connect_deadline_covers_a_server_that_never_answers) {
    rig r;
    asio::ip::tcp::acceptor mute(r.io, {asio::ip::make_address("127.0.0.1"), 0});  // listens, never accepts
    const auto port = mute.local_endpoint().port();
    const auto t0 = std::chrono::steady_clock::now();
    const error_code ec =
        r.connect("host=127.0.0.1 port=" + std::to_string(port) + " user=x dbname=x", 200ms);
    EXPECT_EQ(ec, pg::error::connect_timeout) << ec.message() << ": " << r.c.last_error().message;
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 200ms) << "not before the deadline";
    EXPECT_FALSE(r.c.is_open());
}

// Closing a connection under a connect ends every wait at once: the event loop is not kept busy until
// the connect deadline.
TEST_F(pg_connection, closing_during_a_connect_completes_it_at_once) {
    rig r;
    asio::ip::tcp::acceptor mute(r.io, {asio::ip::make_address("127.0.0.1"), 0});
    error_code out = pg::error::busy;
    int completions = 0;
    r.c.async_connect(
        "host=127.0.0.1 port=" + std::to_string(mute.local_endpoint().port()) + " user=x dbname=x", 1h,
        [&](error_code ec) {
            out = ec;
            ++completions;
        });
    asio::steady_timer later(r.io, 50ms);
    later.async_wait([&](error_code) {
        r.c.close();
        mute.close();
    });
    const auto t0 = std::chrono::steady_clock::now();
    r.io.run();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s)
        << "io.run() returned without waiting for the 1 h deadline";
    EXPECT_EQ(completions, 1);
    EXPECT_EQ(out, pg::condition::connection_broken) << out.message();
}

TEST_F(pg_connection, operations_on_a_closed_or_busy_connection_fail_at_once) {
    rig r;
    auto [ec, res] = r.query("SELECT 1");
    EXPECT_EQ(ec, pg::error::not_connected);
    ASSERT_FALSE(r.connect(info));
    std::pair<error_code, pg::result> first{pg::error::busy, {}}, second{{}, {}};
    r.c.async_query("SELECT pg_sleep(0.01)", [&](error_code e, pg::result x) { first = {e, std::move(x)}; });
    r.c.async_query("SELECT 1", [&](error_code e, pg::result x) { second = {e, std::move(x)}; });
    r.io.run();
    r.io.restart();
    EXPECT_FALSE(first.first) << first.first.message();
    EXPECT_EQ(second.first, pg::error::busy) << "one operation at a time";
    r.c.close();
    EXPECT_FALSE(r.c.is_open());
    std::tie(ec, res) = r.query("SELECT 1");
    EXPECT_EQ(ec, pg::error::not_connected);
}

TEST_F(pg_connection, bound_parameters_round_trip_every_supported_type) {
    rig r;
    ASSERT_FALSE(r.connect(info)) << r.c.last_error().message;
    const std::vector<std::byte> blob{std::byte{0}, std::byte{1}, std::byte{0x7f}, std::byte{0xff}};
    const std::string text = "h\xc3\xa9llo 'quoted' \\ $1";
    std::pair<error_code, pg::result> out{pg::error::busy, {}};
    r.c.async_query(
        "SELECT $1::int2, $2::int4, $3::int8, $4::float4, $5::float8, $6::bool, $7::text, $8::bytea, "
        "$9::int4, $10::text",
        pg::params(std::int16_t{-7}, 123456, std::numeric_limits<std::int64_t>::min(), 1.5f, -2.25, true,
                   text, blob, std::optional<int>{}, "plain"),
        [&](error_code ec, pg::result x) {
            out = {ec, std::move(x)};
        });
    r.io.run();
    r.io.restart();
    ASSERT_FALSE(out.first) << out.first.message() << ": " << r.c.last_error().message;
    const pg::result& res = out.second;
    EXPECT_EQ(res.get<std::int16_t>(0, 0), -7);
    EXPECT_EQ(res.get<std::int32_t>(0, 1), 123456);
    EXPECT_EQ(res.get<std::int64_t>(0, 2), std::numeric_limits<std::int64_t>::min());
    EXPECT_EQ(res.get<float>(0, 3), 1.5f);
    EXPECT_EQ(res.get<double>(0, 4), -2.25);
    EXPECT_TRUE(res.get<bool>(0, 5));
    EXPECT_EQ(res.get<std::string>(0, 6), text);
    EXPECT_EQ(res.get<std::vector<std::byte>>(0, 7), blob);
    EXPECT_TRUE(res.is_null(0, 8));
    EXPECT_EQ(res.get<std::optional<std::int32_t>>(0, 8), std::nullopt);
    EXPECT_EQ(res.get<std::optional<std::int32_t>>(0, 1), 123456);
    EXPECT_EQ(res.get<std::string>(0, 9), "plain");
    EXPECT_THROW((void)res.get<std::int32_t>(0, 8), std::logic_error) << "NULL into a plain int";
    EXPECT_THROW((void)res.get<std::int32_t>(0, 6), std::invalid_argument) << "text is not an integer";
    EXPECT_THROW((void)res.get<std::int16_t>(0, 1), std::invalid_argument) << "123456 does not fit 16 bits";
}

TEST_F(pg_connection, server_errors_compare_equal_to_their_conditions) {
    rig r;
    ASSERT_FALSE(r.connect(info));
    ASSERT_FALSE(r.query("CREATE TEMP TABLE u (id int PRIMARY KEY)").first);
    ASSERT_FALSE(r.query("INSERT INTO u VALUES (1)").first);
    auto [ec, res] = r.query("INSERT INTO u VALUES (1)");
    EXPECT_EQ(ec, pg::condition::unique_violation) << ec.message();
    EXPECT_NE(ec, pg::condition::connection_broken);
    // A read-only transaction may write temporary tables: a real table shows the refusal (25006).
    ASSERT_FALSE(r.query("CREATE TABLE IF NOT EXISTS condition_probe (id int)").first);
    std::tie(ec, res) = r.query("BEGIN READ ONLY; INSERT INTO condition_probe VALUES (2)");
    EXPECT_EQ(ec, pg::condition::read_only) << ec.message();
    std::tie(ec, res) = r.query("ROLLBACK; DROP TABLE condition_probe");
    EXPECT_FALSE(ec) << ec.message();
    std::tie(ec, res) = r.query("SELEC 1");
    EXPECT_EQ(ec, pg::condition::syntax_error) << ec.message();
}

TEST_F(pg_connection, a_parameter_is_data_never_sql) {
    rig r;
    ASSERT_FALSE(r.connect(info));
    ASSERT_FALSE(r.query("CREATE TEMP TABLE notes (body text)").first);
    const std::string hostile = "x'); DROP TABLE notes; --";
    std::pair<error_code, pg::result> out{pg::error::busy, {}};
    r.c.async_query("INSERT INTO notes VALUES ($1)", pg::params(hostile), [&](error_code ec, pg::result x) {
        out = {ec, std::move(x)};
    });
    r.io.run();
    r.io.restart();
    ASSERT_FALSE(out.first) << r.c.last_error().message;
    EXPECT_EQ(out.second.affected_rows(), 1u);
    auto [ec, res] = r.query("SELECT body FROM notes");
    ASSERT_FALSE(ec) << "the table is still there";
    EXPECT_EQ(res.get<std::string>(0, 0), hostile);
    // A missing parameter is the server's error, with its SQLSTATE.
    r.c.async_query("SELECT $1::int + $2::int", pg::params(1), [&](error_code e, pg::result x) {
        out = {e, std::move(x)};
    });
    r.io.run();
    r.io.restart();
    EXPECT_EQ(out.first.category(), pg::sqlstate_category()) << out.first.message();
    EXPECT_FALSE(pg::sqlstate_of(out.first).empty());
    EXPECT_FALSE(r.query("SELECT 1").first) << "still usable";
}

// Whether the server still runs a statement on backend `pid`: asked from a connection of its own.
// Filtered by pid because other test programs share the cluster and run the same statement.
int active_sleeps(const std::string& info, int pid) {
    rig watcher;
    if (watcher.connect(info)) return -1;
    auto [ec, res] = watcher.query(
        "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND "
        "query LIKE 'SELECT pg_sleep(30)%' AND pid = " +
        std::to_string(pid));
    return ec ? -1 : res.get<int>(0, 0);
}

TEST_F(pg_connection, a_statement_past_its_deadline_is_cancelled_on_the_server_and_the_connection_drained) {
    rig r;
    ASSERT_FALSE(r.connect(info));
    r.c.set_statement_timeout(200ms);
    const auto t0 = std::chrono::steady_clock::now();
    auto [ec, res] = r.query("SELECT pg_sleep(30)");
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_EQ(ec, pg::error::statement_timeout) << ec.message() << ": " << r.c.last_error().message;
    EXPECT_GE(took, 200ms);
    EXPECT_LT(took, 20s) << "the server stopped the statement; the client did not wait it out";
    EXPECT_TRUE(r.c.is_open()) << "drained, not destroyed";
    EXPECT_EQ(active_sleeps(info, r.c.backend_pid()), 0) << "the server no longer runs it";
    r.c.set_statement_timeout(0s);
    std::tie(ec, res) = r.query("SELECT 7");
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_EQ(res.get<int>(0, 0), 7);
}

TEST_F(pg_connection, asio_cancellation_cancels_the_statement_on_the_server) {
    rig r;
    ASSERT_FALSE(r.connect(info));
    asio::cancellation_signal cancel;
    std::pair<error_code, pg::result> out{pg::error::busy, {}};
    r.c.async_query("SELECT pg_sleep(30)",
                    asio::bind_cancellation_slot(cancel.slot(), [&](error_code e, pg::result x) {
                        out = {e, std::move(x)};
                    }));
    asio::steady_timer later(r.io, 100ms);
    later.async_wait([&](error_code) { cancel.emit(asio::cancellation_type::terminal); });
    const auto t0 = std::chrono::steady_clock::now();
    r.io.run();
    r.io.restart();
    EXPECT_EQ(out.first, asio::error::operation_aborted)
        << out.first.message() << ": " << r.c.last_error().message;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s);
    EXPECT_TRUE(r.c.is_open());
    EXPECT_EQ(active_sleeps(info, r.c.backend_pid()), 0);
    auto [ec, res] = r.query("SELECT 8");
    EXPECT_FALSE(ec) << "usable after the cancel";
}

TEST_F(pg_connection, listen_receives_notifications_in_order_and_none_is_lost_between_waits) {
    rig listener, sender;
    ASSERT_FALSE(listener.connect(info));
    ASSERT_FALSE(sender.connect(info));
    ASSERT_FALSE(listener.query("LISTEN jobs").first);
    // Two before anyone waits (one arrives during the listener's next query), one while it waits.
    ASSERT_FALSE(sender.query("NOTIFY jobs, 'first'").first);
    ASSERT_FALSE(sender.query("NOTIFY other, 'not for us'").first);
    ASSERT_FALSE(sender.query("NOTIFY jobs, 'second'").first);
    ASSERT_FALSE(listener.query("SELECT 1").first);  // reads the notifications with its reply
    std::vector<pg::notification> got;
    std::vector<error_code> outcomes;
    for (int i = 0; i < 2; ++i) {
        listener.c.async_wait_notification([&](error_code ec, pg::notification n) {
            outcomes.push_back(ec);
            if (!ec) got.push_back(std::move(n));
        });
        listener.io.run();
        listener.io.restart();
    }
    EXPECT_EQ(outcomes, (std::vector<error_code>{{}, {}}));
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].channel, "jobs");
    EXPECT_EQ(got[0].payload, "first");
    EXPECT_EQ(got[1].payload, "second");
    EXPECT_EQ(got[0].sender_pid, sender.c.backend_pid());
    // The third is sent while the listener waits: the wait completes when it arrives.
    error_code third = pg::error::busy;
    listener.c.async_wait_notification([&](error_code ec, pg::notification n) {
        third = ec;
        got.push_back(std::move(n));
    });
    asio::steady_timer later(listener.io, 20ms);
    later.async_wait([&](error_code) { ASSERT_FALSE(sender.query("NOTIFY jobs, 'third'").first); });
    listener.io.run();
    listener.io.restart();
    EXPECT_FALSE(third) << third.message();
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[2].payload, "third");
}

TEST_F(pg_connection, a_cancelled_notification_wait_leaves_the_connection_usable) {
    rig r;
    ASSERT_FALSE(r.connect(info));
    ASSERT_FALSE(r.query("LISTEN quiet").first);
    asio::cancellation_signal cancel;
    error_code out = pg::error::busy;
    r.c.async_wait_notification(
        asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec, pg::notification) { out = ec; }));
    asio::steady_timer later(r.io, 20ms);
    later.async_wait([&](error_code) { cancel.emit(asio::cancellation_type::terminal); });
    r.io.run();
    r.io.restart();
    EXPECT_EQ(out, asio::error::operation_aborted) << out.message();
    EXPECT_TRUE(r.c.is_open());
    EXPECT_FALSE(r.query("SELECT 1").first);
}

// libpq's socket is TCP or a Unix-domain socket; either way a reply is waited for on it (a peek of one
// byte, which leaves the byte for libpq), a reply of many reads arrives whole, and a backend the server
// ends while a statement waits fails that statement as a broken connection, at once.
TEST_F(pg_connection, over_tcp_and_a_unix_socket_replies_arrive_whole_and_a_terminated_backend_is_seen) {
    if (pg_test::behind_pooler()) GTEST_SKIP() << "a pooler has no unix_socket_directories to show";
    pg_test::run([this]() -> asio::awaitable<void> {
        auto admin = co_await pg_test::admin::open();
        const pg::result dirs = co_await admin.query("SHOW unix_socket_directories");
        const std::string listed(dirs.text(0, 0));
        std::string local = info;
        const auto h = local.find("host=127.0.0.1");
        EXPECT_NE(h, std::string::npos);
        if (h == std::string::npos) co_return;
        local.replace(h, 14, "host=" + listed.substr(0, listed.find(',')));
        for (const std::string& target : {info, local}) {
            SCOPED_TRACE(target == info ? "TCP" : "Unix-domain socket");
            pg::connection c(co_await asio::this_coro::executor);
            auto [connected] = co_await c.async_connect(target, 10s, asio::as_tuple(asio::use_awaitable));
            EXPECT_FALSE(connected) << c.last_error().message;
            if (connected) co_return;
            // About 5 MB: libpq reads it in many pieces, each after a wait.
            auto [ec, big] =
                co_await c.async_query("SELECT g, repeat('x', 100) FROM generate_series(1, 50000) g",
                                       asio::as_tuple(asio::use_awaitable));
            EXPECT_FALSE(ec) << c.last_error().message;
            EXPECT_EQ(big.rows(), 50000u);
            if (big.rows() == 50000u) {
                EXPECT_EQ(big.text(49999, 0), "50000");
            }
            auto [bound_ec, bound] = co_await c.async_query("SELECT $1::int + 1", pg::params(41),
                                                            asio::as_tuple(asio::use_awaitable));
            EXPECT_FALSE(bound_ec) << c.last_error().message;
            EXPECT_EQ(bound.text(0, 0), "42");

            const int pid = c.backend_pid();
            bool ended = false;
            error_code why;
            c.async_query("SELECT pg_sleep(60)", [&](error_code e, pg::result) {
                ended = true;
                why = e;
            });
            co_await admin.wait_until([pid](pg_test::admin& a) -> asio::awaitable<bool> {
                co_return co_await a.count("SELECT count(*) FROM pg_stat_activity WHERE pid = " +
                                           std::to_string(pid) + " AND query LIKE 'SELECT pg_sleep%'") == 1;
            });
            co_await admin.terminate(pid);
            co_await pg_test::poll_until([&] { return ended; });
            EXPECT_TRUE(ended) << "the statement never ended";
            EXPECT_EQ(why, pg::condition::connection_broken) << why.message();
            EXPECT_FALSE(c.last_error().message.empty());
        }
    });
}

TEST_F(pg_connection, works_with_use_awaitable_and_deferred) {
    asio::io_context io;
    bool done = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            pg::connection c(co_await asio::this_coro::executor);
            co_await c.async_connect(info, 10s, asio::use_awaitable);
            pg::result r = co_await c.async_query("SELECT 40 + 2", asio::use_awaitable);
            EXPECT_EQ(r.text(0, 0), "42");
            auto op = c.async_query("SELECT 'deferred'", asio::deferred);
            pg::result d = co_await std::move(op)(asio::use_awaitable);
            EXPECT_EQ(d.text(0, 0), "deferred");
            try {
                co_await c.async_query("SELECT 1/0", asio::use_awaitable);
                ADD_FAILURE() << "division by zero must fail";
            } catch (const boost::system::system_error& e) {
                EXPECT_EQ(pg::sqlstate_of(e.code()), "22012");
            }
            done = true;
        },
        [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
    io.run();
    EXPECT_TRUE(done);
}

}  // namespace

TEST(pg_conditions, each_condition_matches_its_sqlstates_and_the_connections_own_errors) {
    using pg::condition;
    EXPECT_EQ(pg::sqlstate_error("23505"), condition::unique_violation);
    EXPECT_NE(pg::sqlstate_error("23505"), condition::foreign_key_violation);
    EXPECT_EQ(pg::sqlstate_error("40001"), condition::serialization_failure);
    EXPECT_EQ(pg::sqlstate_error("40P01"), condition::deadlock);
    EXPECT_EQ(pg::sqlstate_error("25006"), condition::read_only);
    EXPECT_EQ(pg::sqlstate_error("57014"), condition::query_cancelled);
    for (const char* s : {"08000", "08006", "08P01", "57P01", "57P02", "57P03"})
        EXPECT_EQ(pg::sqlstate_error(s), condition::connection_broken) << s;
    for (const char* s : {"23505", "40001", "42601", "57014", "57P04"})
        EXPECT_NE(pg::sqlstate_error(s), condition::connection_broken) << s << ": an SQL error never poisons";
    EXPECT_EQ(respool::error_code(pg::error::connection_broken), condition::connection_broken);
    EXPECT_EQ(respool::error_code(pg::error::connect_timeout), condition::connection_broken);
    EXPECT_EQ(respool::error_code(pg::error::statement_timeout), condition::query_cancelled);
    EXPECT_NE(respool::error_code(pg::error::busy), condition::connection_broken);
    EXPECT_EQ(pg::make_error_condition(condition::deadlock).message(), "deadlock detected");
}

TEST(pg_masking, passwords_are_masked_in_every_form) {
    EXPECT_EQ(pg::masked("host=db user=app password=s3cret dbname=x"),
              "host=db user=app password=*** dbname=x");
    EXPECT_EQ(pg::masked("password = 's3 c\\'ret' host=db"), "password = *** host=db");
    EXPECT_EQ(pg::masked("postgresql://app:s3cret@db:5432/x"), "postgresql://app:***@db:5432/x");
    EXPECT_EQ(pg::masked("postgres://app@db/x?password=s3cret&sslmode=require"),
              "postgres://app@db/x?password=***&sslmode=require");
    EXPECT_EQ(pg::masked("host=db user=app"), "host=db user=app");
}

// What tests/fuzz/fuzz_conninfo_masking found, checked against libpq's reading of each string.
TEST(pg_masking, the_fuzzer_s_finds_stay_masked) {
    EXPECT_EQ(pg::masked("password\r=s3cret"), "password\r=***") << "any blank around '=', as libpq";
    EXPECT_EQ(pg::masked("password=\ts3cret host=db"), "password=\t*** host=db");
    EXPECT_EQ(pg::masked("password=s3\\ cret host=db"), "password=*** host=db") << "an escaped blank";
    EXPECT_EQ(pg::masked("user=bob'password='x password='s3cret'"), "user=bob'password='x password=***")
        << "a password inside another value is that value";
    EXPECT_EQ(pg::masked("postgresql://u?x:y@h?password=s3cret"), "postgresql://u?x:***@h?password=***")
        << "the query starts after the credentials";
    EXPECT_EQ(pg::masked("postgresql://h/db?pass%77ord=s3cret"), "postgresql://h/db?pass%77ord=***")
        << "a percent-encoded key";
    EXPECT_EQ(pg::masked("password=s3cret x=1 password='a b' y"), "password=*** x=1 password=*** y")
        << "free text: each password value";
    EXPECT_EQ(pg::masked("relation \"t\" does not exist"), "relation \"t\" does not exist");
}

// Text that carries a connection string somewhere inside it: libpq's own parse errors (which quote the
// URI, or the token that failed), a CLI message quoting an argument. Every one goes through masked().
TEST(pg_masking, connection_strings_inside_messages_are_masked) {
    EXPECT_EQ(pg::masked("postgresql://[?passwor]?password=s3cret"), "postgresql://[?passwor]?password=***")
        << "a '?' inside an IPv6 host's brackets does not start the query";
    EXPECT_EQ(pg::masked("end of string reached when looking for matching \"]\" in IPv6 host address in "
                         "URI: \"postgresql://app:s3cret@[::1/postgres\"\n"),
              "end of string reached when looking for matching \"]\" in IPv6 host address in URI: "
              "\"postgresql://app:***@[::1/postgres\"\n");
    EXPECT_EQ(pg::masked("bad URI \"postgresql://[::1/db?password=s3cret\""),
              "bad URI \"postgresql://[::1/db?password=***")
        << "a URI libpq refuses: its query masked to the end";
    EXPECT_EQ(pg::masked("invalid percent-encoded token: \"s3%zzcret\"\n"),
              "invalid percent-encoded token: \"***\"\n");
    EXPECT_EQ(pg::masked("forbidden value %00 in percent-encoded value: \"s3%00cret\"\n"),
              "forbidden value %00 in percent-encoded value: \"***\"\n");
    EXPECT_EQ(pg::masked("missing \"=\" after \"cret\" in connection info string\n"),
              "missing \"=\" after \"***\" in connection info string\n")
        << "the rest of a password with a blank in it";
    EXPECT_EQ(pg::masked("password=s3 cret host=db"), "password=*** host=db")
        << "libpq refuses it: the password went on to the next keyword";
    const std::string quoted = "'host=x password=s3 cret' is not valid: option port: \"x\"";
    EXPECT_EQ(pg::masked(quoted), "'host=x password=***' is not valid: option port: \"x\"")
        << "a quoted connection string ends at its quote";
    EXPECT_EQ(pg::masked(pg::masked(quoted)), pg::masked(quoted))
        << "masking a masked message changes nothing";
    EXPECT_EQ(pg::masked("The following argument was not expected: postgres://u:s3cret@h/db"),
              "The following argument was not expected: postgres://u:***@h/db");
    EXPECT_EQ(pg::masked("one postgresql://h/x and postgresql://u:s3cret@h/y"),
              "one postgresql://h/x and postgresql://u:***@h/y")
        << "each URI in the text";
}

// A host that resolves to several addresses (localhost: ::1 and 127.0.0.1) is handed to libpq once
// per address; with one port per host, the port list must follow, or libpq refuses the connect
// ("could not match 2 port numbers to 3 hosts").
TEST(pg_connect_targets, a_host_with_several_addresses_keeps_its_own_port) {
    const auto t =
        pg::detail::targets_of({"localhost", "db2"}, {{"::1", "127.0.0.1"}, {"127.0.0.2"}}, "5432,5433");
    EXPECT_EQ(t.host, "localhost,localhost,db2");
    EXPECT_EQ(t.hostaddr, "::1,127.0.0.1,127.0.0.2");
    EXPECT_EQ(t.port, "5432,5432,5433");
    // libpq's own verdict on the lists (it checks them before any I/O).
    const char* keys[] = {"host", "hostaddr", "port", "dbname", "connect_timeout", nullptr};
    const char* values[] = {t.host.c_str(), t.hostaddr.c_str(), t.port.c_str(), "x", "1", nullptr};
    PGconn* c = PQconnectStartParams(keys, values, 0);
    ASSERT_NE(c, nullptr);
    const std::string error = PQstatus(c) == CONNECTION_BAD ? PQerrorMessage(c) : "";
    PQfinish(c);
    EXPECT_EQ(error, "");
    // One port for all, or none: left as given.
    EXPECT_EQ(pg::detail::targets_of({"localhost"}, {{"::1", "127.0.0.1"}}, "5432").port, "5432");
    EXPECT_EQ(pg::detail::targets_of({"localhost"}, {{"::1", "127.0.0.1"}}, "").port, "");
    EXPECT_EQ(pg::detail::targets_of({"/tmp/s", "h"}, {{""}, {"127.0.0.1"}}, ",5433").port, ",5433");
}
