// `respool serve` while its PostgreSQL server goes away and comes back (pg_cluster_faults: these tests
// stop the server, so they have a cluster of their own and its RESOURCE_LOCK). While it is down,
// requests get 503 + Retry-After within the borrow timeout and /health says down and why; once it is
// back the service serves again by itself, and the log has the outage's start and its end.
#include "pg_server.hpp"
#include "serve_support.hpp"

#include <gtest/gtest.h>

#include <csignal>

using namespace serve_test;
using namespace std::chrono_literals;

TEST(serve_pg_faults, a_stopped_server_gives_503_and_health_down_then_the_service_recovers) {
    if (!test::pg_server::available()) GTEST_SKIP() << "run through ctest -L integration";
    test::pg_server server;
    struct restart_on_exit {  // a failed test must not leave the server down for the next one
        test::pg_server& s;
        ~restart_on_exit() {
            try {
                s.start();
            } catch (...) {
            }
        }
    } guard{server};

    serve_process p({"serve", "--db", server.conninfo() + " application_name=serve_fault", "--listen",
                     "127.0.0.1:0", "--borrow-timeout", "500ms", "--connect-timeout", "1s", "--cool-down",
                     "500ms", "--threads", "2"});
    const auto port = p.wait_listening();
    client c(port);
    ASSERT_EQ(c.request("PUT", "/kv/k", "41").status, 204u);
    // Up once every loop's first check answered (until then /health says "not checked yet": with two
    // loops the second may still be checking when the first has served the PUT).
    wait_until([&] { return c.request("GET", "/health").status == 200; }, 10s, "/health up");

    server.stop();
    wait_until([&] { return c.request("GET", "/health").status == 503; }, 30s, "/health down");
    // Why it is down, in /health and once in the log (a stopped server refuses connections, or is
    // shutting down when the service notices first).
    const std::string down = c.request("GET", "/health").body;
    EXPECT_TRUE(down.starts_with(R"({"status":"down","reason":")")) << down;
    EXPECT_NE(down.find(R"(","since":")"), std::string::npos) << down;
    wait_until([&] { return p.stderr_text().find("database unreachable: ") != std::string::npos; }, 10s,
               "the outage in the log");
    for (int i = 0; i < 3; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        auto r = c.request("POST", "/kv/k/incr");
        EXPECT_EQ(r.status, 503u) << r.body;
        EXPECT_EQ(r.header("retry-after"), "1");
        EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);  // within the borrow/connect timeouts
    }

    server.start();
    wait_until([&] { return c.request("GET", "/health").status == 200; }, 60s, "/health up again");
    // /health is up only when every loop's pool answers: fresh connections (round-robin over both
    // loops) are served at once, and the value from before the outage is there.
    for (int i = 0; i < 4; ++i) {
        auto r = client(port).request("GET", "/kv/k");
        EXPECT_EQ(r.status, 200u) << r.body;
        EXPECT_EQ(r.body, "41");
    }
    auto r = c.request("POST", "/kv/k/incr");
    EXPECT_EQ(r.status, 200u) << r.body;
    EXPECT_EQ(r.body, "42");
    p.signal(SIGTERM);
    EXPECT_EQ(p.wait_exit(), 0);
    // The outage, one line at each end; the password never.
    const std::string err = p.stderr_text();
    auto count = [&](const std::string& part) {
        std::size_t n = 0;
        for (auto i = err.find(part); i != std::string::npos; i = err.find(part, i + 1)) ++n;
        return n;
    };
    EXPECT_EQ(count("database unreachable: "), 1u) << err;
    EXPECT_EQ(count("database reachable again after "), 1u) << err;
    EXPECT_EQ(err.find("respool-test-secret"), std::string::npos) << err;
}
