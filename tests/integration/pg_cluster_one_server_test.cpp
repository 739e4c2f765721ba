// respool::pg::cluster against the one test server (pg_cluster fixture): what a cluster does without
// standbys - the role learned, writes and reads on the primary, a host that is down, a read that asks
// for a standby where there is none, the commit token, close. The replicated tests (failover, fencing,
// lag, read-your-writes across hosts) are in pg_cluster_replicas_test.cpp.
#include "pg_test_support.hpp"

#include <respool/pg/cluster.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <string>
#include <vector>

namespace {

using namespace pg_test;

// A loopback port nothing listens on: bound, then closed (the kernel does not hand it out again at once).
std::uint16_t closed_port() {
    asio::io_context io;
    asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
    return a.local_endpoint().port();
}

// The test server's conninfo with a dead host in front of it: host=127.0.0.1,127.0.0.1 port=DEAD,LIVE.
std::string with_dead_host_first() {
    std::string info = conninfo();
    const auto at = info.find("port=");
    const auto end = info.find(' ', at);
    const std::string live = info.substr(at + 5, end - at - 5);
    info.replace(at, end - at, "port=" + std::to_string(closed_port()) + "," + live);
    const auto host = info.find("host=127.0.0.1");
    info.replace(host, 14, "host=127.0.0.1,127.0.0.1");
    return info;
}

pg::cluster_config fast_config(std::string info) {
    pg::cluster_config c;
    c.pool.conninfo = std::move(info);
    c.pool.max = 4;
    c.pool.min_idle = 0;
    c.topology_interval = 200ms;
    c.no_primary_interval = 20ms;
    c.failover_wait = 300ms;
    return c;
}

asio::awaitable<int> server_port(pg::cluster& db, std::optional<pg::read_options> r = std::nullopt) {
    pg::result res;  // (no co_await inside ?: with GCC 12)
    if (r)
        res = co_await db.async_query(*r, "SELECT inet_server_port()", pg::params(), asio::use_awaitable);
    else
        res = co_await db.async_query("SELECT inet_server_port()", asio::use_awaitable);
    co_return res.get<std::int32_t>(0, 0);
}

}  // namespace

TEST(pg_cluster_one_server, learns_the_primary_and_sends_writes_and_reads_there) {
    run([]() -> asio::awaitable<void> {
        pg::cluster db(co_await asio::this_coro::executor, fast_config(conninfo()));
        co_await db.async_wait_ready(asio::use_awaitable);
        const pg::cluster_stats st = db.stats();
        if (st.hosts.size() != 1u) co_return ADD_FAILURE() << st.hosts.size() << " hosts";
        EXPECT_EQ(st.primary, 0u);
        EXPECT_EQ(st.hosts[0].role, pg::host_role::primary);
        EXPECT_TRUE(st.hosts[0].writable);
        EXPECT_GT(st.hosts[0].timeline, 0u);
        EXPECT_GT(st.hosts[0].lsn, 0u);
        const int port = co_await server_port(db);
        EXPECT_EQ(port, co_await server_port(db, pg::read_options{.to = pg::route::prefer_standby}));
        EXPECT_EQ(db.stats().reads_to_primary, 1u);
        co_await db.with_connection(
            [](pg::connection& c) -> asio::awaitable<void> {
                co_await c.async_query("SELECT 1", asio::use_awaitable);
            },
            asio::use_awaitable);
        EXPECT_EQ(db.stats().hosts[0].pool.active, 0u);
    });
}

TEST(pg_cluster_one_server, a_host_that_is_down_is_never_waited_on) {
    run([]() -> asio::awaitable<void> {
        pg::cluster db(co_await asio::this_coro::executor, fast_config(with_dead_host_first()));
        co_await db.async_wait_ready(asio::use_awaitable);
        const pg::cluster_stats st = db.stats();
        if (st.hosts.size() != 2u) co_return ADD_FAILURE() << st.hosts.size() << " hosts";
        EXPECT_EQ(st.hosts[0].role, pg::host_role::down);
        EXPECT_FALSE(st.hosts[0].last_failure.empty());
        EXPECT_EQ(st.hosts[0].last_failure.find("respool-test-secret"), std::string::npos);
        EXPECT_EQ(st.primary, 1u);
        for (int i = 0; i < 20; ++i) co_await db.async_query("SELECT 1", asio::use_awaitable);
        EXPECT_EQ(db.stats().hosts[0].statements, 0u);
        EXPECT_EQ(db.stats().hosts[1].statements, 20u);
    });
}

