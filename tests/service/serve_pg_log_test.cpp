// `respool serve`'s log and /health while PostgreSQL cannot be reached: a wrong password and a closed
// port each get one line naming the cause, /health says it with the time the outage began, repeated
// failures are summarised at a bounded rate (not a line per attempt), and no password appears in
// anything the service writes. The real binary (serve_support.hpp); the wrong password against the
// test cluster (scram-sha-256 over TCP), the closed port against nothing at all.
#include "pg_server.hpp"
#include "serve_support.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <gtest/gtest.h>

#include <csignal>
#include <regex>
#include <string>

using namespace serve_test;
using namespace std::chrono_literals;

namespace {

std::size_t count(const std::string& text, const std::string& part) {
    std::size_t n = 0;
    for (auto p = text.find(part); p != std::string::npos; p = text.find(part, p + part.size())) ++n;
    return n;
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// A loopback port nothing listens on (bound, then closed: connecting is refused).
std::uint16_t closed_port() {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    return a.local_endpoint().port();
}

const std::regex since_field(R"re("since":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")re");

}  // namespace

TEST(serve_pg_log, a_wrong_password_is_logged_once_as_authentication_failed_and_health_says_so) {
    if (!test::pg_server::available()) GTEST_SKIP() << "run through ctest -L integration";
    test::pg_server server;
    const std::string wrong = "wrong-pw-7e3a";
    serve_process p({"serve", "--db", server.conninfo() + " password=" + wrong, "--listen", "127.0.0.1:0",
                     "--connect-retry-max", "100ms", "--cool-down", "200ms"});
    client c(p.wait_listening());
    wait_until([&] { return has(p.stderr_text(), "database unreachable: authentication failed"); }, 20s,
               "the authentication failure in the log");
    const auto health = c.request("GET", "/health");
    EXPECT_EQ(health.status, 503u);
    EXPECT_TRUE(health.body.starts_with(R"({"status":"down","reason":"authentication failed: )"))
        << health.body;
    EXPECT_TRUE(has(health.body, "password authentication failed")) << health.body;
    EXPECT_TRUE(std::regex_search(health.body, since_field)) << health.body;
    EXPECT_EQ(c.request("GET", "/kv/k").status, 503u);

    p.signal(SIGTERM);
    EXPECT_EQ(p.wait_exit(), 0);
    const std::string err = p.stderr_text();
    EXPECT_EQ(count(err, "database unreachable:"), 1u) << err;
    // Every line: a timestamp and a level.
    const std::regex line(
        R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (error|warn |info |debug) respool serve: .*)");
    for (std::size_t b = 0, e; (e = err.find('\n', b)) != std::string::npos; b = e + 1)
        EXPECT_TRUE(std::regex_match(err.substr(b, e - b), line)) << err.substr(b, e - b);
    EXPECT_FALSE(has(err + health.body, wrong)) << err;
    EXPECT_FALSE(has(err + health.body, "respool-test-secret")) << err;
}

TEST(serve_pg_log, a_closed_port_is_connection_refused_and_repeats_are_summarised) {
    const std::string secret = "s3cret-never-shown";
    const auto port = closed_port();
    const auto t0 = std::chrono::steady_clock::now();
    serve_process p({"serve", "--db",
                     "host=127.0.0.1 port=" + std::to_string(port) + " dbname=x user=u password=" + secret,
                     "--listen", "127.0.0.1:0", "--connect-retry-max", "100ms", "--cool-down", "300ms",
                     "--log-level", "info"});
    client c(p.wait_listening());
    wait_until([&] { return has(p.stderr_text(), "database unreachable: connection refused"); }, 20s,
               "connection refused in the log");
    const auto health = c.request("GET", "/health");
    EXPECT_EQ(health.status, 503u);
    EXPECT_TRUE(health.body.starts_with(R"({"status":"down","reason":"connection refused: )")) << health.body;
    // The summary comes after its 10 s interval; meanwhile the service keeps trying (probes every
    // 200 ms, a connect per cool-down) and requests keep failing, none of which is a line of its own.
    for (int i = 0; i < 20; ++i) EXPECT_EQ(c.request("GET", "/kv/k").status, 503u);
    wait_until([&] { return has(p.stderr_text(), "database still unreachable: "); }, 25s, "the summary line");
    p.signal(SIGTERM);
    EXPECT_EQ(p.wait_exit(), 0);
    const auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string err = p.stderr_text();
    EXPECT_EQ(count(err, "database unreachable:"), 1u) << err;
    const auto summaries = count(err, "database still unreachable: ");
    EXPECT_GE(summaries, 1u) << err;
    EXPECT_LE(static_cast<double>(summaries), elapsed / 10 + 1) << err;  // at most one per 10 s
    EXPECT_LE(count(err, "circuit open:"), 1u) << "the circuit's probes are not info lines: " << err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(err, m, std::regex(R"(still unreachable: (\d+) failures)"))) << err;
    EXPECT_GT(std::stoul(m[1]), 10u) << "many failures, one line: " << err;
    EXPECT_TRUE(has(err, "connection refused")) << err;
    EXPECT_LT(count(err, "\n"), 12u) << err;
    EXPECT_FALSE(has(err + health.body, secret)) << err;
}

TEST(serve_pg_log, a_bad_log_level_is_refused_naming_the_flag) {
    auto [status, out] = run_to_exit({"serve", "--log-level", "verbose"});
    EXPECT_EQ(status, 2) << out;
    EXPECT_TRUE(has(out, "--log-level")) << out;
    EXPECT_TRUE(has(out, "error, warn, info, debug")) << out;
}
