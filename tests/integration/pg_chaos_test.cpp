// Faults under load: 64 coroutines on a pool of max 8, each running short transactions with
// a deadline of its own (and every eleventh cancelled by its caller before the deadline), while the
// network (test::chaos_proxy between the pool and the pg_cluster_faults server) or the server
// misbehaves, then heals. Each scenario asserts:
//   - every attempt ended as exactly one of ok / failed / timed out / cancelled, and the four add up to
//     the attempts (no attempt hung: the workers all finished);
//   - no attempt took longer than its deadline plus the pool's cancel_drain_limit plus a margin for
//     scheduling (overrun_limit);
//   - no lease was lost: after the load, nothing is active and idle + active = total <= max; the
//     server never saw more than max backends held by the pool's open connections (sampled
//     throughout; a backend whose connection already ended is leaving, and is not counted);
//   - once the fault ends, transactions succeed again without restarting anything, within the pool's
//     health-check interval (see connect_backoff_cap for what that takes of the pool's settings);
//   - the scenarios of a server error check that the fault happened: the SQLSTATEs of the failed
//     attempts are counted (pg::sqlstate_of) and the expected one must be among them.
// The test thread drives the faults and the server (blocking calls); the pool runs on an event loop of
// its own thread. Waits are on counters and server state; a fault lasts a fixed time by design.
#include "chaos_proxy.hpp"
#include "pg_server.hpp"
#include "pg_slot_filler.hpp"
#include "pg_table_lock.hpp"
#include "pg_test_support.hpp"

#include <respool/pg/errors.hpp>
#include <respool/pg/pool.hpp>

#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>

using namespace pg_test;
using namespace boost::asio::experimental::awaitable_operators;
using respool::error_code;