TEST(pg_cluster_one_server, a_read_that_wants_a_standby_gives_up_after_failover_wait_saying_why) {
    run([]() -> asio::awaitable<void> {
        pg::cluster db(co_await asio::this_coro::executor, fast_config(conninfo()));
        co_await db.async_wait_ready(asio::use_awaitable);
        respool::diagnostics diag;
        const auto t0 = std::chrono::steady_clock::now();
        auto [ec, r] = co_await db.async_query(pg::read_options{.to = pg::route::standby}, "SELECT 1",
                                               pg::params(), &diag, asio::as_tuple(asio::use_awaitable));
        const auto waited = std::chrono::steady_clock::now() - t0;
        EXPECT_EQ(ec, respool::errc::unavailable);
        EXPECT_NE(diag.message.find("no standby"), std::string::npos) << diag.message;
        EXPECT_GE(waited, 300ms);
        EXPECT_LT(waited, 5s);
    });
}

TEST(pg_cluster_one_server, a_commit_token_is_the_position_after_the_commit) {
    run([]() -> asio::awaitable<void> {
        pg::cluster db(co_await asio::this_coro::executor, fast_config(conninfo()));
        co_await db.async_query("CREATE TABLE IF NOT EXISTS cluster_token_t (v int)", asio::use_awaitable);
        pg::commit_token before{};
        co_await db.transaction([](pg::connection&) -> asio::awaitable<void> { co_return; },
                                {.commit_lsn = &before}, asio::use_awaitable);
        EXPECT_FALSE(before);  // nothing ran: nothing committed, no token
        pg::commit_token t{};
        co_await db.transaction(
            [](pg::connection& c) -> asio::awaitable<void> {
                co_await c.async_query("INSERT INTO cluster_token_t VALUES (1)", asio::use_awaitable);
            },
            {.commit_lsn = &t}, asio::use_awaitable);
        if (!t) co_return ADD_FAILURE() << "no commit token";
        pg::result now =
            co_await db.async_query("SELECT pg_current_wal_insert_lsn()::text", asio::use_awaitable);
        EXPECT_GE(pg::commit_token_from_string(now.text(0, 0))->lsn, t.lsn);
        // A read with the token: the primary holds it.
        pg::result r = co_await db.async_query(pg::read_options{.to = pg::route::prefer_standby, .after = t},
                                               "SELECT count(*) FROM cluster_token_t", pg::params(),
                                               asio::use_awaitable);
        EXPECT_GE(r.get<std::int64_t>(0, 0), 1);
        // A failed transaction's COMMIT is still the rollback it always was.
        pg::commit_token failed{};
        auto [e] = co_await db.transaction(
            [](pg::connection& c) -> asio::awaitable<void> {
                auto [ec, r2] = co_await c.async_query("SELECT 1/0", asio::as_tuple(asio::use_awaitable));
                EXPECT_TRUE(ec);
            },
            {.commit_lsn = &failed}, asio::as_tuple(asio::use_awaitable));
        if (!e) co_return ADD_FAILURE() << "the failed transaction committed";
        EXPECT_FALSE(failed);
        co_await db.async_query("DROP TABLE cluster_token_t", asio::use_awaitable);
    });
}

TEST(pg_cluster_one_server, close_ends_the_writes_waiting_for_a_primary) {
    run([]() -> asio::awaitable<void> {
        auto cfg = fast_config("host=127.0.0.1 port=" + std::to_string(closed_port()) +
                               " dbname=postgres user=respool password=respool-test-secret");
        cfg.failover_wait = 30s;
        auto db = std::make_shared<pg::cluster>(co_await asio::this_coro::executor, cfg);
        co_await db->async_wait_ready(asio::use_awaitable);
        EXPECT_FALSE(db->stats().primary);
        EXPECT_NE(db->stats().no_primary_reason.find("down"), std::string::npos)
            << db->stats().no_primary_reason;
        asio::steady_timer t(co_await asio::this_coro::executor, 50ms);
        t.async_wait([db](auto) { db->close(); });
        auto [ec, r] = co_await db->async_query("SELECT 1", asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, respool::errc::closed);
    });
}

