// /metrics' cluster families (tools/respool/cluster_metrics.hpp) without a cluster (and the shared
// budget's, at the end): what a multi-host
// service writes for every role, an unknown lag, two loops and a host name that needs escaping, and
// that promtool accepts it.
#include "cluster_metrics.hpp"
#include "budget_metrics.hpp"
#include "serve_support.hpp"

#include <gtest/gtest.h>

using namespace respool_cli;
using namespace serve_test;

namespace {

cluster_host_view host_view(std::string name, std::string role, std::uint32_t timeline = 0,
                            std::optional<std::chrono::nanoseconds> lag = std::nullopt,
                            std::uint64_t statements = 0) {
    cluster_host_view h;
    h.name = std::move(name);
    h.role = std::move(role);
    h.writable = h.role == "primary";
    h.timeline = timeline;
    h.lag = lag;
    h.statements = statements;
    return h;
}

cluster_view three_hosts() {
    cluster_view v;
    v.hosts = {host_view("db1:5432", "fenced", 1, std::nullopt, 3),
               host_view("db2:5432", "primary", 2, std::chrono::nanoseconds(0), 40),
               host_view("db\"3\\:5432", "standby", 0, std::chrono::milliseconds(250), 7)};
    v.primary = 1;
    v.waiting_for_primary = 2;
    v.failover_waits = 5;
    v.failover_timeouts = 1;
    v.reads_to_standby = 6;
    v.reads_to_primary = 9;
    return v;
}

}  // namespace

TEST(cluster_metrics, every_family_per_loop_and_host_passes_promtool) {
    cluster_view down;
    down.hosts = {host_view("db1:5432", "down"), host_view("db2:5432", "unknown")};
    std::string out;
    write_cluster_metrics(out, {three_hosts(), std::nullopt, down});
    EXPECT_EQ(promtool_problems(out), "") << out;

    // The role is one-hot over the five roles.
    for (const char* role : {"unknown", "primary", "standby", "fenced", "down"}) {
        const auto v = sample(
            out, std::string(R"(respool_pg_host_role{thread="0",host="db1:5432",role=")") + role + "\"}");
        EXPECT_EQ(v, std::string(role) == "fenced" ? 1 : 0) << role;
    }
    EXPECT_EQ(sample(out, R"(respool_pg_host_role{thread="2",host="db2:5432",role="unknown"})"), 1);
    EXPECT_EQ(sample(out, R"(respool_pg_host_writable{thread="0",host="db2:5432"})"), 1);
    EXPECT_EQ(sample(out, R"(respool_pg_host_timeline{thread="0",host="db2:5432"})"), 2);
    // The label value escaped as the format says.
    EXPECT_EQ(sample(out, R"(respool_pg_host_replica_lag_seconds{thread="0",host="db\"3\\:5432"})"), 0.25);
    EXPECT_EQ(sample(out, R"(respool_pg_host_replica_lag_seconds{thread="0",host="db2:5432"})"), 0);
    // An unknown lag has no sample (not 0, which would say "current").
    EXPECT_FALSE(sample(out, R"(respool_pg_host_replica_lag_seconds{thread="0",host="db1:5432"})"));
    EXPECT_EQ(sample(out, R"(respool_pg_host_statements_total{thread="0",host="db2:5432"})"), 40);
    EXPECT_EQ(sample(out, R"(respool_pg_cluster_primary_known{thread="0"})"), 1);
    EXPECT_EQ(sample(out, R"(respool_pg_cluster_primary_known{thread="2"})"), 0);
    EXPECT_EQ(sample(out, R"(respool_pg_cluster_writes_waiting_for_primary{thread="0"})"), 2);
    EXPECT_EQ(sample(out, R"(respool_pg_cluster_failover_waits_total{thread="0"})"), 5);
    EXPECT_EQ(sample(out, R"(respool_pg_cluster_failover_timeouts_total{thread="0"})"), 1);
    EXPECT_EQ(sample(out, R"(respool_pg_cluster_reads_total{thread="0",to="standby"})"), 6);
    EXPECT_EQ(sample(out, R"(respool_pg_cluster_reads_total{thread="0",to="primary"})"), 9);
    // A loop without a cluster (nullopt) has no sample.
    EXPECT_FALSE(sample(out, R"(respool_pg_cluster_primary_known{thread="1"})"));
}

TEST(cluster_metrics, no_cluster_writes_nothing) {
    std::string out;
    write_cluster_metrics(out, {});
    write_cluster_metrics(out, {std::nullopt, std::nullopt});
    EXPECT_EQ(out, "");
}

namespace {

// The shared connection budget's families (tools/respool/budget_metrics.hpp): one sample per pool in
// the budget, labelled by loop and pool, and promtool accepts them.
TEST(budget_metrics, every_family_per_loop_and_pool_passes_promtool) {
    respool::pg::budget_stats sharing{
        .enabled = true, .budget = 34, .members = 3, .granted = 12, .target = 13, .demand = 21, .ticks = 40};
    respool::pg::budget_stats standby{.enabled = true, .degraded = "the server is read-only (a standby)"};
    std::string out;
    write_budget_metrics(out,
                         {{0, "db1:5432", sharing}, {0, "db\"2:5432", standby}, {1, "db1:5432", sharing}});
    EXPECT_EQ(promtool_problems(out), "") << out;
    EXPECT_EQ(sample(out, R"(respool_pg_budget_connections{thread="0",pool="db1:5432"})"), 34);
    EXPECT_EQ(sample(out, R"(respool_pg_budget_members{thread="1",pool="db1:5432"})"), 3);
    EXPECT_EQ(sample(out, R"(respool_pg_budget_granted_connections{thread="0",pool="db1:5432"})"), 12);
    EXPECT_EQ(sample(out, R"(respool_pg_budget_target_connections{thread="0",pool="db1:5432"})"), 13);
    EXPECT_EQ(sample(out, R"(respool_pg_budget_demand_connections{thread="0",pool="db1:5432"})"), 21);
    EXPECT_EQ(sample(out, R"(respool_pg_budget_degraded{thread="0",pool="db1:5432"})"), 0);
    EXPECT_EQ(sample(out, R"(respool_pg_budget_degraded{thread="0",pool="db\"2:5432"})"), 1);
    EXPECT_EQ(sample(out, R"(respool_pg_budget_heartbeats_total{thread="0",pool="db1:5432"})"), 40);
    std::string none;
    write_budget_metrics(none, {});
    EXPECT_EQ(none, "");
}

}  // namespace
