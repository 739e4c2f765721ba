// `respool serve` on PostgreSQL while the database misbehaves (issue 14): for each fault, four HTTP
// clients run GET and POST incr before, during and after it, and the test checks what a service's users
// rely on:
//   - every status is one of 200, 204, 404, 503, 504 (never a 500, never a dropped connection);
//   - no request takes longer than the service's own bounds allow (borrow 1 s, statement 1 s, the
//     cancel drain limit 1 s) plus a margin: request_limit; none hangs (the client's 30 s receive
//     timeout would fail the test);
//   - success resumes by itself after the fault ends (every client sees 10 successes in a row within
//     recovery_limit), and the process is still the same one, exiting 0 on SIGTERM at the end;
//   - no acknowledged increment is lost: the counter is at least the number of incr answered 200, and
//     at most the number sent.
// Proxy faults run through tests/tools/chaos_proxy; the server's own faults (terminate, restarts) run
// direct, as in pg_chaos_test (a restart through the proxy can leave a connection open that the server
// closed). Every loop is bounded in count and time.
#include "chaos_proxy.hpp"
#include "pg_server.hpp"
#include "serve_support.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <csignal>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

using namespace serve_test;
using namespace std::chrono_literals;

namespace {

constexpr auto request_limit = 5s;    // a request's time under any fault (bounds 1 s + 1 s + 1 s, margin)
constexpr auto recovery_limit = 20s;  // from the fault's end until every client succeeds again
constexpr int clients = 4;

struct tally {
    std::mutex m;
    std::multiset<unsigned> statuses;
    std::vector<std::string> failures;  // exceptions: a dropped connection or a hang
    std::chrono::milliseconds slowest{0};
    int incr_sent = 0;
    int incr_acked = 0;
};

// One client's loop: GET k, POST c/incr alternately, until `stop`; counts everything in `t`. `streak`
// counts successes in a row (reset by any other status).
void drive(std::uint16_t port, std::atomic<bool>& stop, tally& t, std::atomic<int>& streak, int id) {
    std::optional<client> c(std::in_place, port);
    for (int i = 0; !stop && i < 100000; ++i) {  // bounded
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
        streak = ok ? streak + 1 : 0;
        std::lock_guard lock(t.m);
        t.statuses.insert(r.status);
        t.slowest = std::max(t.slowest, took);
        if (incr) {
            ++t.incr_sent;
            if (r.status == 200) ++t.incr_acked;
        }
    }
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
    void scenario(const std::string& app, const std::function<void(test::chaos_proxy&)>& fault,
                  std::chrono::milliseconds hold, const std::function<void(test::chaos_proxy&)>& heal,
                  bool direct = false) {
        test::chaos_proxy proxy(static_cast<std::uint16_t>(server->port()));
        std::string conninfo = server->conninfo() + " application_name=" + app;
        if (!direct)
            conninfo += " port=" + std::to_string(proxy.port());  // the same server, through the proxy
        serve_process p({"serve", "--db", conninfo, "--listen", "127.0.0.1:0", "--threads", "1", "--max", "4",
                         "--min-idle", "2", "--borrow-timeout", "1s", "--statement-timeout", "1s",
                         "--connect-timeout", "1s", "--cool-down", "500ms"});
        const auto port = p.wait_listening();
        {
            client setup(port);
            ASSERT_EQ(setup.request("PUT", "/kv/chaos_key", "v").status, 204u);
            ASSERT_EQ(setup.request("PUT", "/kv/chaos_counter", "0").status, 204u);
        }
        tally t;
        std::atomic<bool> stop{false};
        std::array<std::atomic<int>, clients> streaks{};
        std::vector<std::thread> threads;
        for (int i = 0; i < clients; ++i)
            threads.emplace_back(drive, port, std::ref(stop), std::ref(t), std::ref(streaks[i]), i);
        auto all_succeeding = [&] {
            for (auto& s : streaks)
                if (s < 10) return false;
            return true;
        };
        std::exception_ptr error;
        try {
            wait_until(all_succeeding, 10s, "success before the fault");
            fault(proxy);
            std::this_thread::sleep_for(hold);  // the fault's duration, under load
            heal(proxy);
            for (auto& s : streaks) s = 0;
            wait_until(all_succeeding, recovery_limit, "success after the fault");
        } catch (...) {
            error = std::current_exception();
        }
        stop = true;
        for (auto& th : threads) th.join();
        if (error) std::rethrow_exception(error);

        std::set<unsigned> seen(t.statuses.begin(), t.statuses.end());
        for (unsigned s : seen) {
            EXPECT_TRUE(s == 200 || s == 204 || s == 404 || s == 503 || s == 504)
                << app << ": status " << s << " (" << t.statuses.count(s) << " times)";
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
            "[ %s ] %zu requests: %zu ok, %zu 503, %zu 504; slowest %lld ms; incr %d acked of %d sent, "
            "counter %lld\n",
            app.c_str(), t.statuses.size(), t.statuses.count(200) + t.statuses.count(204),
            t.statuses.count(503), t.statuses.count(504), static_cast<long long>(t.slowest.count()),
            t.incr_acked, t.incr_sent, counter);
        p.signal(SIGTERM);
        EXPECT_EQ(p.wait_exit(), 0) << p.stderr_text();
    }

    std::optional<test::pg_server> server;
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
        },
        true);
    scenario(
        "sc_restart_fast", [&](test::chaos_proxy&) { server->restart(test::pg_server::stop_mode::fast); },
        0ms, [](test::chaos_proxy&) {}, true);
    scenario(
        "sc_restart_immediate",
        [&](test::chaos_proxy&) { server->restart(test::pg_server::stop_mode::immediate); }, 0ms,
        [](test::chaos_proxy&) {}, true);
}

}  // namespace
