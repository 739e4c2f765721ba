// The /health body both ways (tools/respool/health_json.hpp), without a service: what the service
// writes is the documented JSON (docs/09-service.md), and what `respool demo` reads back from it.
#include "health_json.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>

using namespace respool_cli;

namespace {

std::vector<health_pool> two_threads() {
    return {{.thread = 0,
             .name = "writer",
             .idle = 1,
             .active = 0,
             .total = 1,
             .max = 1,
             .waiting = 0,
             .circuit = "closed"},
            {.thread = 0,
             .name = "reader",
             .idle = 3,
             .active = 5,
             .total = 8,
             .max = 16,
             .waiting = 0,
             .circuit = "closed"},
            {.thread = 1,
             .name = "writer",
             .idle = 0,
             .active = 1,
             .total = 1,
             .max = 1,
             .waiting = 4,
             .circuit = "half_open"},
            {.thread = 1,
             .name = "reader",
             .idle = 2,
             .active = 6,
             .total = 8,
             .max = 16,
             .waiting = 7,
             .circuit = "closed"}};
}

}  // namespace

TEST(health_json, the_up_body_is_the_documented_json_field_for_field) {
    const std::vector<health_pool> one{{.thread = 0,
                                        .name = "writer",
                                        .idle = 1,
                                        .active = 0,
                                        .total = 1,
                                        .max = 1,
                                        .waiting = 0,
                                        .circuit = "closed"},
                                       {.thread = 0,
                                        .name = "reader",
                                        .idle = 1,
                                        .active = 0,
                                        .total = 1,
                                        .max = 16,
                                        .waiting = 0,
                                        .circuit = "closed"}};
    EXPECT_EQ(
        health_up_body("sqlite", 1, one),
        R"({"status":"up","database":"sqlite","threads":1,"pools":[)"
        R"({"thread":0,"pool":"writer","idle":1,"active":0,"total":1,"max":1,"waiting":0,"circuit":"closed"},)"
        R"({"thread":0,"pool":"reader","idle":1,"active":0,"total":1,"max":16,"waiting":0,"circuit":"closed"}]})");
    EXPECT_EQ(health_up_body("postgresql", 2, {}),
              R"({"status":"up","database":"postgresql","threads":2,"pools":[]})");
}

