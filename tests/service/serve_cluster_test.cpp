// `respool serve` as a cluster client (a multi-host --db URL) on the replicated cluster of the
// pg_replicas fixture (node0 the primary, node1 and node2 its streaming standbys): GET with
// --read-from standby runs on a standby and never on the primary; a promotion after the primary
// stopped is followed without a restart (/health names the new primary, a write that waited for it
// succeeds, the role change is one log line); a write that finds no primary for --failover-wait is a
// 503 with Retry-After: 1; --read-from prefer-standby reads a standby, and the primary once no standby
// answers; a split brain fences the old primary; /metrics passes promtool; no output carries the
// password.
//
// Every test that changes roles puts the fixture's layout back in TearDown (restore_layout), so that
// a failed test does not break the next one.
#include "pg_replica_set.hpp"
#include "serve_support.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <string>
#include <thread>
#include <vector>

using namespace serve_test;
using namespace std::chrono_literals;

namespace {

constexpr const char* password = "respool-test-secret";  // pg_replicas.sh's

class serve_cluster : public ::testing::Test {
protected:
    void SetUp() override {
        if (!test::pg_replica_set::available()) GTEST_SKIP() << "run through ctest -L cluster";
        rig.emplace();
        rig->query(0, "DROP TABLE IF EXISTS respool_kv");
    }
    void TearDown() override {
        if (process) {  // a graceful stop: exit 0 (a sanitizer's report at exit would change it)
            process->signal(SIGTERM);
            EXPECT_EQ(process->wait_exit(), 0) << process->stderr_text();
        }
        if (rig) rig->restore_layout();
    }
    // The service on every node (the multi-host URL), with application_name=`app` and `extra` flags.
    std::uint16_t start(const std::string& app, std::vector<std::string> extra = {}) {
        std::vector<std::string> args{"serve", "--db", rig->url() + "?application_name=" + app, "--listen",
                                      "127.0.0.1:0"};
        args.insert(args.end(), extra.begin(), extra.end());
        process.emplace(args);
        return process->wait_listening();
    }
    std::string host(int i) const { return "127.0.0.1:" + std::to_string(rig->port(i)); }
    // Backends of `app` on node i whose last statement was the service's GET.
    int gets_seen_on(int i, const std::string& app) const {
        const auto rows = rig->query(i,
                                     "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND "
                                     "query LIKE 'SELECT v FROM respool_kv%'",
                                     {app});
        return std::stoi(rows.at(0).at(0).value_or("0"));
    }
    // /health's answer, polled until `pred` holds (bounded).
    response health_until(client& c, const std::function<bool(const response&)>& pred,
                          const std::string& what) {
        response last;
        test::pg_replica_set::wait_until(
            [&] {
                last = c.request("GET", "/health");
                return pred(last);
            },
            30s, what);
        return last;
    }

    std::optional<test::pg_replica_set> rig;
    std::optional<serve_process> process;
};

bool has(const std::string& text, const std::string& needle) {
    return text.find(needle) != std::string::npos;
}

int occurrences(const std::string& text, const std::string& needle) {
    int n = 0;
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size()))
        ++n;
    return n;
}

// A per-loop metric summed over the two loops of --threads 2.
double per_loop_sum(const std::string& exposition, const std::string& name) {
    return sample(exposition, name + R"({thread="0"})").value_or(0) +
           sample(exposition, name + R"({thread="1"})").value_or(0);
}

}  // namespace

TEST_F(serve_cluster, health_lists_every_host_and_the_primary_and_metrics_pass_promtool) {
    client c(start("serve_cl_health"));
    const auto h = health_until(
        c, [&](const response& r) { return r.status == 200 && has(r.body, R"("role":"standby")"); },
        "the hosts' roles to be known");
    EXPECT_TRUE(has(h.body, R"("primary":")" + host(0) + "\"")) << h.body;
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(has(h.body, R"("name":")" + host(i) + "\"")) << h.body;
    ASSERT_EQ(c.request("PUT", "/kv/k", "v").status, 204u);
    const auto m = c.request("GET", "/metrics");
    EXPECT_EQ(promtool_problems(m.body), "");
    EXPECT_EQ(sample(m.body, R"(respool_pg_host_role{thread="0",host=")" + host(0) + R"(",role="primary"})"),
              1);
    EXPECT_EQ(sample(m.body, R"(respool_pg_host_role{thread="0",host=")" + host(1) + R"(",role="standby"})"),
              1);
    EXPECT_EQ(sample(m.body, R"(respool_pg_host_writable{thread="0",host=")" + host(0) + R"("})"), 1);
    EXPECT_EQ(sample(m.body, R"(respool_pg_cluster_primary_known{thread="0"})"), 1);
    EXPECT_TRUE(sample(m.body, R"(respool_pool_resources_max{pool=")" + host(2) + R"(",thread="0"})"));
    EXPECT_FALSE(has(h.body + m.body, password));
}

