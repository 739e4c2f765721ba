// `respool serve` on PostgreSQL while the database misbehaves: for each fault, four HTTP
// clients run GET and POST incr before, during and after it, and the test checks what a service's users
// rely on:
//   - every status is one of 200, 204, 404, 503, 504 (never a 500, never a dropped connection);
//   - no request takes longer than the service's own bounds allow (borrow 1 s, statement 1 s, the
//     cancel drain limit 1 s) plus a margin: request_limit; none hangs (the client's 30 s receive
//     timeout would fail the test);
//   - success resumes by itself after the fault ends: every client, still sending, sees 10 successes
//     in a row within one health interval (--healthcheck-interval, with the connect back-off's cap and
//     the circuit's cool-down well inside it, as pg_chaos_test explains), and the process is still the
//     same one, exiting 0 on SIGTERM at the end;
//   - no acknowledged increment is lost: the counter is at least the number of incr answered 200, and
//     at most the number sent.
// Every scenario runs through tests/tools/chaos_proxy, the server's own faults (terminate, restarts,
// a stop of 10 s) too. The server errors (statement_timeout on a prepare, a table altered
// under the service's statements, the server at max_connections) are checked to have happened, from
// the server's log. Every loop is bounded in count and time; a client whose loop reaches its bound
// before the scenario ends fails the scenario at once, saying so.
#include "chaos_proxy.hpp"
#include "pg_server.hpp"
#include "pg_slot_filler.hpp"
#include "pg_table_lock.hpp"
#include "serve_support.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <csignal>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

using namespace serve_test;
using namespace std::chrono_literals;

namespace {

constexpr auto request_limit = 5s;    // a request's time under any fault (bounds 1 s + 1 s + 1 s, margin)
constexpr auto health_interval = 2s;  // from the fault's end until every client succeeds again
constexpr int clients = 4;

// A client's loop ends when its scenario says stop (well within three minutes: the longest waits 10 s,
// holds its fault 10 s, and pg_ctl gives up on a start after 60 s); these bounds only catch one that
// never does. The count must stay out of reach of a working scenario: while the circuit is open each
// request is a 503 answered in microseconds, and a Release build's client sends 10,000 or more a second,
// over 100,000 during the 10 s stop (a bound of 100,000 ended the clients silently in the outage, and the
// wait for their successes after it timed out).
constexpr int max_requests_per_client = 10'000'000;
constexpr auto max_client_time = std::chrono::minutes(3);

using status_counts = std::map<unsigned, std::size_t>;  // status -> responses

std::size_t count_of(const status_counts& s, unsigned status) {
    const auto it = s.find(status);
    return it == s.end() ? 0 : it->second;
}

struct tally {
    std::mutex m;
    status_counts statuses;
    std::size_t responses = 0;
    std::vector<std::string> failures;  // exceptions: a dropped connection or a hang
    std::chrono::milliseconds slowest{0};
    long long incr_sent = 0;
    long long incr_acked = 0;
};

// What the test thread reads of one client while it runs.
struct client_progress {
    std::atomic<int> streak{0};            // successes in a row (reset by any other status)
    std::atomic<bool> ended_early{false};  // its loop reached a bound before `stop`
};

// One client's loop: GET k, POST c/incr alternately, until `stop`; counts everything in `t`.
void drive(std::uint16_t port, std::atomic<bool>& stop, tally& t, client_progress& progress, int id) {
    std::optional<client> c(std::in_place, port);
    const auto give_up = std::chrono::steady_clock::now() + max_client_time;
    for (int i = 0; !stop && i < max_requests_per_client && std::chrono::steady_clock::now() < give_up; ++i) {
        const bool incr = (i + id) % 2 == 0;
        const auto t0 = std::chrono::steady_clock::now();
        response r;
        try {
            r = incr ? c->request("POST", "/kv/chaos_counter/incr") : c->request("GET", "/kv/chaos_key");
        } catch (const std::exception& e) {
            std::lock_guard lock(t.m);
            t.failures.push_back(e.what());
            c.emplace(port);  // a fresh connection for the next request
            continue;
        }
        const auto took =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
        const bool ok = r.status == 200 || r.status == 204;
        progress.streak = ok ? progress.streak + 1 : 0;
        std::lock_guard lock(t.m);
        ++t.statuses[r.status];
        ++t.responses;
        t.slowest = std::max(t.slowest, took);
        if (incr) {
            ++t.incr_sent;
            if (r.status == 200) ++t.incr_acked;
        }
    }
    if (!stop) progress.ended_early = true;
}

class serve_pg_chaos : public ::testing::Test {
protected:
    void SetUp() override {
        if (!test::pg_server::available()) GTEST_SKIP() << "run through ctest -L integration";
        server.emplace();
    }
    void TearDown() override {
        if (server) {
            try {
                server->start();  // a failed test must not leave the server down for the next one
            } catch (...) {
            }
        }
    }