TEST(pg_cluster_one_server, bad_settings_are_refused_naming_them) {
    asio::io_context io;
    auto cfg = fast_config(conninfo());
    cfg.max_replica_lag = {};
    try {
        pg::cluster db(io.get_executor(), cfg);
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("max_replica_lag"), std::string::npos);
    }
    cfg = fast_config("host=a,b,c port=1,2 password=s3cret");
    try {
        pg::cluster db(io.get_executor(), cfg);
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_EQ(std::string(e.what()).find("s3cret"), std::string::npos) << e.what();
    }
}

TEST(pg_cluster_one_server, a_primary_that_refuses_new_connections_fails_a_write_in_bounded_time) {
    // The monitor holds the role's one connection; every connect of the pool is refused (53300): the
    // write must not go round between "suspect" and "confirmed" but give up after failover_wait.
    run([]() -> asio::awaitable<void> {
        auto a = co_await admin::open();
        co_await a.query("DROP ROLE IF EXISTS cluster_limited");
        co_await a.query("CREATE ROLE cluster_limited LOGIN PASSWORD 'limited-secret' CONNECTION LIMIT 1");
        std::string info = conninfo();
        info.replace(info.find("user=respool"), 12, "user=cluster_limited");
        info.replace(info.find("password=respool-test-secret"), 28, "password=limited-secret");
        auto cfg = fast_config(info);
        std::size_t changes = 0;
        cfg.on_role_change = [&](std::string_view, pg::host_role, pg::host_role, std::string_view) {
            ++changes;
        };
        {
            pg::cluster db(co_await asio::this_coro::executor, cfg);
            co_await db.async_wait_ready(asio::use_awaitable);
            const std::size_t at_start = changes;
            respool::diagnostics diag;
            const auto t0 = std::chrono::steady_clock::now();
            auto [ec, r] =
                co_await db.async_query("SELECT 1", pg::params(), &diag, asio::as_tuple(asio::use_awaitable));
            const auto waited = std::chrono::steady_clock::now() - t0;
            EXPECT_EQ(ec, respool::errc::unavailable);
            EXPECT_GE(waited, 300ms);
            EXPECT_LT(waited, 3s);
            EXPECT_NE(diag.message.find("too many connections"), std::string::npos) << diag.message;
            EXPECT_EQ(diag.message.find("limited-secret"), std::string::npos) << diag.message;
            EXPECT_LE(changes - at_start, 4u) << "the primary went round between suspect and confirmed";
        }
        co_await a.query("DROP ROLE IF EXISTS cluster_limited");
    });
}

TEST(pg_cluster_one_server, a_sessions_own_read_only_setting_is_not_a_demotion) {
    run([]() -> asio::awaitable<void> {
        auto cfg = fast_config(conninfo());
        std::size_t changes = 0;
        cfg.on_role_change = [&](std::string_view, pg::host_role, pg::host_role, std::string_view) {
            ++changes;
        };
        pg::cluster db(co_await asio::this_coro::executor, cfg);
        co_await db.async_wait_ready(asio::use_awaitable);
        const std::size_t at_start = changes;
        for (int i = 0; i < 5; ++i)
            co_await db.with_connection(
                [](pg::connection& c) -> asio::awaitable<void> {
                    co_await c.async_query("SET default_transaction_read_only = on", asio::use_awaitable);
                },
                asio::use_awaitable);
        co_await db.async_query("SELECT 1", asio::use_awaitable);
        EXPECT_EQ(changes, at_start);
        EXPECT_TRUE(db.stats().hosts[0].writable);
    });
}

TEST(pg_cluster_one_server, a_cancelled_acquire_waiting_for_a_primary_ends_at_once) {
    run([]() -> asio::awaitable<void> {
        auto cfg = fast_config("host=127.0.0.1 port=" + std::to_string(closed_port()) +
                               " dbname=postgres user=respool password=respool-test-secret");
        cfg.failover_wait = 30s;
        pg::cluster db(co_await asio::this_coro::executor, cfg);
        co_await db.async_wait_ready(asio::use_awaitable);
        asio::cancellation_signal cancel;
        asio::steady_timer t(co_await asio::this_coro::executor, 50ms);
        t.async_wait([&](auto) { cancel.emit(asio::cancellation_type::terminal); });
        const auto t0 = std::chrono::steady_clock::now();
        auto [ec, l] = co_await db.async_acquire(
            asio::bind_cancellation_slot(cancel.slot(), asio::as_tuple(asio::use_awaitable)));
        EXPECT_EQ(ec, respool::errc::cancelled);
        EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
        EXPECT_EQ(db.stats().waiting_for_primary, 0u);
    });
}