TEST_F(serve_cluster, get_with_read_from_standby_runs_on_a_standby_never_on_the_primary) {
    const std::string app = "serve_cl_standby";
    client c(start(app, {"--read-from", "standby", "--max-replica-lag", "10s"}));
    ASSERT_EQ(c.request("PUT", "/kv/k", "on the primary").status, 204u);
    rig->wait_replayed(1);
    rig->wait_replayed(2);
    for (int i = 0; i < 5; ++i) {
        const auto r = c.request("GET", "/kv/k");
        EXPECT_EQ(r.status, 200u) << r.body;
        EXPECT_EQ(r.body, "on the primary");
    }
    EXPECT_GE(gets_seen_on(1, app) + gets_seen_on(2, app), 1);
    EXPECT_EQ(gets_seen_on(0, app), 0);
    const auto m = c.request("GET", "/metrics");
    EXPECT_EQ(sample(m.body, R"(respool_pg_cluster_reads_total{thread="0",to="standby"})"), 5);
    EXPECT_EQ(sample(m.body, R"(respool_pg_cluster_reads_total{thread="0",to="primary"})"), 0);
}

TEST_F(serve_cluster, a_promotion_is_followed_without_a_restart_and_a_waiting_write_succeeds) {
    const auto port = start("serve_cl_failover", {"--failover-wait", "30s", "--threads", "2"});
    client c(port);
    health_until(
        c, [&](const response& r) { return r.status == 200 && has(r.body, R"("role":"standby")"); },
        "the hosts' roles to be known");
    ASSERT_EQ(c.request("PUT", "/kv/k", "before").status, 204u);
    rig->wait_replayed(1);

    rig->stop(0);
    // Both loops know there is no primary (a loop that still took node0 for one would send the write
    // there, and fail it, instead of waiting).
    test::pg_replica_set::wait_until(
        [&] {
            return per_loop_sum(c.request("GET", "/metrics").body, "respool_pg_cluster_primary_known") == 0;
        },
        30s, "both loops to know there is no primary");
    const auto down = c.request("GET", "/health");
    EXPECT_EQ(down.status, 503u) << down.body;
    EXPECT_TRUE(has(down.body, R"("status":"down","reason":")")) << down.body;
    EXPECT_TRUE(has(down.body, R"("primary":null)")) << down.body;

    // A write while no primary is known waits for one (counted on /metrics) instead of failing.
    response waited;
    std::thread writer([&] { waited = client(port).request("PUT", "/kv/k", "after"); });
    test::pg_replica_set::wait_until(
        [&] {
            return per_loop_sum(c.request("GET", "/metrics").body,
                                "respool_pg_cluster_writes_waiting_for_primary") == 1;
        },
        20s, "the write to wait for a primary");
    rig->promote(1);
    writer.join();
    EXPECT_EQ(waited.status, 204u) << waited.body;

    const auto up = health_until(
        c, [](const response& r) { return r.status == 200; }, "/health to say up");
    EXPECT_TRUE(has(up.body, R"("primary":")" + host(1) + "\"")) << up.body;
    EXPECT_EQ(c.request("PUT", "/kv/k2", "new primary").status, 204u);
    EXPECT_EQ(rig->query(1, "SELECT convert_from(v, 'UTF8') FROM respool_kv WHERE k = 'k'")
                  .at(0)
                  .at(0)
                  .value_or(""),
              "after");
    const auto m = c.request("GET", "/metrics");
    EXPECT_GE(per_loop_sum(m.body, "respool_pg_cluster_failover_waits_total"), 1);
    EXPECT_EQ(promtool_problems(m.body), "");

    const std::string log = process->stderr_text();
    // One line per event, whatever the number of loops (each loop's cluster sees the change).
    EXPECT_EQ(occurrences(log, "respool serve: host " + host(1) + " standby -> primary: promoted"), 1) << log;
    EXPECT_TRUE(has(log, "info  respool serve: host " + host(1) + " standby -> primary")) << log;
    EXPECT_EQ(occurrences(log, "respool serve: host " + host(0) + " primary -> down"), 1) << log;
    EXPECT_TRUE(has(log, "warn  respool serve: host " + host(0) + " primary -> down")) << log;
    EXPECT_FALSE(has(log + up.body + down.body + m.body, password)) << log;
}

TEST_F(serve_cluster, a_write_that_finds_no_primary_for_failover_wait_is_503_with_retry_after) {
    client c(start("serve_cl_timeout", {"--failover-wait", "300ms"}));
    health_until(
        c, [](const response& r) { return r.status == 200; }, "/health to say up");
    ASSERT_EQ(c.request("PUT", "/kv/k", "v").status, 204u);
    rig->stop(0);
    health_until(
        c, [](const response& r) { return r.status == 503; }, "/health to say down");
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = c.request("PUT", "/kv/k", "w");
    EXPECT_EQ(r.status, 503u) << r.body;
    EXPECT_EQ(r.header("retry-after"), "1");
    EXPECT_EQ(r.header("content-type"), "application/json");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
    EXPECT_FALSE(has(r.body, password));
    EXPECT_GE(
        sample(c.request("GET", "/metrics").body, R"(respool_pg_cluster_failover_timeouts_total{thread="0"})")
            .value_or(0),
        1);
    rig->start(0);  // back as the primary: writes go through again
    health_until(
        c, [](const response& h) { return h.status == 200; }, "/health to say up again");
    EXPECT_EQ(c.request("PUT", "/kv/k", "again").status, 204u);
}