    // Runs `fault` for `hold` under load, then `heal`, and checks everything the file's header lists.
    // `extra_conninfo` is appended to the service's connection string.
    void scenario(const std::string& app, const std::function<void(test::chaos_proxy&)>& fault,
                  std::chrono::milliseconds hold, const std::function<void(test::chaos_proxy&)>& heal,
                  const std::string& extra_conninfo = {}) {
        test::chaos_proxy proxy(static_cast<std::uint16_t>(server->port()));
        // The same server, through the proxy.
        const std::string conninfo = server->conninfo() + " application_name=" + app +
                                     " port=" + std::to_string(proxy.port()) + extra_conninfo;
        serve_process p({"serve",       "--db",
                         conninfo,      "--listen",
                         "127.0.0.1:0", "--threads",
                         "1",           "--max",
                         "4",           "--min-idle",
                         "2",           "--borrow-timeout",
                         "1s",          "--statement-timeout",
                         "1s",          "--connect-timeout",
                         "1s",          "--cool-down",
                         "400ms",       "--connect-retry-max",
                         "400ms",       "--healthcheck-interval",
                         "2s"});  // health_interval
        const auto port = p.wait_listening();
        {
            client setup(port);
            ASSERT_EQ(setup.request("PUT", "/kv/chaos_key", "v").status, 204u);
            ASSERT_EQ(setup.request("PUT", "/kv/chaos_counter", "0").status, 204u);
        }
        tally t;
        std::atomic<bool> stop{false};
        std::array<client_progress, clients> progress{};
        std::vector<std::thread> threads;
        for (int i = 0; i < clients; ++i)
            threads.emplace_back(drive, port, std::ref(stop), std::ref(t), std::ref(progress[i]), i);
        // A client that has ended can never succeed again: say so now rather than at the wait's limit.
        auto all_succeeding = [&] {
            bool all = true;
            for (int i = 0; i < clients; ++i) {
                if (progress[i].ended_early)
                    throw std::runtime_error(app + ": client " + std::to_string(i) + " reached its bound (" +
                                             std::to_string(max_requests_per_client) + " requests or " +
                                             std::to_string(max_client_time.count()) +
                                             " min) before the scenario ended");
                all = all && progress[i].streak >= 10;
            }
            return all;
        };
        std::exception_ptr error;
        std::chrono::milliseconds recovery{0};
        try {
            wait_until(all_succeeding, 10s, "success before the fault");
            fault(proxy);
            std::this_thread::sleep_for(hold);  // the fault's duration, under load
            heal(proxy);
            for (auto& c : progress) c.streak = 0;
            const auto healed = std::chrono::steady_clock::now();
            wait_until(all_succeeding, health_interval, "success after the fault");
            recovery = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::steady_clock::now() - healed);
        } catch (...) {
            error = std::current_exception();
        }
        stop = true;
        for (auto& th : threads) th.join();
        if (error) std::rethrow_exception(error);