namespace {

constexpr int workers = 64;
constexpr std::size_t max_connections = 8;
constexpr auto deadline = 500ms;
// A cancelled statement's connection is drained (its reply read, its cancel requests returned) for at
// most this long before it is closed instead: an attempt whose statement the network holds (blackhole)
// ends within its deadline plus this. 250 ms, not the default 1 s, so that the bound on every attempt
// stays small.
constexpr auto drain_limit = 250ms;
// What an attempt may take beyond deadline + drain_limit: scheduling, a loaded 2-core machine, ASan
// (the blackhole's attempts, the only ones to use drain_limit, took 750-751 ms in debug and ASan runs).
constexpr auto scheduling_margin = 400ms;
constexpr auto health_interval = 1s;
// What bounds recovery when connects fail while the fault lasts (refused, closed, timed out, 53300):
// their failures in a row push the pool's back-off between connects to its cap (connect_retry_max,
// +-20 % jitter), and the circuit they open admits a probe only after its cool-down. When the fault
// ends, a wait of up to 1.2 x the cap may have just begun, then a connect and the 50 transactions the
// test counts follow. A pool recovers within one health interval when both stay well inside it: here
// 400 ms (480 ms with jitter) and 400 ms in a 1 s interval, which leaves ~500 ms for the connect and the
// transactions under ASan on a loaded 2-core machine. (docs/06-postgresql.md, "Recovering from an
// outage", gives the rule to the user.)
constexpr auto connect_backoff_cap = 400ms;
constexpr auto circuit_cool_down = 400ms;

// How an attempt that did not commit ended, as the transaction reported it.
struct outcome {
    error_code ec;
    std::string message;     // the exception's what(): for a failed connect, libpq's message
    bool preparing = false;  // the failing statement was sent with its Parse (not yet in the cache)
};

// The SQLSTATE an attempt failed with: the server's error code (pg::sqlstate_of), or 53300 for a
// connect the server refused for want of slots. libpq has no SQLSTATE for a failed connect: the pool
// reports its own code (pg::error::connect_failed, or the generic errc::create_failed) with libpq's
// message, and these two messages are PostgreSQL's only texts for ERRCODE_TOO_MANY_CONNECTIONS at
// connection start (max_connections; the slots reserved for superusers).
std::string sqlstate_seen(const outcome& o) {
    if (std::string s = pg::sqlstate_of(o.ec); !s.empty()) return s;
    if (o.message.find("too many clients already") != std::string::npos ||
        o.message.find("remaining connection slots are reserved") != std::string::npos)
        return "53300";
    return {};
}

struct tally {
    std::atomic<int> attempts{0}, ok{0}, failed{0}, timed_out{0}, cancelled{0}, finished_workers{0};
    std::atomic<long long> worst_ms{0};  // the longest attempt
    std::mutex m;
    std::map<std::string, int> sqlstates;        // failed attempts by SQLSTATE
    std::map<std::string, int> while_preparing;  // of those, the ones whose statement was being prepared
    std::map<std::string, int> other;            // failed attempts without one, by error message
    void took(std::chrono::steady_clock::duration d) {
        const long long ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
        for (long long w = worst_ms; ms > w && !worst_ms.compare_exchange_weak(w, ms);) {
        }
    }
    void failure(const outcome& o) {
        const std::string s = sqlstate_seen(o);
        std::lock_guard lock(m);
        if (s.empty()) {
            ++other["'" + o.ec.message() + "'"];
            return;
        }
        ++sqlstates[s];
        if (o.preparing) ++while_preparing[s];
    }
};

// One attempt: a short transaction. Its outcome (ec none: committed).
asio::awaitable<outcome> transact(pg::pool& db, int id) {
    // Lives in this frame, which awaits the transaction to its end. A raw pointer in the capture: a
    // capture with a destructor in this co_await's temporaries is destroyed twice by GCC 12.
    outcome out;
    outcome* o = &out;
    try {
        co_await db.transaction(
            [id, o](pg::connection& c) -> asio::awaitable<void> {
                // This workload's only statements with parameters are these two, so the connection's
                // cache holds fewer than one (two) of them exactly when the UPDATE (SELECT) is sent with
                // its Parse.
                o->preparing = c.cached_statements() == 0;
                co_await c.async_query("UPDATE chaos_kv SET v = v + 1 WHERE id = $1", pg::params(id),
                                       asio::use_awaitable);
                // SELECT *: a column added underneath changes its result type (0A000 for the cached plan)
                o->preparing = c.cached_statements() < 2;
                co_await c.async_query("SELECT * FROM chaos_kv WHERE id = $1", pg::params(id),
                                       asio::use_awaitable);
                o->preparing = false;
            },
            {}, asio::use_awaitable);
    } catch (const boost::system::system_error& e) {
        o->ec = e.code();
        o->message = e.what();
    }
    co_return out;
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
        if (r.index() == 1) {
            ++(caller_cancels ? t.cancelled : t.timed_out);
        } else if (const outcome& o = std::get<0>(r); o.ec) {
            ++t.failed;
            t.failure(o);
        } else {
            ++t.ok;
        }
    }
    ++t.finished_workers;
}

constexpr std::chrono::milliseconds overrun_limit = drain_limit + scheduling_margin;

// A scenario's settings beyond its fault.
struct options {
    std::string extra_conninfo{};  // appended to the pool's connection string
    bool regrow = false;           // recovered also means: the pool is back at max live connections
};

// What a scenario saw, for the test's own checks.
struct figures {
    std::map<std::string, int> sqlstates;
    std::map<std::string, int> while_preparing;
    std::chrono::milliseconds recovery{0};
    respool::pool_stats stats{};
};