TEST_F(serve_cluster, get_with_prefer_standby_reads_a_standby_and_the_primary_once_no_standby_answers) {
    const std::string app = "serve_cl_prefer";
    client c(start(app, {"--read-from", "prefer-standby", "--max-replica-lag", "10s"}));
    ASSERT_EQ(c.request("PUT", "/kv/k", "v").status, 204u);
    rig->wait_replayed(1);
    rig->wait_replayed(2);
    EXPECT_EQ(c.request("GET", "/kv/k").body, "v");
    auto m = c.request("GET", "/metrics");
    EXPECT_EQ(sample(m.body, R"(respool_pg_cluster_reads_total{thread="0",to="standby"})"), 1);

    rig->stop(1);
    rig->stop(2);
    test::pg_replica_set::wait_until(
        [&] {
            const std::string body = c.request("GET", "/metrics").body;
            return sample(body,
                          R"(respool_pg_host_role{thread="0",host=")" + host(1) + R"(",role="down"})") == 1 &&
                   sample(body,
                          R"(respool_pg_host_role{thread="0",host=")" + host(2) + R"(",role="down"})") == 1;
        },
        30s, "both standbys to be seen down");
    const auto r = c.request("GET", "/kv/k");
    EXPECT_EQ(r.status, 200u) << r.body;
    EXPECT_EQ(r.body, "v");
    EXPECT_EQ(c.request("GET", "/health").status, 200u);  // the primary serves: up
    m = c.request("GET", "/metrics");
    // (Counted, not looked for in node0's pg_stat_activity: the service's probe may have run on that
    // connection since, and only the last statement shows.)
    EXPECT_EQ(sample(m.body, R"(respool_pg_cluster_reads_total{thread="0",to="primary"})"), 1);
}

// The service says it is ready once its clusters know the hosts' roles: the first request after the
// ready line finds the primary, even with --failover-wait 0 (no wait for one).
TEST_F(serve_cluster, the_first_request_after_the_ready_line_finds_the_primary) {
    const auto port = start("serve_cl_ready", {"--failover-wait", "0", "--threads", "2"});
    client c(port), other(port);  // one connection per loop (the acceptor hands them out in turn)
    const auto h = c.request("GET", "/health");
    EXPECT_EQ(h.status, 200u) << h.body;
    EXPECT_TRUE(has(h.body, R"("primary":")" + host(0) + "\"")) << h.body;
    EXPECT_EQ(c.request("PUT", "/kv/first", "v").status, 204u);
    EXPECT_EQ(other.request("PUT", "/kv/second", "v").status, 204u);
}

// Split brain: a standby promoted while the old primary still runs. The cluster follows the higher
// timeline (node1); node0, still claiming the role, is fenced (a warn line) and gets no write.
TEST_F(serve_cluster, a_split_brain_fences_the_old_primary_and_writes_go_to_the_new_one) {
    const std::string app = "serve_cl_split";
    client c(start(app));
    ASSERT_EQ(c.request("PUT", "/kv/k", "before").status, 204u);
    rig->promote(1);  // node0 keeps running: two primaries
    const auto up = health_until(
        c,
        [&](const response& r) { return r.status == 200 && has(r.body, R"("primary":")" + host(1) + "\""); },
        "/health to name node1 the primary");
    EXPECT_TRUE(has(up.body, R"("name":")" + host(0) + R"(","role":"fenced")")) << up.body;
    EXPECT_EQ(c.request("PUT", "/kv/k", "after").status, 204u);
    EXPECT_EQ(rig->query(1, "SELECT convert_from(v, 'UTF8') FROM respool_kv WHERE k = 'k'")
                  .at(0)
                  .at(0)
                  .value_or(""),
              "after");
    EXPECT_EQ(rig->query(0, "SELECT convert_from(v, 'UTF8') FROM respool_kv WHERE k = 'k'")
                  .at(0)
                  .at(0)
                  .value_or(""),
              "before");  // the fenced host got no write
    const std::string log = process->stderr_text();
    EXPECT_TRUE(has(log, "warn  respool serve: host " + host(0) + " primary -> fenced")) << log;
    EXPECT_TRUE(has(log, "info  respool serve: host " + host(1) + " standby -> primary")) << log;
    EXPECT_EQ(promtool_problems(c.request("GET", "/metrics").body), "");
}