        for (const auto& [s, n] : t.statuses) {
            EXPECT_TRUE(s == 200 || s == 204 || s == 404 || s == 503 || s == 504)
                << app << ": status " << s << " (" << n << " times)";
        }
        EXPECT_TRUE(t.failures.empty())
            << app << ": " << t.failures.size()
            << " requests failed, first: " << (t.failures.empty() ? "" : t.failures.front());
        EXPECT_LT(t.slowest, request_limit) << app << ": the slowest request";
        auto final_value = client(port).request("GET", "/kv/chaos_counter");
        ASSERT_EQ(final_value.status, 200u) << final_value.body;
        const long long counter = std::stoll(final_value.body);
        EXPECT_GE(counter, t.incr_acked) << app << ": an acknowledged increment was lost";
        EXPECT_LE(counter, t.incr_sent) << app;
        std::printf(
            "[ %s ] %zu requests: %zu ok, %zu 503, %zu 504; slowest %lld ms; incr %lld acked of %lld sent, "
            "counter %lld; every client succeeding again %lld ms after the fault\n",
            app.c_str(), t.responses, count_of(t.statuses, 200) + count_of(t.statuses, 204),
            count_of(t.statuses, 503), count_of(t.statuses, 504), static_cast<long long>(t.slowest.count()),
            t.incr_acked, t.incr_sent, counter, static_cast<long long>(recovery.count()));
        std::fflush(stdout);
        last_statuses = t.statuses;
        p.signal(SIGTERM);
        EXPECT_EQ(p.wait_exit(), 0) << p.stderr_text();
    }

    std::optional<test::pg_server> server;
    status_counts last_statuses;  // the statuses of the last scenario
};

const auto plain = [](test::chaos_proxy& p) { p.normal(); };

TEST_F(serve_pg_chaos, proxy_faults_give_only_spec_statuses_and_recover) {
    scenario(
        "sc_latency", [](test::chaos_proxy& p) { p.set_latency(30ms); }, 1500ms, plain);
    scenario(
        "sc_bandwidth", [](test::chaos_proxy& p) { p.set_bandwidth(20 * 1024); }, 1500ms, plain);
    scenario(
        "sc_slicing", [](test::chaos_proxy& p) { p.set_slicing(true); }, 1500ms, plain);
    scenario(
        "sc_close_on_data", [](test::chaos_proxy& p) { p.set_close_on_data(true); }, 1500ms, plain);
    scenario(
        "sc_reset", [](test::chaos_proxy& p) { p.reset_all(); }, 500ms, plain);
    scenario(
        "sc_blackhole", [](test::chaos_proxy& p) { p.set_blackhole(true); }, 1500ms, plain);
    scenario(
        "sc_not_accepting",
        [](test::chaos_proxy& p) {
            p.set_accepting(false);
            p.reset_all();  // new connections now hang in the backlog
        },
        1500ms, plain);
}

TEST_F(serve_pg_chaos, server_faults_give_only_spec_statuses_and_recover) {
    std::atomic<bool> stop_killing{false};
    std::thread killer;
    scenario(
        "sc_terminate",
        [&](test::chaos_proxy&) {
            killer = std::thread([&] {
                for (int i = 0; !stop_killing && i < 100; ++i) {  // bounded
                    for (int pid : server->backend_pids("sc_terminate")) server->terminate(pid);
                    std::this_thread::sleep_for(50ms);  // the loop's period
                }
            });
        },
        1500ms,
        [&](test::chaos_proxy&) {
            stop_killing = true;
            killer.join();
        });
    scenario(
        "sc_restart_fast", [&](test::chaos_proxy&) { server->restart(test::pg_server::stop_mode::fast); },
        0ms, [](test::chaos_proxy&) {});
    scenario(
        "sc_restart_immediate",
        [&](test::chaos_proxy&) { server->restart(test::pg_server::stop_mode::immediate); }, 0ms,
        [](test::chaos_proxy&) {});
}

// Down for 10 s: requests are answered 503 (connect refused, then the open circuit) within their
// bounds, and the service serves again by itself once the server is back.
TEST_F(serve_pg_chaos, server_stopped_for_ten_seconds) {
    scenario(
        "sc_stopped", [&](test::chaos_proxy&) { server->stop(); }, 10000ms,
        [&](test::chaos_proxy&) { server->start(); });
    EXPECT_GT(count_of(last_statuses, 503), 0u) << "no request saw the server down";
}

