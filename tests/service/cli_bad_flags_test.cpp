// `respool serve`, `respool demo` and `respool simulate` with wrong flag values: each exits 2 before
// doing anything, and the message names the flag (docs/10-bad-input.md). Every flag the commands declare
// has a case here or in serve_sqlite_test.cpp (bad_flags_and_urls_exit_2_naming_them: --db, --listen,
// --threads, --max, --borrow-timeout, --statement-timeout). A zero that means "none" or "off" is
// accepted: serve_takes_zero_where_zero_means_off shows the service working with all of them.
#include "serve_support.hpp"

#include <gtest/gtest.h>

#include <csignal>

using namespace serve_test;

namespace {

struct bad {
    std::vector<std::string> args;
    std::string named;
};

void expect_exit_2_naming(const std::vector<bad>& cases) {
    for (const auto& c : cases) {
        auto [status, out] = run_to_exit(c.args);
        EXPECT_EQ(status, 2) << c.args[0] << " " << c.args[1] << " " << c.args.back() << ": " << out;
        EXPECT_NE(out.find(c.named), std::string::npos) << out;
    }
}

// A PostgreSQL URL for the cases checked before anything connects (nothing listens there).
const std::string pg_url = "postgresql://u@127.0.0.1:1/db";

TEST(cli_bad_flags, serve_refuses_wrong_pool_and_http_values_by_name) {
    expect_exit_2_naming({
        {{"serve", "--min-idle", "x"}, "--min-idle"},
        {{"serve", "--min-idle", "-1"}, "--min-idle"},
        {{"serve", "--db", pg_url, "--max", "10", "--min-idle", "20"},
         "--min-idle (20) must not exceed --max (10)"},
        {{"serve", "--max", "0"}, "--max"},
        {{"serve", "--max", "10001"}, "--max"},
        {{"serve", "--max-waiters", "x"}, "--max-waiters"},
        {{"serve", "--max-waiters", "-1"}, "--max-waiters"},
        {{"serve", "--max-waiters", "2147483648"}, "--max-waiters"},  // the pool counts in 32 bits
        {{"serve", "--connect-timeout", "10"}, "--connect-timeout"},  // no unit
        {{"serve", "--connect-timeout", "0"}, "--connect-timeout"},   // every connect would time out
        {{"serve", "--busy-timeout", "5"}, "--busy-timeout"},
        {{"serve", "--busy-timeout", "-1s"}, "--busy-timeout"},
        {{"serve", "--idle-ttl", "5min later"}, "--idle-ttl"},
        {{"serve", "--max-lifetime", "1d"}, "--max-lifetime"},  // no such unit
        {{"serve", "--breaker-failures", "x"}, "--breaker-failures"},
        {{"serve", "--breaker-failures", "-1"}, "--breaker-failures"},
        {{"serve", "--breaker-failures", "4294967296"}, "--breaker-failures"},
        {{"serve", "--cool-down", "1"}, "--cool-down"},
        {{"serve", "--healthcheck-interval", "30"}, "--healthcheck-interval"},
        {{"serve", "--healthcheck-interval", "-1s"}, "--healthcheck-interval"},
        {{"serve", "--connect-retry-max", "2"}, "--connect-retry-max"},
        {{"serve", "--connect-retry-max", "0"},
         "--connect-retry-max"},  // a refused connect retried in a loop
        {{"serve", "--request-timeout", "30"}, "--request-timeout"},
        {{"serve", "--request-timeout", "0"}, "--request-timeout"},  // "at once", not "none"
        {{"serve", "--idle-timeout", "60"}, "--idle-timeout"},
        {{"serve", "--idle-timeout", "0"}, "--idle-timeout"},  // a header not yet in the buffer: cut
        {{"serve", "--shutdown-timeout", "later"}, "--shutdown-timeout"},
        {{"serve", "--statements", "named"}, "--statements: 'named' is not cache or unnamed"},
        {{"demo", "--statements", "Unnamed"}, "--statements"},
        // A borrow that may not wait never waits for a connect: on SQLite, which opens on first use,
        // the service answered 503 to everything.
        {{"serve", "--borrow-timeout", "0"}, "--borrow-timeout"},
    });
}

// The cluster flags (a multi-host PostgreSQL URL): refused by name whatever the URL, before anything
// connects.
TEST(cli_bad_flags, serve_refuses_wrong_cluster_values_by_name) {
    const std::string cluster_url = "postgresql://u@127.0.0.1:1,127.0.0.1:2/db";
    expect_exit_2_naming({
        {{"serve", "--read-from", "replica"},
         "--read-from: 'replica' is not primary, standby or prefer-standby"},
        {{"serve", "--read-from", ""}, "--read-from"},
        {{"serve", "--db", cluster_url, "--read-from", "Standby"}, "--read-from"},
        {{"serve", "--max-replica-lag", "1"}, "--max-replica-lag"},  // no unit
        {{"serve", "--max-replica-lag", "0"}, "--max-replica-lag"},  // no standby would ever do
        {{"serve", "--db", cluster_url, "--max-replica-lag", "-1s"}, "--max-replica-lag"},
        {{"serve", "--failover-wait", "5"}, "--failover-wait"},
        {{"serve", "--db", cluster_url, "--failover-wait", "soon"}, "--failover-wait"},
    });
}

// The shared connection budget's flags: each wrong value, and each flag without what it needs,
// refused by name before anything connects.
TEST(cli_bad_flags, serve_refuses_wrong_budget_values_by_name) {
    expect_exit_2_naming({
        {{"serve", "--db", pg_url, "--budget", "on"}, "--budget: on not in {off,auto}"},
        {{"serve", "--db", pg_url, "--budget", "auto"}, "--budget auto needs --budget-schema NAME"},
        {{"serve", "--budget", "auto", "--budget-schema", "s"}, "--budget auto is for PostgreSQL"},
        {{"serve", "--db", pg_url, "--budget-schema", "s"},
         "--budget-schema is used only with --budget auto"},
        {{"serve", "--db", pg_url, "--budget-reserve", "-1"}, "--budget-reserve"},
        {{"serve", "--db", pg_url, "--budget-reserve", "10001"}, "--budget-reserve"},
        {{"serve", "--db", pg_url, "--budget-heartbeat", "1"}, "--budget-heartbeat"},  // no unit
        {{"serve", "--db", pg_url, "--budget-heartbeat", "0"}, "--budget-heartbeat"},
        {{"serve", "--db", pg_url, "--budget-lease", "0"}, "--budget-lease"},
        {{"serve", "--db", pg_url, "--budget", "auto", "--budget-schema", "s", "--budget-heartbeat", "3s"},
         "--budget-lease (3s) must exceed --budget-heartbeat (3s)"},
        {{"serve", "--db", pg_url, "--budget", "auto", "--budget-schema", std::string(64, 's')},
         "--budget-schema '" + std::string(64, 's') + "' is longer than 63 bytes"},
    });
}

// Without a multi-host PostgreSQL URL the cluster flags are accepted and change nothing: the same
// deployment flags work whatever --db says.
TEST(cli_bad_flags, serve_takes_the_cluster_flags_on_one_database_without_effect) {
    temp_dir dir;
    serve_process p({"serve", "--db", "sqlite:" + dir.path + "/kv.db", "--listen", "127.0.0.1:0",
                     "--read-from", "standby", "--max-replica-lag", "10ms", "--failover-wait", "0"});
    const std::uint16_t port = p.wait_listening();
    {
        client c(port);
        EXPECT_EQ(c.request("PUT", "/kv/k", "v").status, 204u);
        EXPECT_EQ(c.request("GET", "/kv/k").body, "v");
        const auto h = c.request("GET", "/health");
        EXPECT_EQ(h.status, 200u);
        EXPECT_EQ(h.body.find("cluster"), std::string::npos) << h.body;
        EXPECT_EQ(c.request("GET", "/metrics").body.find("respool_pg_cluster"), std::string::npos);
    }
    p.signal(SIGTERM);
    EXPECT_EQ(p.wait_exit(), 0) << p.stderr_text();
}

// The zeros that mean "none" or "off" (--busy-timeout: no wait for a lock; --idle-ttl, --max-lifetime:
// off; --breaker-failures: no circuit; --cool-down: probe at once; --healthcheck-interval: off;
// --max-waiters: no bound; --statement-timeout: none; --shutdown-timeout: cut at once; --min-idle)
// are accepted, and the service works with all of them.
TEST(cli_bad_flags, serve_takes_zero_where_zero_means_off) {
    temp_dir dir;
    std::vector<std::string> args{"serve", "--db", "sqlite:" + dir.path + "/kv.db", "--listen",
                                  "127.0.0.1:0"};
    for (const char* flag : {"--busy-timeout", "--idle-ttl", "--max-lifetime", "--breaker-failures",
                             "--cool-down", "--healthcheck-interval", "--max-waiters", "--statement-timeout",
                             "--shutdown-timeout", "--min-idle"})
        args.insert(args.end(), {flag, "0"});
    serve_process p(args);
    const std::uint16_t port = p.wait_listening();
    {
        client c(port);
        EXPECT_EQ(c.request("PUT", "/kv/zero", "v").status, 204u);
        EXPECT_EQ(c.request("GET", "/kv/zero").body, "v");
        EXPECT_EQ(c.request("POST", "/kv/n/incr").body, "1");
        EXPECT_EQ(c.request("GET", "/health").status, 200u);
    }
    p.signal(SIGTERM);
    EXPECT_EQ(p.wait_exit(), 0) << p.stderr_text();
}

TEST(cli_bad_flags, demo_refuses_wrong_values_by_name) {
    expect_exit_2_naming({
        {{"demo", "--clients", "0"}, "--clients"},
        {{"demo", "--duration", "10"}, "--duration"},  // no unit
        {{"demo", "--mix", "1:2"}, "--mix"},
        {{"demo", "--keys", "0"}, "--keys"},
        {{"demo", "--value-size", "2000000"}, "--value-size"},
        {{"demo", "--threads", "0"}, "--threads"},
        {{"demo", "--db", "mysql://u@h/db"}, "--db"},
        {{"demo", "--borrow-timeout", "soon"}, "--borrow-timeout"},
        {{"demo", "--counters", "0"}, "--counters"},
        {{"demo", "--counters", "100001"}, "--counters"},
        {{"demo", "--counters", "x"}, "--counters"},
        // the pool flags demo shares with serve
        {{"demo", "--db", pg_url, "--max", "4", "--min-idle", "5"},
         "--min-idle (5) must not exceed --max (4)"},
        {{"demo", "--max-waiters", "2147483648"}, "--max-waiters"},
        {{"demo", "--connect-timeout", "0"}, "--connect-timeout"},
        {{"demo", "--busy-timeout", "x"}, "--busy-timeout"},
        {{"demo", "--idle-ttl", "5"}, "--idle-ttl"},
        {{"demo", "--max-lifetime", "5"}, "--max-lifetime"},
        {{"demo", "--breaker-failures", "-1"}, "--breaker-failures"},
        {{"demo", "--cool-down", "5"}, "--cool-down"},
        {{"demo", "--borrow-timeout", "0"}, "--borrow-timeout"},
    });
}

TEST(cli_bad_flags, simulate_refuses_wrong_values_by_name) {
    expect_exit_2_naming({
        {{"simulate", "--clients", "0"}, "--clients"},
        {{"simulate", "--hold", "5"}, "--hold"},  // no unit
        {{"simulate", "--failure-rate", "1.5"}, "--failure-rate"},
        {{"simulate", "--timeout", "later"}, "--timeout"},
        {{"simulate", "--leak-rate", "-0.1"}, "--leak-rate"},
        {{"simulate", "--min", "5", "--max", "3"}, "--min (5) must not exceed --max (3)"},
        {{"simulate", "--min", "-1"}, "--min"},
        {{"simulate", "--min", "x"}, "--min"},
        {{"simulate", "--max", "0"}, "--max (0) must be from 1 to 2147483647"},
        {{"simulate", "--max", "2147483648"}, "--max (2147483648) must be from 1 to 2147483647"},
        {{"simulate", "--max", "x"}, "--max"},
        {{"simulate", "--create-latency", "20"}, "--create-latency"},
        {{"simulate", "--duration", "10"}, "--duration"},
        {{"simulate", "--outage", "3s"}, "--outage"},    // no LENGTH
        {{"simulate", "--outage", "3s:x"}, "--outage"},  // LENGTH not a duration
        {{"simulate", "--outage", "3:2s"}, "--outage"},  // START without a unit
        {{"simulate", "--breaker", "x"}, "--breaker"},
        {{"simulate", "--breaker", "-1"}, "--breaker"},
        {{"simulate", "--cool-down", "1"}, "--cool-down"},
        {{"simulate", "--leak-hold", "3"}, "--leak-hold"},
        {{"simulate", "--acquire-ttl", "1"}, "--acquire-ttl"},
        {{"simulate", "--idle-ttl", "5"}, "--idle-ttl"},
        {{"simulate", "--max-lifetime", "forever"}, "--max-lifetime"},
    });
}

// simulate's zeros that mean "none" or "off" are accepted, and it runs to its end.
TEST(cli_bad_flags, simulate_takes_zero_where_zero_means_off) {
    std::vector<std::string> args{"simulate", "-q", "--duration", "300ms"};
    for (const char* flag :
         {"--min", "--create-latency", "--hold", "--timeout", "--breaker", "--cool-down", "--leak-hold",
          "--acquire-ttl", "--idle-ttl", "--max-lifetime", "--failure-rate", "--leak-rate"})
        args.insert(args.end(), {flag, "0"});
    auto [status, out] = run_to_exit(args);
    EXPECT_EQ(status, 0) << out;
    EXPECT_NE(out.find("leases handed out"), std::string::npos) << out;
}

// A PostgreSQL --db whose option values libpq would refuse only at the first connect: refused at
// startup, exit 2, the flag and the option named, the password never printed.
TEST(cli_bad_flags, serve_refuses_malformed_connection_option_values_by_name) {
    const std::vector<bad> cases = {
        {{"serve", "--db", "host=127.0.0.1 password=hunter2 port=notaport"}, "option port"},
        {{"serve", "--db", "host=127.0.0.1 password=hunter2 port=-5"}, "option port"},
        {{"serve", "--db", "host=127.0.0.1 password=hunter2 port=70000"}, "option port"},
        {{"serve", "--db", "host=127.0.0.1 password=hunter2 sslmode=bogus"}, "option sslmode"},
        {{"serve", "--db", "host=127.0.0.1 password=hunter2 connect_timeout=x"}, "option connect_timeout"},
        {{"serve", "--db", "postgresql://u:hunter2@127.0.0.1:notaport/db"}, "option port"},
        {{"serve", "--db", "postgresql://u:hunter2@127.0.0.1/db?sslmode=bogus"}, "option sslmode"},
        {{"serve", "--db", "host=a,b,c port=1,2 password=hunter2"}, "option port: 2 ports for 3 hosts"},
        {{"demo", "--db", "postgresql://u:hunter2@127.0.0.1/db?connect_timeout=-1"},
         "option connect_timeout"},
    };
    expect_exit_2_naming(cases);
    for (const auto& c : cases) {
        auto [status, out] = run_to_exit(c.args);
        EXPECT_NE(out.find("--db"), std::string::npos) << out;
        EXPECT_EQ(out.find("hunter2"), std::string::npos) << out;
    }
}

// Messages that quote a connection string: libpq's parse error (it quotes the whole URI), a URI given
// where no argument is expected. The password is masked in each.
TEST(cli_bad_flags, no_message_prints_a_password) {
    const std::vector<std::vector<std::string>> cases = {
        {"serve", "--db", "postgresql://app:hunter2@[::1/postgres"},
        {"serve", "--db", "postgresql://app:hunter%zz2@127.0.0.1/db"},
        {"serve", "--db", "host=127.0.0.1 password=hunter 2"},
        {"serve", "--db", "sqlite:x.db", "postgresql://app:hunter2@127.0.0.1/db"},
        {"serve", "--db", "sqlite:x.db", "password=hunter2"},
    };
    for (const auto& args : cases) {
        auto [status, out] = run_to_exit(args);
        EXPECT_EQ(status, 2) << out;
        EXPECT_EQ(out.find("hunter"), std::string::npos) << out;
    }
}

// A URI whose password libpq reads from the query after an IPv6-style host holding '?': the service
// starts (nothing answers there) and its banner shows the URL masked.
TEST(cli_bad_flags, the_serve_banner_masks_the_password) {
    serve_process p({"serve", "--db", "postgresql://[?passwor]?password=hunter2&connect_timeout=1",
                     "--listen", "127.0.0.1:0", "--min-idle", "0", "--breaker-failures", "0"});
    p.wait_listening();
    p.signal(SIGTERM);
    EXPECT_TRUE(p.wait_exit().has_value());
    const std::string err = p.stderr_text();
    EXPECT_NE(err.find("postgresql://[?passwor]?password=***"), std::string::npos) << err;
    EXPECT_EQ(err.find("hunter2"), std::string::npos) << err;
}

TEST(cli_bad_flags, an_unknown_subcommand_or_flag_exits_2) {
    expect_exit_2_naming({
        {{"serve-it", "--x"}, "serve-it"},
        {{"demo", "--bogus"}, "--bogus"},
        {{"simulate", "--bogus"}, "--bogus"},
    });
}

}  // namespace
