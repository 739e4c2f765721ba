// pg::pool_config, its budget_config and a cluster's host pools without a server: a setting left at
// its default follows the ones that were set (min_idle lowered to max, max raised to min_idle, the
// connect back-off pair, heartbeat and lease), and two settings that were both set and contradict
// each other are refused with the message that names them. The io_context never runs: nothing connects.
#include <respool/pg/cluster.hpp>
#include <respool/pg/pool.hpp>

#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

using namespace std::chrono_literals;
namespace pg = respool::pg;

namespace {

// A port nobody listens on, on loopback: the pool is never run, so it never tries it anyway.
const std::string nowhere = "host=127.0.0.1 port=1 dbname=x connect_timeout=1";

// The settings the pool uses, or its refusal.
struct outcome {
    std::optional<pg::pool_config> used;
    std::string refusal;
};

outcome make(pg::pool_config c) {
    boost::asio::io_context io;
    try {
        pg::pool p(io.get_executor(), std::move(c));
        return {p.config(), {}};
    } catch (const std::invalid_argument& e) {
        return {std::nullopt, e.what()};
    }
}

}  // namespace

TEST(pg_defaults, min_idle_left_at_its_default_follows_a_smaller_max) {
    const outcome o = make({.conninfo = nowhere, .max = 1});
    ASSERT_TRUE(o.used) << o.refusal;
    EXPECT_EQ(o.used->max, 1u);
    EXPECT_EQ(o.used->min_idle, 1u);
}

TEST(pg_defaults, max_left_at_its_default_follows_a_larger_min_idle) {
    const outcome o = make({.conninfo = nowhere, .min_idle = 20});
    ASSERT_TRUE(o.used) << o.refusal;
    EXPECT_EQ(o.used->max, 20u);
    EXPECT_EQ(o.used->min_idle, 20u);
}

TEST(pg_defaults, min_idle_and_max_both_set_and_contradicting_are_refused) {
    EXPECT_EQ(make({.conninfo = nowhere, .max = 1, .min_idle = 2}).refusal,
              "respool::pg::pool: min_idle (2) must not exceed max (1)");
    EXPECT_EQ(make({.conninfo = nowhere, .max = 16, .min_idle = 17}).refusal,
              "respool::pg::pool: min_idle (17) must not exceed max (16)")
        << "a value equal to the default, written, counts as set";
}

TEST(pg_defaults, settings_that_agree_are_left_as_they_are) {
    const outcome o = make({.conninfo = nowhere});
    ASSERT_TRUE(o.used) << o.refusal;
    EXPECT_EQ(o.used->max, 16u);
    EXPECT_EQ(o.used->min_idle, 2u);
    EXPECT_EQ(o.used->connect_retry_initial, 100ms);
    EXPECT_EQ(o.used->connect_retry_max, 10s);
}

TEST(pg_defaults, the_connect_back_off_pair_follows_whichever_was_set) {
    const outcome small_max = make({.conninfo = nowhere, .connect_retry_max = 50ms});
    ASSERT_TRUE(small_max.used) << small_max.refusal;
    EXPECT_EQ(small_max.used->connect_retry_initial, 50ms);
    const outcome large_initial = make({.conninfo = nowhere, .connect_retry_initial = 30s});
    ASSERT_TRUE(large_initial.used) << large_initial.refusal;
    EXPECT_EQ(large_initial.used->connect_retry_max, 30s);
    EXPECT_EQ(make({.conninfo = nowhere, .connect_retry_initial = 2s, .connect_retry_max = 1s}).refusal,
              "respool::pg::pool: connect_retry_max must not be below connect_retry_initial");
}

TEST(pg_defaults, the_budget_lease_and_heartbeat_follow_whichever_was_set) {
    const outcome slow =
        make({.conninfo = nowhere, .budget = pg::budget_config{.schema = "ops", .heartbeat = 5s}});
    ASSERT_TRUE(slow.used) << slow.refusal;
    EXPECT_EQ(slow.used->budget->lease, 15s);
    const outcome short_lease =
        make({.conninfo = nowhere, .budget = pg::budget_config{.schema = "ops", .lease = 600ms}});
    ASSERT_TRUE(short_lease.used) << short_lease.refusal;
    EXPECT_EQ(short_lease.used->budget->heartbeat, 200ms);
    EXPECT_EQ(make({.conninfo = nowhere,
                    .budget = pg::budget_config{.schema = "ops", .heartbeat = 5s, .lease = 3s}})
                  .refusal,
              "respool::pg::pool: budget: lease must exceed heartbeat");
}

TEST(pg_defaults, a_cluster_s_host_pools_follow_too) {
    boost::asio::io_context io;
    pg::cluster_config cfg;
    cfg.pool.conninfo = "host=127.0.0.1,127.0.0.2 port=1,1 dbname=x connect_timeout=1";
    cfg.pool.max = 1;
    pg::cluster c(io.get_executor(), std::move(cfg));
    EXPECT_EQ(c.host_pool(0).config().min_idle, 1u);
    EXPECT_EQ(c.host_pool(1).config().max, 1u);
}
