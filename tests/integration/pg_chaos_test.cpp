// Faults under load (issue 14): 64 coroutines on a pool of max 8, each running short transactions with
// a deadline of its own (and every eleventh cancelled by its caller before the deadline), while the
// network (test::chaos_proxy between the pool and the pg_cluster_faults server) or the server
// misbehaves, then heals. Each scenario asserts:
//   - every attempt ended as exactly one of ok / failed / timed out / cancelled, and the four add up to
//     the attempts (no attempt hung: the workers all finished);
//   - no attempt took longer than its deadline plus a margin (see overrun_limit);
//   - no lease was lost: after the load, nothing is active and idle + active = total <= max; the
//     server never saw more than max of the pool's backends (sampled throughout);
//   - once the fault ends, transactions succeed again without restarting anything, within the pool's
//     health-check interval plus the deadline.
// The test thread drives the faults and the server (blocking calls); the pool runs on an event loop of
// its own thread. Waits are on counters and server state; a fault lasts a fixed time by design.
#include "chaos_proxy.hpp"
#include "pg_server.hpp"
#include "pg_test_support.hpp"

#include <respool/pg/pool.hpp>

#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <libpq-fe.h>

#include <atomic>
#include <functional>
#include <random>
#include <thread>

using namespace pg_test;
using namespace boost::asio::experimental::awaitable_operators;
using respool::error_code;

namespace {

constexpr int workers = 64;
constexpr std::size_t max_connections = 8;
constexpr auto deadline = 500ms;
constexpr auto health_interval = 1s;

struct tally {
    std::atomic<int> attempts{0}, ok{0}, failed{0}, timed_out{0}, cancelled{0}, finished_workers{0};
    std::atomic<long long> worst_ms{0};  // the longest attempt
    void took(std::chrono::steady_clock::duration d) {
        const long long ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
        for (long long w = worst_ms; ms > w && !worst_ms.compare_exchange_weak(w, ms);) {
        }
    }
};

// One attempt: a short transaction. Its outcome as an error code (none: committed).
asio::awaitable<error_code> transact(pg::pool& db, int id) {
    try {
        co_await db.transaction(
            [id](pg::connection& c) -> asio::awaitable<void> {
                co_await c.async_query("UPDATE chaos_kv SET v = v + 1 WHERE id = $1", pg::params(id),
                                       asio::use_awaitable);
                // SELECT *: a column added underneath changes its result type (0A000 for the cached plan)
                co_await c.async_query("SELECT * FROM chaos_kv WHERE id = $1", pg::params(id),
                                       asio::use_awaitable);
            },
            {}, asio::use_awaitable);
        co_return error_code{};
    } catch (const boost::system::system_error& e) {
        co_return e.code();
    }
}

asio::awaitable<void> worker(pg::pool& db, tally& t, const std::atomic<bool>& stop, unsigned seed) {
    std::minstd_rand rng(seed);
    auto ex = co_await asio::this_coro::executor;
    for (int i = 0; !stop && i < 100000; ++i) {  // bounded
        ++t.attempts;
        const bool caller_cancels = i % 11 == 10;
        asio::steady_timer limit(ex, caller_cancels ? deadline / 4 : deadline);
        const auto t0 = std::chrono::steady_clock::now();
        auto r = co_await (transact(db, static_cast<int>(rng() % 100) + 1) ||
                           limit.async_wait(asio::use_awaitable));
        t.took(std::chrono::steady_clock::now() - t0);
        if (r.index() == 1)
            ++(caller_cancels ? t.cancelled : t.timed_out);
        else
            ++(std::get<0>(r) ? t.failed : t.ok);
    }
    ++t.finished_workers;
}

class pg_chaos : public ::testing::Test {
protected:
    void SetUp() override {
        if (!test::pg_server::available()) GTEST_SKIP() << "run through ctest -L integration";
        server.query("CREATE TABLE IF NOT EXISTS chaos_kv (id int PRIMARY KEY, v bigint NOT NULL)");
        server.query(
            "INSERT INTO chaos_kv SELECT i, 0 FROM generate_series(1, 100) i ON CONFLICT DO NOTHING");
        server.query("ALTER TABLE chaos_kv DROP COLUMN IF EXISTS added");
    }
    void TearDown() override {
        if (!test::pg_server::available()) return;
        try {  // a failed scenario must not leave the server down for the next test
            server.start();
        } catch (...) {
        }
    }