// Another session holds respool_kv's lock while the service's backends are terminated: the service's
// new connections start with an empty statement cache, so their statements go out with their Parse,
// which waits for the lock and runs into the server's statement_timeout (200 ms, through the
// connection string's options): 57014, answered 504. The server's log must show the timeouts.
TEST_F(serve_pg_chaos, statement_timeout_during_a_prepare) {
    test::table_lock lock(server->conninfo());
    ASSERT_TRUE(lock.connected()) << lock.error();
    const char* timeout_line = "canceling statement due to statement timeout";
    const std::size_t before = server->count_log_lines(timeout_line);
    scenario(
        "sc_prepare_timeout",
        [&](test::chaos_proxy&) {
            EXPECT_TRUE(lock.take("respool_kv")) << lock.error();
            for (int pid : server->backend_pids("sc_prepare_timeout")) server->terminate(pid);
        },
        1500ms, [&](test::chaos_proxy&) { EXPECT_TRUE(lock.release()) << lock.error(); },
        " options='-c statement_timeout=200'");
    const std::size_t timeouts = server->count_log_lines(timeout_line) - before;
    std::printf("[ sc_prepare_timeout ] the server cancelled %zu statements at statement_timeout (57014)\n",
                timeouts);
    EXPECT_GT(timeouts, 0u) << "no statement ran into statement_timeout: the fault did not happen";
    EXPECT_GT(count_of(last_statuses, 504), 0u) << "57014 is answered 504";
}

// A column added to the service's table under its prepared statements. They name their columns
// (SELECT v, RETURNING v), so their result types stay the same: the server plans them again by
// itself and no request fails (a 0A000 would be a 500, which the status check refuses).
TEST_F(serve_pg_chaos, table_altered_under_the_statements) {
    server->query("ALTER TABLE IF EXISTS respool_kv DROP COLUMN IF EXISTS added");
    scenario(
        "sc_alter", [&](test::chaos_proxy&) { server->query("ALTER TABLE respool_kv ADD COLUMN added int"); },
        1000ms, [](test::chaos_proxy&) {});
    const auto columns = server->query(
        "SELECT count(*) FROM information_schema.columns WHERE table_name = 'respool_kv' AND "
        "column_name = 'added'");
    EXPECT_EQ(columns.at(0).at(0).value_or(""), "1") << "the column was added under load";
    server->query("ALTER TABLE respool_kv DROP COLUMN IF EXISTS added");
}

// The server at max_connections while the service's pool grows: its connections are cut (the proxy
// stops accepting and resets them), the test's own connections take every slot of the server until it
// refuses one with 53300, and give one back. The service gets that one; its growth beyond meets 53300
// ("sorry, too many clients already", answered 503), and it grows again once the slots are free. The
// server's log counts the refusals: more than the filler's own one.
TEST_F(serve_pg_chaos, connection_limit_reached_during_growth) {
    test::slot_filler filler(server->conninfo());
    const char* refusal_line = "too many clients already";
    const std::size_t before = server->count_log_lines(refusal_line);
    scenario(
        "sc_conn_limit",
        [&](test::chaos_proxy& p) {
            p.set_accepting(false);
            p.reset_all();
            wait_until([&] { return server->count_backends("sc_conn_limit") == 0; }, 10s,
                       "the service's backends gone");
            const std::string refusal = filler.fill();
            EXPECT_NE(refusal.find(refusal_line), std::string::npos)
                << "the server did not refuse with 53300 after " << filler.held()
                << " connections: " << refusal;
            filler.release(1);  // one slot for the service
            p.normal();
        },
        1500ms, [&](test::chaos_proxy&) { filler.release(filler.held()); });
    const std::size_t refusals = server->count_log_lines(refusal_line) - before;
    std::printf("[ sc_conn_limit ] the server refused %zu connects with 53300 (1 of them the filler's)\n",
                refusals);
    EXPECT_GE(refusals, 2u) << "the service's growth never met 53300: the fault did not happen";
}

}  // namespace