std::string listed(const std::map<std::string, int>& m) {
    std::string s;
    for (const auto& [k, n] : m) s += (s.empty() ? "" : " ") + k + "x" + std::to_string(n);
    return s.empty() ? "none" : s;
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
    // Backends this test terminated itself: such a backend may stay listed in pg_stat_activity for a
    // moment after its client saw the connection end (it is removed when its process exits) and opened
    // the replacement, so the count of backends held leaves them out.
    std::mutex terminated_mu;
    std::set<int> terminated;

    // The app's backends that its pool holds: those serving a connection whose client is still there
    // (the proxy knows which). A backend whose connection ended, closed by the pool or reset by the
    // proxy, leaves once it notices, and may still be listed while the pool's replacement connects:
    // the pool does not hold it, so it is not counted. A connection the pool lost track of but left
    // open is still counted.
    int backends_held(const std::string& app, const test::chaos_proxy& proxy) {
        const auto listed = server.backends(app);
        const auto live = proxy.target_ports_of_live_clients();
        const std::set<int> live_ports(live.begin(), live.end());
        std::lock_guard lock(terminated_mu);
        return static_cast<int>(std::count_if(listed.begin(), listed.end(), [&](const auto& b) {
            return !terminated.count(b.pid) && live_ports.count(b.client_port);
        }));
    }

    // Runs the load through a proxy, applies `fault` once transactions flow, keeps it for
    // `hold`, calls `heal`, and checks everything the file's header lists.
    figures scenario(const std::string& app, const std::function<void(test::chaos_proxy&)>& fault,
                     std::chrono::milliseconds hold, const std::function<void(test::chaos_proxy&)>& heal,
                     const options& o = {}) {
        test::chaos_proxy proxy(static_cast<std::uint16_t>(server.port()));
        loop l;
        std::optional<pg::pool> db;
        l.run([&]() -> asio::awaitable<void> {
            pg::pool_config c;
            c.conninfo =
                server.conninfo() + " port=" + std::to_string(proxy.port()) + " application_name=" + app;
            c.max = max_connections;
            c.min_idle = 2;
            c.borrow_timeout = 1s;
            c.connect_timeout = 1s;
            c.check_timeout = 1s;
            c.reset_timeout = 1s;
            c.cancel_drain_limit = drain_limit;
            c.healthcheck_interval = health_interval;
            c.connect_retry_max = connect_backoff_cap;
            c.circuit = respool::breaker_options{.cool_down = circuit_cool_down};
            c.conninfo += o.extra_conninfo;
            db.emplace(co_await asio::this_coro::executor, c);
            co_await db->async_wait_ready(asio::as_tuple(asio::use_awaitable));
        });
        tally t;
        std::atomic<bool> stop{false};
        // Whatever happens below, the workers end before the pool goes (they hold references to it,
        // to `t` and to `stop`). Should they not within 30 s, destroying the pool under them would be
        // a use after free: the process aborts instead, which fails the test with this message.
        struct drain_guard {
            std::atomic<bool>& stop;
            tally& t;
            ~drain_guard() {
                stop = true;
                for (auto end = std::chrono::steady_clock::now() + 30s;
                     t.finished_workers < workers && std::chrono::steady_clock::now() < end;)
                    std::this_thread::sleep_for(10ms);  // polling a counter, bounded
                if (t.finished_workers < workers) {
                    std::fprintf(
                        stderr,
                        "pg_chaos: %d of %d workers still running 30 s after they were told to stop; "
                        "aborting rather than destroying the pool they use\n",
                        workers - t.finished_workers.load(), workers);
                    std::fflush(stderr);
                    std::abort();
                }
            }
        } guard{stop, t};
        for (int w = 0; w < workers; ++w)
            asio::co_spawn(l.io, worker(*db, t, stop, static_cast<unsigned>(w) + 1), asio::detached);
        int most = 0;
        auto sample = [&] {
            try {
                most = std::max(most, backends_held(app, proxy));
            } catch (const std::exception&) {  // the server is down or full: nothing to count
            }
        };
        auto live = [&] {
            const auto s = l.run([&]() -> asio::awaitable<respool::pool_stats> { co_return db->stats(); });
            return s.total - s.creating;
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
        std::chrono::steady_clock::time_point recovered{};
        test::pg_server::wait_until(
            [&] {
                // Checked before the sample (an admin connection, some milliseconds), timed at once.
                if (t.ok >= ok_at_heal + 50 && (!o.regrow || live() >= max_connections)) {
                    recovered = std::chrono::steady_clock::now();
                    return true;
                }
                sample();
                return false;
            },
            std::chrono::duration_cast<std::chrono::milliseconds>(health_interval + 10s),
            "transactions succeeding again after the fault");
        const auto recovery = std::chrono::duration_cast<std::chrono::milliseconds>(recovered - healed);
        sample();
        stop = true;
        test::pg_server::wait_until([&] { return t.finished_workers == workers; },
                                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline + 10s),
                                    "every worker's last attempt ended");
        EXPECT_EQ(t.attempts.load(), t.ok + t.failed + t.timed_out + t.cancelled)
            << "each attempt ended once";
        EXPECT_LE(t.worst_ms.load(),
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline + overrun_limit).count())
            << "no attempt waited past its deadline plus " << overrun_limit.count() << " ms";
        EXPECT_LE(recovery, health_interval) << app << ": success resumed by itself";
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
        EXPECT_GE(most, 1) << "the sampler found none of the pool's backends: it counts nothing";
        figures f;
        std::string other;
        {
            std::lock_guard lock(t.m);
            f.sqlstates = t.sqlstates;
            f.while_preparing = t.while_preparing;
            other = listed(t.other);
        }
        f.recovery = recovery;
        f.stats = s;
        std::printf(
            "[ figures  ] %s: %d attempts: %d ok, %d failed, %d timed out, %d cancelled; longest %lld ms; "
            "recovered in %lld ms (limit %lld ms); at most %d backends; SQLSTATEs: %s; while preparing: "
            "%s; other errors: %s\n",
            app.c_str(), t.attempts.load(), t.ok.load(), t.failed.load(), t.timed_out.load(),
            t.cancelled.load(), t.worst_ms.load(), static_cast<long long>(recovery.count()),
            static_cast<long long>(std::chrono::milliseconds(health_interval).count()), most,
            listed(f.sqlstates).c_str(), listed(f.while_preparing).c_str(), other.c_str());
        std::fflush(stdout);
        l.run([&]() -> asio::awaitable<void> {
            co_await db->async_close(5s, asio::as_tuple(asio::use_awaitable));
            db.reset();
        });
        return f;
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
// for at most drain_limit (neither the reply nor the cancel request returns) before it is closed: the
// one scenario whose attempts use all of overrun_limit.
TEST_F(pg_chaos, blackhole) {
    scenario(
        "c_blackhole", [](test::chaos_proxy& p) { p.set_blackhole(true); }, 1500ms, plain);
}

TEST_F(pg_chaos, backends_terminated_in_a_loop) {
    std::atomic<bool> stop{false};
    std::thread killer;
    scenario(
        "c_terminate",
        [&](test::chaos_proxy&) {
            killer = std::thread([&] {
                for (int i = 0; !stop && i < 200; ++i) {  // bounded
                    for (int pid : server.backend_pids("c_terminate")) {
                        {
                            std::lock_guard lock(terminated_mu);
                            terminated.insert(pid);  // before the signal: the sampler never counts it
                        }
                        server.terminate(pid);
                    }
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
        plain);
}

TEST_F(pg_chaos, server_restarted_immediate) {
    scenario(
        "c_restart_immediate",
        [&](test::chaos_proxy&) { server.restart(test::pg_server::stop_mode::immediate); }, 0ms, plain);
}

// Down for 10 s: attempts fail within their deadlines (the circuit opens, then admits probes), and the
// pool serves again by itself once the server is back.
TEST_F(pg_chaos, server_stopped_for_ten_seconds) {
    scenario(
        "c_stopped", [&](test::chaos_proxy&) { server.stop(); }, 10000ms,
        [&](test::chaos_proxy&) { server.start(); });
}

// A column added under cached statements: SELECT *'s cached plan can no longer run. respool's cache
// prepares a stale statement again by itself only outside a transaction (connection::async_query);
// here the SELECT runs inside one, so the server's 0A000 ("cached plan must not change result type")
// fails that attempt, the statement is forgotten, and the connection's next attempt prepares it anew:
// 0A000 at most once per connection, on a cached statement (never on a Parse).
TEST_F(pg_chaos, a_table_altered_under_prepared_statements) {
    const figures f = scenario(
        "c_alter", [&](test::chaos_proxy&) { server.query("ALTER TABLE chaos_kv ADD COLUMN added int"); },
        1000ms, plain);
    const int stale = f.sqlstates.contains("0A000") ? f.sqlstates.at("0A000") : 0;
    EXPECT_GE(stale, 1) << "the cached plan's error (0A000) was never seen: the fault did not happen";
    EXPECT_LE(stale, static_cast<int>(f.stats.creations)) << "0A000 at most once per connection";
    EXPECT_FALSE(f.while_preparing.contains("0A000")) << "0A000 comes from a cached statement";
}

// New connections must prepare their statements while another session holds the table's lock: the
// Parse itself runs into the server's statement_timeout (200 ms, set for the pool's sessions through
// the connection string's options) and fails with 57014; once the lock goes, prepares succeed. (The
// pool's backends are terminated as the lock is taken, so that new ones must prepare.) The server's
// own timeout, not pool_config::statement_timeout: the pool's deadline cancels the statement from the
// client and reports pg::error::statement_timeout, without the SQLSTATE.
TEST_F(pg_chaos, statement_timeout_during_a_prepare) {
    test::table_lock lock(server.conninfo());
    ASSERT_TRUE(lock.connected()) << lock.error();
    const figures f = scenario(
        "c_prepare_timeout",
        [&](test::chaos_proxy&) {
            EXPECT_TRUE(lock.take("chaos_kv")) << lock.error();
            for (int pid : server.backend_pids("c_prepare_timeout")) server.terminate(pid);
        },
        1500ms, [&](test::chaos_proxy&) { EXPECT_TRUE(lock.release()) << lock.error(); },
        {.extra_conninfo = " options='-c statement_timeout=200'"});
    EXPECT_TRUE(f.while_preparing.contains("57014"))
        << "no Parse ran into statement_timeout (57014): the fault did not happen";
}

// The server at max_connections while the pool grows: the pool's connections are cut (the proxy stops
// accepting and resets them), the test's own connections then take every slot of the server's
// max_connections (pg_cluster.sh starts it with max_connections=100, on the command line, so ALTER
// SYSTEM cannot change it without a start of its own) until it refuses one with 53300, and give two
// back. The pool, accepted again, gets those two; its growth beyond them meets 53300 ("sorry, too many
// clients already"). It works with what it has, and grows back to max once the slots are free.
TEST_F(pg_chaos, connection_limit_reached_during_growth) {
    test::slot_filler filler(server.conninfo());
    const std::size_t refusals_before = server.count_log_lines("too many clients already");
    const figures f = scenario(
        "c_conn_limit",
        [&](test::chaos_proxy& p) {
            p.set_accepting(false);
            p.reset_all();
            test::pg_server::wait_until([&] { return server.count_backends("c_conn_limit") == 0; }, 10s,
                                        "the pool's backends gone");
            const std::string refusal = filler.fill();
            EXPECT_NE(refusal.find("too many clients already"), std::string::npos)
                << "the server did not refuse with 53300 after " << filler.held()
                << " connections: " << refusal;
            filler.release(2);  // two slots for the pool
            p.normal();
        },
        1500ms, [&](test::chaos_proxy&) { filler.release(filler.held()); }, {.regrow = true});
    const std::size_t refusals = server.count_log_lines("too many clients already") - refusals_before;
    std::printf(
        "[ figures  ] c_conn_limit: the server refused %zu connects with 53300 (1 of them the "
        "filler's)\n",
        refusals);
    EXPECT_TRUE(f.sqlstates.contains("53300"))
        << "no growth of the pool met 53300: the fault did not happen (server log: " << refusals
        << " refusals)";
}