    test::pg_server server;

    // Runs the load through a proxy, applies `fault` once transactions flow, keeps it for `hold`,
    // calls `heal`, and checks everything the file's header lists. `overrun_limit`: how much longer
    // than its deadline an attempt may take.
    // `extra_conninfo` is appended to the pool's connection string; `tweak` adjusts its settings.
    // Faults of the server itself run without the proxy (`direct`): a restart through the proxy can
    // leave a connection open that the server has closed (under investigation; see the issue note).
    void scenario(const std::string& app, const std::function<void(test::chaos_proxy&)>& fault,
                  std::chrono::milliseconds hold, const std::function<void(test::chaos_proxy&)>& heal,
                  std::chrono::milliseconds overrun_limit = 1000ms, const std::string& extra_conninfo = {},
                  const std::function<void(pg::pool_config&)>& tweak = {}, bool direct = false) {
        test::chaos_proxy proxy(static_cast<std::uint16_t>(server.port()));
        loop l;
        std::optional<pg::pool> db;
        l.run([&]() -> asio::awaitable<void> {
            pg::pool_config c;
            c.conninfo = server.conninfo() +
                         (direct ? std::string() : " port=" + std::to_string(proxy.port())) +
                         " application_name=" + app;
            c.max = max_connections;
            c.min_idle = 2;
            c.borrow_timeout = 1s;
            c.connect_timeout = 1s;
            c.check_timeout = 1s;
            c.reset_timeout = 1s;
            c.healthcheck_interval = health_interval;
            c.connect_retry_max = health_interval;  // failed connects back off at most that long
            c.circuit = respool::breaker_options{.cool_down = 500ms};
            c.conninfo += extra_conninfo;
            if (tweak) tweak(c);
            db.emplace(co_await asio::this_coro::executor, c);
            co_await db->async_wait_ready(asio::as_tuple(asio::use_awaitable));
        });
        tally t;
        std::atomic<bool> stop{false};
        // Whatever happens below, the workers end before the pool goes (they hold references to it).
        struct drain_guard {
            std::atomic<bool>& stop;
            tally& t;
            ~drain_guard() {
                stop = true;
                for (auto end = std::chrono::steady_clock::now() + 30s;
                     t.finished_workers < workers && std::chrono::steady_clock::now() < end;)
                    std::this_thread::sleep_for(10ms);  // polling a counter, bounded
            }
        } guard{stop, t};
        for (int w = 0; w < workers; ++w)
            asio::co_spawn(l.io, worker(*db, t, stop, static_cast<unsigned>(w) + 1), asio::detached);
        int most = 0;
        auto sample = [&] {
            try {
                most = std::max(most, server.count_backends(app));
            } catch (const std::exception&) {  // the server is down (a scenario stopped it): nothing to count
            }
        };
        test::pg_server::wait_until(
            [&] {
                sample();
                return t.ok >= 100;
            },
            10s, "transactions flowing");
        fault(proxy);
        for (const auto end = std::chrono::steady_clock::now() + hold;
             std::chrono::steady_clock::now() < end;) {
            sample();
            std::this_thread::sleep_for(20ms);  // the fault's length, not a wait for an outcome
        }
        heal(proxy);
        const int ok_at_heal = t.ok;
        const auto healed = std::chrono::steady_clock::now();
        test::pg_server::wait_until(
            [&] {
                sample();
                return t.ok >= ok_at_heal + 50;
            },
            std::chrono::duration_cast<std::chrono::milliseconds>(health_interval + deadline + 5s),
            "transactions succeeding again after the fault");
        const auto recovery = std::chrono::steady_clock::now() - healed;
        stop = true;
        test::pg_server::wait_until([&] { return t.finished_workers == workers; },
                                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline + 10s),
                                    "every worker's last attempt ended");
        EXPECT_EQ(t.attempts.load(), t.ok + t.failed + t.timed_out + t.cancelled)
            << "each attempt ended once";
        EXPECT_LE(t.worst_ms.load(),
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline + overrun_limit).count())
            << "no attempt waited past its deadline plus " << overrun_limit.count() << " ms";
        EXPECT_LT(recovery, health_interval + deadline + 2s) << "success resumed by itself";
        respool::pool_stats s{};
        test::pg_server::wait_until(
            [&] {
                s = l.run([&]() -> asio::awaitable<respool::pool_stats> { co_return db->stats(); });
                return s.active == 0;
            },
            10s, "every lease back");
        EXPECT_EQ(s.idle + s.active, s.total);
        EXPECT_LE(s.total, max_connections);
        EXPECT_LE(most, static_cast<int>(max_connections)) << "pg_stat_activity never above max";
        std::printf(
            "[ figures  ] %s: %d attempts: %d ok, %d failed, %d timed out, %d cancelled; longest %lld ms; "
            "recovered in %lld ms; at most %d backends\n",
            app.c_str(), t.attempts.load(), t.ok.load(), t.failed.load(), t.timed_out.load(),
            t.cancelled.load(), t.worst_ms.load(),
            static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(recovery).count()),
            most);
        l.run([&]() -> asio::awaitable<void> {
            co_await db->async_close(5s, asio::as_tuple(asio::use_awaitable));
            db.reset();
        });
    }
};