TEST(health_json, the_down_body_says_why_and_since_when_with_the_reason_escaped) {
    const std::string reason = "connection refused: server at \"db\" \\ said\nno\x01";
    const std::string body = health_down_body(reason, "2026-11-25T10:00:00.000Z");
    EXPECT_EQ(body.rfind(R"({"status":"down","reason":")", 0), 0u) << body;  // what clients match
    const boost::json::value v = boost::json::parse(body);
    EXPECT_EQ(v.at("reason").as_string(), reason);
    EXPECT_EQ(v.at("since").as_string(), "2026-11-25T10:00:00.000Z");
    EXPECT_EQ(v.as_object().size(), 3u);
}

TEST(health_json, a_client_reads_the_sums_per_pool_name_and_the_worst_circuit) {
    const health_reading r = read_health(200, health_up_body("sqlite", 2, two_threads()));
    EXPECT_TRUE(r.up);
    ASSERT_EQ(r.pools.size(), 2u);
    EXPECT_EQ(r.pools.at("writer"), (std::array<long, 3>{1, 1, 4}));
    EXPECT_EQ(r.pools.at("reader"), (std::array<long, 3>{5, 11, 7}));
    EXPECT_EQ(r.circuit, "half_open");
    auto open = two_threads();
    open[0].circuit = "open";  // open outranks half_open
    EXPECT_EQ(read_health(200, health_up_body("sqlite", 2, open)).circuit, "open");
}

TEST(health_json, a_down_or_unreadable_answer_reads_as_no_pools) {
    const health_reading down =
        read_health(503, health_down_body("not checked yet", "2026-11-25T10:00:00.000Z"));
    EXPECT_FALSE(down.up);
    EXPECT_TRUE(down.pools.empty());
    EXPECT_EQ(down.circuit, "closed");
    for (const char* body : {"", "not json", "[1,2]", R"({"pools":3})", R"({"pools":[1,"x",{"pool":7}]})"}) {
        const health_reading r = read_health(0, body);
        EXPECT_FALSE(r.up) << body;
        EXPECT_LE(r.pools.size(), 1u) << body;  // an item without a name counts under ""
        EXPECT_EQ(r.circuit, "closed") << body;
    }
}

TEST(health_json, a_cluster_client_lists_its_hosts_and_primary_up_or_down) {
    const health_pool counts{.thread = 0,
                             .name = {},
                             .idle = 2,
                             .active = 1,
                             .total = 3,
                             .max = 16,
                             .waiting = 0,
                             .circuit = "closed"};
    health_cluster c{.primary = "127.0.0.1:5433",
                     .hosts = {{.thread = 0,
                                .name = "127.0.0.1:5433",
                                .role = "primary",
                                .writable = true,
                                .timeline = 2,
                                .lag_ms = 0,
                                .pool = counts},
                               {.thread = 0,
                                .name = "127.0.0.1:5434",
                                .role = "down",
                                .timeline = 0,
                                .lag_ms = std::nullopt,
                                .pool = counts}}};
    const std::string up = health_up_body("postgresql", 1, {}, &c);
    EXPECT_EQ(
        up,
        R"({"status":"up","database":"postgresql","threads":1,"pools":[],"cluster":{"primary":"127.0.0.1:5433",)"
        R"("hosts":[{"thread":0,"name":"127.0.0.1:5433","role":"primary","writable":true,"timeline":2,)"
        R"("lag_ms":0,"pool":{"idle":2,"active":1,"total":3,"max":16,"waiting":0,"circuit":"closed"}},)"
        R"({"thread":0,"name":"127.0.0.1:5434","role":"down","writable":false,"timeline":0,"lag_ms":null,)"
        R"("pool":{"idle":2,"active":1,"total":3,"max":16,"waiting":0,"circuit":"closed"}}]}})");
    c.primary = {};
    const std::string down =
        health_down_body("no primary: 127.0.0.1:5433 down", "2026-11-25T10:00:00.000Z", &c);
    EXPECT_EQ(down.rfind(R"({"status":"down","reason":"no primary: 127.0.0.1:5433 down","since":)", 0), 0u)
        << down;
    const boost::json::value v = boost::json::parse(down);
    EXPECT_TRUE(v.at("cluster").at("primary").is_null());
    EXPECT_EQ(v.at("cluster").at("hosts").as_array().size(), 2u);
}

namespace {

TEST(health_json, a_pool_in_the_shared_budget_shows_its_share_and_why_it_does_not_share) {
    const std::vector<health_pool> pools{
        {.thread = 0,
         .name = "postgresql",
         .total = 3,
         .max = 11,
         .circuit = "closed",
         .budget = health_budget{.connections = 34, .members = 3, .granted = 12, .target = 12, .demand = 9}},
        {.thread = 1,
         .name = "postgresql",
         .max = 16,
         .circuit = "closed",
         .budget = health_budget{.degraded = "cannot use fleet.respool_budget: permission denied"}}};
    EXPECT_EQ(
        health_up_body("postgresql", 2, pools),
        R"({"status":"up","database":"postgresql","threads":2,"pools":[)"
        R"({"thread":0,"pool":"postgresql","idle":0,"active":0,"total":3,"max":11,"waiting":0,"circuit":"closed",)"
        R"("budget":{"connections":34,"members":3,"granted":12,"target":12,"demand":9,"degraded":null}},)"
        R"({"thread":1,"pool":"postgresql","idle":0,"active":0,"total":0,"max":16,"waiting":0,"circuit":"closed",)"
        R"("budget":{"connections":0,"members":0,"granted":0,"target":0,"demand":0,)"
        R"("degraded":"cannot use fleet.respool_budget: permission denied"}}]})");
}

}  // namespace
