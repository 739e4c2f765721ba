// judge_cluster (tools/respool/cluster_health.hpp) without a cluster: a cluster client's /health is up
// while every loop knows a primary whose pool can lend, whatever its standbys do; down with the
// cluster's reason, or the primary's open circuit, otherwise.
#include "cluster_health.hpp"

#include <gtest/gtest.h>

using namespace respool_cli;

namespace {

cluster_host_view host(std::string name, std::string role,
                       respool::circuit_state circuit = respool::circuit_state::closed) {
    cluster_host_view h;
    h.name = std::move(name);
    h.role = std::move(role);
    h.pool.circuit = circuit;
    return h;
}

cluster_view with_primary() {
    cluster_view v;
    v.hosts = {host("db1:5432", "primary"), host("db2:5432", "standby")};
    v.primary = 0;
    return v;
}

}  // namespace

TEST(cluster_health, up_while_every_loop_knows_a_primary_whatever_the_standbys_do) {
    EXPECT_TRUE(judge_cluster({with_primary(), with_primary()}).up);
    auto standby_gone = with_primary();
    standby_gone.hosts[1] = host("db2:5432", "down", respool::circuit_state::open);
    const cluster_verdict v = judge_cluster({standby_gone, std::nullopt});
    EXPECT_TRUE(v.up);
    EXPECT_EQ(v.reason, "");
    EXPECT_TRUE(judge_cluster({}).up);
}

TEST(cluster_health, down_with_the_cluster_s_reason_when_one_loop_has_no_primary) {
    cluster_view none;
    none.hosts = {host("db1:5432", "down"), host("db2:5432", "standby")};
    none.no_primary_reason = "no primary: db1:5432 down (connection refused), db2:5432 standby";
    const cluster_verdict v = judge_cluster({with_primary(), none});
    EXPECT_FALSE(v.up);
    EXPECT_EQ(v.reason, none.no_primary_reason);
    none.no_primary_reason.clear();
    EXPECT_EQ(judge_cluster({none}).reason, "no primary known");
}

TEST(cluster_health, down_when_the_primary_s_pool_circuit_is_open) {
    auto open = with_primary();
    open.hosts[0].pool.circuit = respool::circuit_state::open;
    const cluster_verdict v = judge_cluster({open});
    EXPECT_FALSE(v.up);
    EXPECT_EQ(v.reason,
              "circuit open on the primary db1:5432: its pool stopped connecting for its cool-down");
    open.hosts[0].pool.circuit = respool::circuit_state::half_open;  // probing: up, as for one database
    EXPECT_TRUE(judge_cluster({open}).up);
}