void plain(test::chaos_proxy& p) {
    p.normal();
}

}  // namespace

TEST_F(pg_chaos, latency) {
    scenario(
        "c_latency", [](test::chaos_proxy& p) { p.set_latency(30ms); }, 1500ms, plain);
}

TEST_F(pg_chaos, bandwidth_limit) {
    scenario(
        "c_bandwidth", [](test::chaos_proxy& p) { p.set_bandwidth(20 * 1024); }, 1500ms, plain);
}

TEST_F(pg_chaos, every_write_sliced_into_bytes) {
    scenario(
        "c_slicing", [](test::chaos_proxy& p) { p.set_slicing(true); }, 1500ms, plain);
}

TEST_F(pg_chaos, connections_closed_on_data) {
    scenario(
        "c_close_on_data", [](test::chaos_proxy& p) { p.set_close_on_data(true); }, 1500ms, plain);
}

TEST_F(pg_chaos, connections_reset) {
    scenario(
        "c_reset", [](test::chaos_proxy& p) { p.reset_all(); }, 500ms,
        [](test::chaos_proxy& p) {
            p.reset_all();
            p.normal();
        });
}

TEST_F(pg_chaos, not_accepting_while_existing_connections_go_on) {
    scenario(
        "c_not_accepting",
        [](test::chaos_proxy& p) {
            p.set_accepting(false);
            p.reset_all();  // the pool must make new connections, which now hang in the backlog
        },
        1500ms, plain);
}

// A partition: nothing answers, connections stay open. A cancelled statement's connection is drained
// for at most cancel_drain_limit (1 s by default: neither the reply nor the cancel request returns)
// before it is closed: an attempt ends within its deadline plus that limit (plus scheduling).
TEST_F(pg_chaos, blackhole) {
    scenario(
        "c_blackhole", [](test::chaos_proxy& p) { p.set_blackhole(true); }, 1500ms, plain,
        std::chrono::duration_cast<std::chrono::milliseconds>(pg::pool_config{}.cancel_drain_limit) + 500ms);
}

TEST_F(pg_chaos, backends_terminated_in_a_loop) {
    std::atomic<bool> stop{false};
    std::thread killer;
    scenario(
        "c_terminate",
        [&](test::chaos_proxy&) {
            killer = std::thread([&] {
                for (int i = 0; !stop && i < 200; ++i) {  // bounded
                    for (int pid : server.backend_pids("c_terminate")) server.terminate(pid);
                    std::this_thread::sleep_for(50ms);  // the loop's period
                }
            });
        },
        1500ms,
        [&](test::chaos_proxy&) {
            stop = true;
            killer.join();
        });
}

TEST_F(pg_chaos, server_restarted_fast) {
    scenario(
        "c_restart_fast", [&](test::chaos_proxy&) { server.restart(test::pg_server::stop_mode::fast); }, 0ms,
        plain, 1000ms, {}, {}, true);
}

TEST_F(pg_chaos, server_restarted_immediate) {
    scenario(
        "c_restart_immediate",
        [&](test::chaos_proxy&) { server.restart(test::pg_server::stop_mode::immediate); }, 0ms, plain,
        1000ms, {}, {}, true);
}

// Down for 10 s: attempts fail within their deadlines (the circuit opens, then admits probes), and the
// pool serves again by itself once the server is back.
TEST_F(pg_chaos, server_stopped_for_ten_seconds) {
    scenario(
        "c_stopped", [&](test::chaos_proxy&) { server.stop(); }, 10000ms,
        [&](test::chaos_proxy&) { server.start(); }, 1000ms, {}, {}, true);
}

// A column added under cached statements: SELECT *'s cached plan can no longer run (0A000, inside a
// transaction: that attempt fails); the statement is forgotten and prepared again by the next.
TEST_F(pg_chaos, a_table_altered_under_prepared_statements) {
    scenario(
        "c_alter", [&](test::chaos_proxy&) { server.query("ALTER TABLE chaos_kv ADD COLUMN added int"); },
        1000ms, plain);
}

// New connections must prepare their statements while another session holds the table's lock: the
// Parse itself runs into statement_timeout (200 ms) and is cancelled; once the lock goes, prepares
// succeed. (The pool's backends are terminated as the lock is taken, so that new ones must prepare.)
TEST_F(pg_chaos, statement_timeout_during_a_prepare) {
    PGconn* locker = PQconnectdb(server.conninfo().c_str());
    ASSERT_EQ(PQstatus(locker), CONNECTION_OK) << PQerrorMessage(locker);
    auto exec = [&](const char* sql) {
        PGresult* r = PQexec(locker, sql);
        const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        return ok;
    };
    scenario(
        "c_prepare_timeout",
        [&](test::chaos_proxy&) {
            EXPECT_TRUE(exec("BEGIN"));
            EXPECT_TRUE(exec("LOCK TABLE chaos_kv IN ACCESS EXCLUSIVE MODE"));
            for (int pid : server.backend_pids("c_prepare_timeout")) server.terminate(pid);
        },
        1500ms, [&](test::chaos_proxy&) { EXPECT_TRUE(exec("COMMIT")); }, 1000ms, {},
        [](pg::pool_config& c) { c.statement_timeout = 200ms; });
    PQfinish(locker);
}

// The server refuses connections beyond a role's limit (SQLSTATE 53300) while the pool grows: it
// works with what it has, and grows again once the limit is lifted.
TEST_F(pg_chaos, connection_limit_reached_during_growth) {
    server.query(
        "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'chaos_user') THEN "
        "CREATE ROLE chaos_user LOGIN PASSWORD 'chaos-secret'; END IF; END $$");
    server.query("GRANT ALL ON chaos_kv TO chaos_user");
    server.query("ALTER ROLE chaos_user CONNECTION LIMIT -1");
    scenario(
        "c_conn_limit",
        [&](test::chaos_proxy&) {
            server.query("ALTER ROLE chaos_user CONNECTION LIMIT 2");
            for (int pid : server.backend_pids("c_conn_limit")) server.terminate(pid);  // regrow under it
        },
        1500ms, [&](test::chaos_proxy&) { server.query("ALTER ROLE chaos_user CONNECTION LIMIT -1"); },
        1000ms, " user=chaos_user password=chaos-secret");
}
