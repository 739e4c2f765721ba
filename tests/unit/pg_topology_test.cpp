// A cluster's topology (src/pg/topology.hpp) without a server, a socket or a clock: roles from probe
// readings, fencing by timeline, split brain, the write permission that reports and errors take away,
// replication lag, read routing, the probe schedule and the role changes it reports. Time points are
// made up; nothing sleeps.
#include "topology.hpp"

#include <respool/pg/roles.hpp>

#include <gtest/gtest.h>

#include <array>
#include <random>
#include <stdexcept>

using namespace std::chrono_literals;
using respool::pg::commit_token;
using respool::pg::host_role;
using respool::pg::route;
using namespace respool::pg::detail;

namespace {

using time_point = topology_clock::time_point;

const time_point t0 = time_point{} + 1h;  // any fixed instant: the topology has no clock of its own

constexpr std::size_t db1 = 0, db2 = 1, db3 = 2;

probe_reading primary_reading(time_point sent, std::uint32_t timeline, std::uint64_t insert_lsn,
                              bool read_only = false) {
    probe_reading r;
    r.sent = sent;
    r.received = sent + 1ms;
    r.in_recovery = false;
    r.read_only = read_only;
    r.timeline = timeline;
    r.lsn = insert_lsn;
    return r;
}

probe_reading standby_reading(time_point sent, std::uint64_t replay_lsn,
                              std::optional<std::chrono::microseconds> replay_age = std::nullopt) {
    probe_reading r;
    r.sent = sent;
    r.received = sent + 1ms;
    r.in_recovery = true;
    r.read_only = true;
    r.lsn = replay_lsn;
    r.replay_age = replay_age;
    return r;
}

topology three_hosts(topology::settings s = {}) {
    return topology({"db1:5432", "db2:5433", "db3:5434"}, s);
}

const std::array<std::size_t, 3> no_load{0, 0, 0};

// The reasons of the changes since the last call, one line each.
std::vector<std::string> reasons(topology& t) {
    std::vector<std::string> out;
    for (const role_change& c : t.take_changes()) out.push_back(c.reason);
    return out;
}

// db1 primary on timeline 1 (insert LSN 1000), db2 and db3 standbys that replayed it, at t0.
topology healthy_cluster(topology::settings s = {}) {
    topology t = three_hosts(s);
    t.probe_succeeded(db1, primary_reading(t0, 1, 1000));
    t.probe_succeeded(db2, standby_reading(t0, 1000, 10ms));
    t.probe_succeeded(db3, standby_reading(t0, 1000, 10ms));
    t.take_changes();
    return t;
}

}  // namespace

// ---------------------------------------------------------------- vocabulary text forms

TEST(pg_roles, routes_and_roles_have_their_names) {
    EXPECT_EQ(to_string(route::primary), "primary");
    EXPECT_EQ(to_string(route::standby), "standby");
    EXPECT_EQ(to_string(route::prefer_standby), "prefer-standby");
    EXPECT_EQ(to_string(host_role::unknown), "unknown");
    EXPECT_EQ(to_string(host_role::primary), "primary");
    EXPECT_EQ(to_string(host_role::standby), "standby");
    EXPECT_EQ(to_string(host_role::fenced), "fenced");
    EXPECT_EQ(to_string(host_role::down), "down");
    EXPECT_EQ(respool::pg::route_from_string("primary"), route::primary);
    EXPECT_EQ(respool::pg::route_from_string("standby"), route::standby);
    EXPECT_EQ(respool::pg::route_from_string("prefer-standby"), route::prefer_standby);
    EXPECT_EQ(respool::pg::route_from_string("prefer_standby"), route::prefer_standby);
    for (const char* bad : {"", "Primary", "any", "prefer standby", "standby ", "read-write"})
        EXPECT_EQ(respool::pg::route_from_string(bad), std::nullopt) << bad;
}

TEST(pg_roles, commit_tokens_read_and_print_as_postgresql_writes_an_lsn) {
    EXPECT_EQ(to_string(commit_token{0x16B374D848}), "16/B374D848");
    EXPECT_EQ(to_string(commit_token{0}), "0/0");
    EXPECT_EQ(to_string(commit_token{0xFFFFFFFFFFFFFFFF}), "FFFFFFFF/FFFFFFFF");
    EXPECT_EQ(to_string(commit_token{0x100000000}), "1/0");
    EXPECT_EQ(respool::pg::commit_token_from_string("16/B374D848"), commit_token{0x16B374D848});
    EXPECT_EQ(respool::pg::commit_token_from_string("16/b374d848"), commit_token{0x16B374D848});
    EXPECT_EQ(respool::pg::commit_token_from_string("FFFFFFFF/FFFFFFFF"), commit_token{0xFFFFFFFFFFFFFFFF});
    EXPECT_EQ(respool::pg::commit_token_from_string("0/0"), commit_token{0});
    for (const char* bad : {"", "16", "16/", "/1", "G/1", "1/G", "123456789/0", "0/123456789", "000000001/0",
                            "1/2/3", "-1/2", "+1/2", " 1/2", "1/2 ", "0x1/2", "1//2"})
        EXPECT_EQ(respool::pg::commit_token_from_string(bad), std::nullopt) << bad;
}

// ---------------------------------------------------------------- construction and bad indexes

TEST(pg_topology, bad_settings_and_host_indexes_are_refused_with_what_was_wrong) {
    EXPECT_THROW(topology({}, {}), std::invalid_argument);
    topology::settings zero_interval;
    zero_interval.interval = 0s;
    EXPECT_THROW(topology({"db1:5432"}, zero_interval), std::invalid_argument);
    topology::settings zero_fast;
    zero_fast.no_primary_interval = -1ms;
    EXPECT_THROW(topology({"db1:5432"}, zero_fast), std::invalid_argument);
    topology::settings negative_lag;
    negative_lag.max_replica_lag = -1s;
    EXPECT_THROW(topology({"db1:5432"}, negative_lag), std::invalid_argument);

    topology t = three_hosts();
    EXPECT_EQ(t.size(), 3u);
    try {
        t.probe_failed(3, t0, "x");
        FAIL() << "host 3 of 3 accepted";
    } catch (const std::out_of_range& e) {
        EXPECT_NE(std::string(e.what()).find("host index 3"), std::string::npos) << e.what();
    }
    EXPECT_THROW(t.session_reported(7, true, true, t0), std::out_of_range);
    EXPECT_THROW((void)t.view(3), std::out_of_range);
    EXPECT_EQ(t.next_probe(3), time_point::max());
    EXPECT_TRUE(t.take_changes().empty());  // nothing was applied
}

// ---------------------------------------------------------------- roles from readings

TEST(pg_topology, first_readings_give_each_host_its_role) {
    topology t = three_hosts();
    EXPECT_EQ(t.primary(), std::nullopt);
    EXPECT_EQ(t.no_primary_reason(),
              "db1:5432 not probed yet; db2:5433 not probed yet; db3:5434 not probed yet");
    EXPECT_EQ(t.view(db1).role, host_role::unknown);

    t.probe_succeeded(db2, standby_reading(t0, 900, 10ms));
    EXPECT_EQ(t.primary(), std::nullopt);
    t.probe_succeeded(db1, primary_reading(t0, 1, 1000));
    t.probe_succeeded(db3, standby_reading(t0, 1000, 10ms));

    EXPECT_EQ(t.primary(), db1);
    EXPECT_EQ(t.no_primary_reason(), "");
    const host_view v1 = t.view(db1);
    EXPECT_EQ(v1.role, host_role::primary);
    EXPECT_TRUE(v1.writable);
    EXPECT_FALSE(v1.suspect);
    EXPECT_EQ(v1.timeline, 1u);
    EXPECT_EQ(v1.lsn, 1000u);
    EXPECT_EQ(v1.last_probe, t0);
    EXPECT_EQ(v1.role_since, t0 + 1ms);  // when the answer arrived
    EXPECT_EQ(t.view(db2).role, host_role::standby);
    EXPECT_FALSE(t.view(db2).writable);
    EXPECT_EQ(t.view(db3).role, host_role::standby);

    const std::vector<role_change> changes = t.take_changes();
    ASSERT_EQ(changes.size(), 3u);
    EXPECT_EQ(changes[0].host, db2);
    EXPECT_EQ(changes[0].from, host_role::unknown);
    EXPECT_EQ(changes[0].to, host_role::standby);
    EXPECT_EQ(changes[0].reason, "db2:5433 is a standby");
    EXPECT_EQ(changes[1].host, db1);
    EXPECT_EQ(changes[1].to, host_role::primary);
    EXPECT_EQ(changes[1].reason, "db1:5432 is primary (timeline 1)");
    EXPECT_EQ(changes[1].at, t0 + 1ms);
    EXPECT_EQ(changes[2].host, db3);
    EXPECT_TRUE(t.take_changes().empty());
}

TEST(pg_topology, a_repeated_reading_changes_nothing) {
    topology t = healthy_cluster();
    for (int round = 1; round <= 5; ++round) {
        const time_point at = t0 + round * 500ms;
        t.probe_succeeded(db1, primary_reading(at, 1, 1000 + round));
        t.probe_succeeded(db2, standby_reading(at, 1000 + round, 5ms));
        t.probe_succeeded(db3, standby_reading(at, 1000, 5ms));
    }
    EXPECT_TRUE(t.take_changes().empty());
    EXPECT_EQ(t.view(db1).role_since, t0 + 1ms);  // the role did not change
    t.probe_failed(db3, t0 + 3s, "timeout");
    t.probe_failed(db3, t0 + 4s, "timeout");
    EXPECT_EQ(reasons(t), std::vector<std::string>{"db3:5434 down: timeout"});
}

TEST(pg_topology, a_read_only_primary_takes_no_writes) {
    topology t = three_hosts();
    t.probe_succeeded(db1, primary_reading(t0, 1, 1000, /*read_only=*/true));
    EXPECT_EQ(t.view(db1).role, host_role::primary);
    EXPECT_FALSE(t.view(db1).writable);
    EXPECT_EQ(t.primary(), std::nullopt);
    EXPECT_EQ(t.no_primary_reason(),
              "db1:5432 primary but not writable: default_transaction_read_only is on; db2:5433 not probed "
              "yet; db3:5434 not probed yet");
    EXPECT_EQ(reasons(t),
              std::vector<std::string>{
                  "db1:5432 is primary (timeline 1), not writable: default_transaction_read_only is on"});
    t.probe_succeeded(db1, primary_reading(t0 + 1s, 1, 1000, false));
    EXPECT_EQ(t.primary(), db1);
    EXPECT_EQ(reasons(t),
              std::vector<std::string>{"db1:5432 writable: a probe confirmed it as primary (timeline 1)"});
    t.probe_succeeded(db1, primary_reading(t0 + 2s, 1, 1000, true));
    EXPECT_EQ(reasons(t),
              std::vector<std::string>{"db1:5432 not writable: default_transaction_read_only is on"});
}

// ---------------------------------------------------------------- failover and fencing

TEST(pg_topology, failover_a_standby_promoted_while_the_old_primary_is_down) {
    topology t = healthy_cluster();
    t.probe_failed(db1, t0 + 1s, "connection refused");
    EXPECT_EQ(t.primary(), std::nullopt);
    EXPECT_EQ(t.view(db1).role, host_role::down);
    EXPECT_FALSE(t.view(db1).writable);
    EXPECT_EQ(t.view(db1).last_failure, "connection refused");
    EXPECT_EQ(t.no_primary_reason(), "db1:5432 down: connection refused; db2:5433 standby; db3:5434 standby");
    const std::vector<role_change> down = t.take_changes();
    ASSERT_EQ(down.size(), 1u);
    EXPECT_EQ(down[0].from, host_role::primary);
    EXPECT_EQ(down[0].to, host_role::down);
    EXPECT_EQ(down[0].reason, "db1:5432 down: connection refused");
    EXPECT_EQ(down[0].at, t0 + 1s);

    t.probe_succeeded(db2, primary_reading(t0 + 1100ms, 2, 1200));
    EXPECT_EQ(t.primary(), db2);
    EXPECT_EQ(t.pick(route::primary, t0 + 1200ms, 0, no_load, 0), db2);
    EXPECT_EQ(reasons(t), std::vector<std::string>{"db2:5433 promoted to primary (timeline 2)"});

    // The old primary comes back still claiming timeline 1: its writes would be rewound.
    t.probe_succeeded(db1, primary_reading(t0 + 2s, 1, 1500));
    EXPECT_EQ(t.view(db1).role, host_role::fenced);
    EXPECT_EQ(t.primary(), db2);
    EXPECT_EQ(reasons(t), std::vector<std::string>{
                              "db1:5432 fenced: it claims primary on timeline 1, db2:5433 is on timeline 2"});
    EXPECT_EQ(t.view(db1).last_failure, "");
}

TEST(pg_topology, split_brain_the_old_primary_still_running_is_fenced_by_the_new_timeline) {
    topology t = healthy_cluster();
    t.probe_succeeded(db2, primary_reading(t0 + 1s, 2, 1100));
    EXPECT_EQ(t.primary(), db2);
    EXPECT_EQ(t.view(db1).role, host_role::fenced);
    EXPECT_FALSE(t.view(db1).writable);
    const std::vector<role_change> changes = t.take_changes();
    ASSERT_EQ(changes.size(), 2u);
    EXPECT_EQ(changes[0].reason, "db2:5433 promoted to primary (timeline 2)");  // the cause first
    EXPECT_EQ(changes[1].host, db1);
    EXPECT_EQ(changes[1].from, host_role::primary);
    EXPECT_EQ(changes[1].to, host_role::fenced);
    EXPECT_EQ(changes[1].reason,
              "db1:5432 fenced: it claims primary on timeline 1, db2:5433 is on timeline 2");

    // Still claiming: still fenced, however often it says so; nothing reads from it either.
    t.probe_succeeded(db1, primary_reading(t0 + 2s, 1, 5000));
    EXPECT_EQ(t.view(db1).role, host_role::fenced);
    EXPECT_TRUE(t.take_changes().empty());
    for (const route r : {route::primary, route::standby, route::prefer_standby})
        EXPECT_NE(t.pick(r, t0 + 2s, 0, std::array<std::size_t, 3>{0, 9, 9}, 0), db1);

    // Down and back, still on timeline 1: the fence holds, also while the new primary is down.
    t.probe_failed(db2, t0 + 3s, "connection refused");
    t.probe_failed(db1, t0 + 3s, "timeout");
    t.probe_succeeded(db1, primary_reading(t0 + 4s, 1, 5000));
    EXPECT_EQ(t.view(db1).role, host_role::fenced);
    EXPECT_EQ(t.primary(), std::nullopt);
    EXPECT_EQ(t.no_primary_reason(),
              "db1:5432 fenced: it claims primary on timeline 1, db2:5433 is on timeline 2; db2:5433 down: "
              "connection refused; db3:5434 standby");
}

TEST(pg_topology, a_fenced_host_rejoins_as_a_standby) {
    topology t = healthy_cluster();
    t.probe_succeeded(db2, primary_reading(t0 + 1s, 2, 1100));
    t.take_changes();
    t.probe_succeeded(db1, standby_reading(t0 + 2s, 1100, 1ms));
    EXPECT_EQ(t.view(db1).role, host_role::standby);
    EXPECT_EQ(t.view(db1).role_since, t0 + 2s + 1ms);
    EXPECT_EQ(reasons(t), std::vector<std::string>{"db1:5432 rejoined as a standby (it is in recovery)"});
    EXPECT_EQ(t.pick(route::standby, t0 + 2s, 0, std::array<std::size_t, 3>{0, 0, 5}, 0), db1);
}

TEST(pg_topology, a_fence_holds_while_the_newer_history_may_live_and_lifts_when_its_host_gave_it_up) {
    topology t = healthy_cluster();
    t.probe_succeeded(db2, primary_reading(t0 + 1s, 2, 1100));  // db1 fenced
    t.take_changes();
    // The newer primary unreachable (a partition): it may still be writing on timeline 2.
    t.probe_failed(db2, t0 + 2s, "timeout");
    t.probe_succeeded(db1, primary_reading(t0 + 2s, 1, 1200));
    EXPECT_EQ(t.view(db1).role, host_role::fenced);
    // Back in recovery but receiving nothing yet: which history it follows is not known.
    t.probe_succeeded(db2, standby_reading(t0 + 3s, 1100));
    EXPECT_EQ(t.view(db1).role, host_role::fenced);
    EXPECT_EQ(t.primary(), std::nullopt);
    t.take_changes();
    // Rewound onto db1's timeline by its operator: nobody is on timeline 2 any more. (Seen by a role
    // that may not read pg_stat_wal_receiver: the timeline of its last restartpoint, copied from db1
    // by the rewind.)
    probe_reading follows_db1 = standby_reading(t0 + 4s, 1200, 1ms);
    follows_db1.timeline = 1;
    follows_db1.timeline_exact = false;
    t.probe_succeeded(db2, follows_db1);
    EXPECT_EQ(t.primary(), db1);
    EXPECT_EQ(t.view(db2).role, host_role::standby);
    EXPECT_EQ(reasons(t),
              std::vector<std::string>{
                  "db1:5432 is primary again (timeline 1): no host is on a newer timeline any more"});
}

TEST(pg_topology, a_standby_whose_timeline_is_only_its_restartpoints_still_takes_reads) {
    // After a failover a standby follows the new primary on timeline 2, but a role without
    // pg_read_all_stats sees only its last restartpoint's timeline (1) until the next restartpoint:
    // that says nothing about the history it streams, so it does not cost it its reads.
    topology t = healthy_cluster();
    t.probe_failed(db1, t0 + 1s, "connection refused");
    t.probe_succeeded(db2, primary_reading(t0 + 2s, 2, 1100));
    probe_reading r = standby_reading(t0 + 2s, 1100, 1ms);
    r.timeline = 1;
    r.timeline_exact = false;
    t.probe_succeeded(db3, r);
    EXPECT_EQ(t.primary(), db2);
    EXPECT_EQ(t.pick(route::standby, t0 + 2s, 0, no_load, 0), db3);
    // The receiver's own timeline, when it can be read, does count.
    r.timeline_exact = true;
    r.sent = t0 + 3s;
    r.received = t0 + 3s + 1ms;
    t.probe_succeeded(db3, r);
    EXPECT_EQ(t.pick(route::standby, t0 + 3s, 0, no_load, 0), std::nullopt);
}

TEST(pg_topology, a_host_promoted_past_every_timeline_seen_is_primary_even_after_being_fenced) {
    topology t = healthy_cluster();
    t.probe_succeeded(db2, primary_reading(t0 + 1s, 2, 1100));  // db1 fenced
    t.take_changes();
    // Rewound and promoted again between two probes: timeline 3 is the newest history.
    t.probe_succeeded(db1, primary_reading(t0 + 2s, 3, 1300));
    EXPECT_EQ(t.primary(), db1);
    EXPECT_EQ(t.view(db2).role, host_role::fenced);
    EXPECT_EQ(reasons(t),
              (std::vector<std::string>{
                  "db1:5432 promoted to primary (timeline 3)",
                  "db2:5433 fenced: it claims primary on timeline 2, db1:5432 is on timeline 3"}));
}

TEST(pg_topology, two_claimants_on_the_same_timeline_leave_no_primary_until_one_stops_claiming) {
    topology t = three_hosts();
    t.probe_succeeded(db1, primary_reading(t0, 3, 1000));
    t.take_changes();
    t.probe_succeeded(db3, primary_reading(t0 + 10ms, 3, 1000));
    EXPECT_EQ(t.primary(), std::nullopt);
    EXPECT_FALSE(t.view(db1).writable);
    EXPECT_FALSE(t.view(db3).writable);
    EXPECT_EQ(t.view(db1).role, host_role::primary);  // both claim it; neither takes writes
    EXPECT_EQ(t.no_primary_reason(), "split brain: db1:5432 and db3:5434 both claim primary on timeline 3");
    EXPECT_EQ(reasons(t),
              (std::vector<std::string>{
                  "db3:5434 is primary (timeline 3), not writable: split brain: db1:5432 and db3:5434 "
                  "both claim primary on timeline 3",
                  "db1:5432 not writable: split brain: db1:5432 and db3:5434 both claim primary on "
                  "timeline 3"}));
    EXPECT_EQ(t.pick(route::prefer_standby, t0 + 20ms, 0, no_load, 0), std::nullopt);

    // A claimant that goes down may come back claiming: still no primary.
    t.probe_failed(db3, t0 + 100ms, "timeout");
    EXPECT_EQ(t.primary(), std::nullopt);
    EXPECT_EQ(t.no_primary_reason(), "split brain: db1:5432 and db3:5434 both claim primary on timeline 3");
    t.take_changes();

    // It rejoins as a standby: db1 is the only claimant left.
    t.probe_succeeded(db3, standby_reading(t0 + 200ms, 1000, 1ms));
    EXPECT_EQ(t.primary(), db1);
    EXPECT_EQ(reasons(t),
              (std::vector<std::string>{
                  "db3:5434 is back as a standby",
                  "db1:5432 writable: it is the only primary on the highest timeline (timeline 3)"}));
}

TEST(pg_topology, a_split_brain_ends_when_a_higher_timeline_fences_both) {
    topology t = three_hosts();
    t.probe_succeeded(db1, primary_reading(t0, 3, 1000));
    t.probe_succeeded(db2, primary_reading(t0, 3, 1000));
    t.probe_succeeded(db3, standby_reading(t0, 1000, 1ms));
    EXPECT_EQ(t.primary(), std::nullopt);
    t.take_changes();
    t.probe_succeeded(db3, primary_reading(t0 + 1s, 4, 1100));
    EXPECT_EQ(t.primary(), db3);
    EXPECT_EQ(t.view(db1).role, host_role::fenced);
    EXPECT_EQ(t.view(db2).role, host_role::fenced);
    EXPECT_EQ(t.take_changes().size(), 3u);
}

// ---------------------------------------------------------------- session reports and errors

TEST(pg_topology, a_primary_reported_in_hot_standby_loses_its_writes_at_once_and_is_probed_now) {
    topology t = healthy_cluster();
    const time_point now = t0 + 300ms;
    EXPECT_GT(t.next_probe(db1), now);
    t.session_reported(db1, /*in_hot_standby=*/true, /*read_only=*/true, now);
    EXPECT_EQ(t.primary(), std::nullopt);
    EXPECT_TRUE(t.view(db1).suspect);
    EXPECT_EQ(t.view(db1).role, host_role::primary);  // only a probe says what it is now
    EXPECT_LE(t.next_probe(db1), now);
    EXPECT_EQ(t.no_primary_reason(),
              "db1:5432 primary but not writable: a session reported hot standby; db2:5433 standby; db3:5434 "
              "standby");
    const std::vector<role_change> changes = t.take_changes();
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].from, host_role::primary);
    EXPECT_EQ(changes[0].to, host_role::primary);
    EXPECT_EQ(changes[0].reason, "db1:5432 not writable: a session reported hot standby");
    EXPECT_EQ(changes[0].at, now);

    // The same report again: no new change.
    t.session_reported(db1, true, true, now + 1ms);
    EXPECT_TRUE(t.take_changes().empty());

    // It was demoted: the probe says so.
    t.probe_succeeded(db1, standby_reading(now + 5ms, 1000, 1ms));
    EXPECT_EQ(t.view(db1).role, host_role::standby);
    EXPECT_FALSE(t.view(db1).suspect);
    EXPECT_EQ(reasons(t), std::vector<std::string>{"db1:5432 demoted: it is in recovery (a standby)"});
}

TEST(pg_topology, only_a_probe_sent_after_the_suspicion_gives_the_writes_back) {
    topology t = healthy_cluster();
    // A probe is in flight (sent at +1s) when a session reports read-only (+1.01s).
    t.session_reported(db1, false, true, t0 + 1010ms);
    EXPECT_EQ(reasons(t), std::vector<std::string>{"db1:5432 not writable: a session reported read-only"});
    t.probe_succeeded(db1, primary_reading(t0 + 1s, 1, 1100));  // answered from before the report
    EXPECT_EQ(t.primary(), std::nullopt);
    EXPECT_TRUE(t.view(db1).suspect);
    EXPECT_LE(t.next_probe(db1), t0 + 1020ms);
    t.probe_succeeded(db1, primary_reading(t0 + 1020ms, 1, 1100));
    EXPECT_EQ(t.primary(), db1);
    EXPECT_FALSE(t.view(db1).suspect);
    EXPECT_GT(t.next_probe(db1), t0 + 1020ms);
    EXPECT_EQ(reasons(t),
              std::vector<std::string>{"db1:5432 writable: a probe confirmed it as primary (timeline 1)"});
}

TEST(pg_topology, a_refused_write_or_a_lost_connection_makes_the_primary_suspect) {
    topology t = healthy_cluster();
    t.write_refused(db1, t0 + 100ms);
    EXPECT_EQ(t.primary(), std::nullopt);
    EXPECT_LE(t.next_probe(db1), t0 + 100ms);
    EXPECT_EQ(reasons(t),
              std::vector<std::string>{"db1:5432 not writable: a write was refused (read-only transaction)"});
    t.probe_succeeded(db1, primary_reading(t0 + 110ms, 1, 1000));
    EXPECT_EQ(t.primary(), db1);
    t.take_changes();

    t.connection_lost(db1, t0 + 200ms);
    EXPECT_EQ(t.primary(), std::nullopt);
    EXPECT_TRUE(t.view(db1).suspect);
    EXPECT_LE(t.next_probe(db1), t0 + 200ms);
    EXPECT_EQ(reasons(t), std::vector<std::string>{"db1:5432 not writable: a connection to it was lost"});
    t.probe_failed(db1, t0 + 210ms, "connection refused");
    EXPECT_EQ(reasons(t), std::vector<std::string>{"db1:5432 down: connection refused"});
}

TEST(pg_topology, connections_failing_on_a_host_known_down_do_not_hurry_its_probes) {
    topology t = healthy_cluster();
    t.probe_failed(db2, t0 + 1s, "connection refused");
    t.take_changes();
    // The pool's reconnects keep failing there: each says nothing the failed probe did not.
    for (int i = 1; i <= 3; ++i) {
        t.connection_lost(db2, t0 + 1s + i * 10ms);
        t.write_refused(db2, t0 + 1s + i * 10ms);
    }
    EXPECT_FALSE(t.view(db2).suspect);
    EXPECT_EQ(t.next_probe(db2), t0 + 1500ms);
    EXPECT_TRUE(t.take_changes().empty());
}

TEST(pg_topology, a_standby_that_lost_a_connection_takes_no_reads_until_a_probe) {
    topology t = healthy_cluster();
    const std::array<std::size_t, 3> load{0, 0, 9};
    EXPECT_EQ(t.pick(route::standby, t0 + 100ms, 0, load, 0), db2);
    t.connection_lost(db2, t0 + 100ms);
    EXPECT_LE(t.next_probe(db2), t0 + 100ms);
    EXPECT_TRUE(t.take_changes().empty());  // a standby has no write permission to lose
    EXPECT_EQ(t.pick(route::standby, t0 + 100ms, 0, load, 0), db3);
    t.probe_succeeded(db2, standby_reading(t0 + 110ms, 1000, 1ms));
    EXPECT_EQ(t.pick(route::standby, t0 + 120ms, 0, load, 0), db2);
}

TEST(pg_topology, a_standby_reporting_it_left_hot_standby_is_probed_now_and_is_not_primary_before) {
    topology t = healthy_cluster();
    t.probe_failed(db1, t0 + 1s, "connection refused");
    t.take_changes();
    t.session_reported(db2, /*in_hot_standby=*/false, /*read_only=*/false, t0 + 1050ms);
    EXPECT_EQ(t.view(db2).role, host_role::standby);
    EXPECT_EQ(t.primary(), std::nullopt);
    EXPECT_LE(t.next_probe(db2), t0 + 1050ms);
    EXPECT_TRUE(t.take_changes().empty());
    t.probe_succeeded(db2, primary_reading(t0 + 1060ms, 2, 1100));
    EXPECT_EQ(t.primary(), db2);
    EXPECT_EQ(reasons(t), std::vector<std::string>{"db2:5433 promoted to primary (timeline 2)"});
}

TEST(pg_topology, reports_that_agree_with_what_a_probe_said_ask_for_nothing) {
    topology t = three_hosts();
    t.probe_succeeded(db1, primary_reading(t0, 1, 1000, /*read_only=*/true));
    t.probe_succeeded(db2, standby_reading(t0, 1000, 1ms));
    t.take_changes();
    // A read-only primary's sessions say read-only at every lease end: no probe storm.
    t.session_reported(db1, false, true, t0 + 10ms);
    t.session_reported(db2, true, true, t0 + 10ms);
    EXPECT_GT(t.next_probe(db1), t0 + 10ms);
    EXPECT_GT(t.next_probe(db2), t0 + 10ms);
    EXPECT_FALSE(t.view(db1).suspect);
    // A session says it is no longer read-only: probe now, but no writes before the probe.
    t.session_reported(db1, false, false, t0 + 20ms);
    EXPECT_LE(t.next_probe(db1), t0 + 20ms);
    EXPECT_EQ(t.primary(), std::nullopt);
    EXPECT_TRUE(t.take_changes().empty());
}

// ---------------------------------------------------------------- replication lag

TEST(pg_topology, a_standby_that_replayed_the_primarys_position_is_fresh_even_when_the_primary_is_idle) {
    topology t = three_hosts();
    t.probe_succeeded(db1, primary_reading(t0, 1, 1000));
    // Nothing committed for a minute: the replay age alone would say a minute behind.
    t.probe_succeeded(db2, standby_reading(t0 + 5ms, 1000, 60s));
    EXPECT_EQ(t.view(db2).fresh_as_of, t0);
    EXPECT_EQ(t.pick(route::standby, t0 + 900ms, 0, no_load, 0), db2);
    // A later primary sample at the same position moves the standby's freshness along.
    t.probe_succeeded(db1, primary_reading(t0 + 500ms, 1, 1000));
    EXPECT_EQ(t.view(db2).fresh_as_of, t0 + 500ms);
    EXPECT_EQ(t.pick(route::standby, t0 + 1400ms, 0, no_load, 0), db2);
}

TEST(pg_topology, a_lagging_standby_takes_no_reads_within_the_lag_bound) {
    topology t = three_hosts();  // max_replica_lag 1 s
    t.probe_succeeded(db1, primary_reading(t0, 1, 5000));
    t.probe_succeeded(db2, standby_reading(t0 + 5ms, 4000, 3s));
    EXPECT_EQ(t.view(db2).fresh_as_of, t0 + 5ms - 3s);
    EXPECT_EQ(t.pick(route::standby, t0 + 10ms, 0, no_load, 0), std::nullopt);
    EXPECT_EQ(t.pick(route::prefer_standby, t0 + 10ms, 0, no_load, 0), db1);
    // Catching up: the next probe has it replay past the primary's position.
    t.probe_succeeded(db2, standby_reading(t0 + 500ms, 5000, 2s));
    EXPECT_EQ(t.view(db2).fresh_as_of, t0);
    EXPECT_EQ(t.pick(route::standby, t0 + 510ms, 0, no_load, 0), db2);
}

TEST(pg_topology, a_standby_not_probed_for_longer_than_the_lag_bound_takes_no_reads) {
    topology t = healthy_cluster();
    EXPECT_EQ(t.view(db2).fresh_as_of, t0);
    EXPECT_EQ(t.pick(route::standby, t0 + 1s, 0, no_load, 0), db2);
    EXPECT_EQ(t.pick(route::standby, t0 + 1001ms, 0, no_load, 0), std::nullopt);
    EXPECT_EQ(t.pick(route::prefer_standby, t0 + 5s, 0, no_load, 0), db1);  // the primary is always fresh
}

TEST(pg_topology, a_standby_without_any_freshness_evidence_takes_no_reads) {
    topology t = three_hosts();
    t.probe_succeeded(db2, standby_reading(t0, 1000));  // nothing replayed yet, no primary sample
    EXPECT_EQ(t.view(db2).fresh_as_of, std::nullopt);
    EXPECT_EQ(t.pick(route::standby, t0, 0, no_load, 0), std::nullopt);
}

TEST(pg_topology, after_a_failover_only_the_new_primarys_positions_make_a_standby_fresh) {
    topology t = three_hosts();
    t.probe_succeeded(db1, primary_reading(t0, 1, 1000));
    t.probe_failed(db1, t0 + 500ms, "connection refused");
    t.probe_succeeded(db2, primary_reading(t0 + 600ms, 2, 6000));
    // db3 replayed db1's position 1000, not yet any of db2's: no evidence against the new primary.
    t.probe_succeeded(db3, standby_reading(t0 + 700ms, 1000));
    EXPECT_EQ(t.view(db3).fresh_as_of, std::nullopt);
    EXPECT_EQ(t.pick(route::standby, t0 + 710ms, 0, no_load, 0), std::nullopt);
    t.probe_succeeded(db3, standby_reading(t0 + 800ms, 6000));
    EXPECT_EQ(t.view(db3).fresh_as_of, t0 + 600ms);
    EXPECT_EQ(t.pick(route::standby, t0 + 810ms, 0, no_load, 0), db3);
}

TEST(pg_topology, a_standby_still_on_the_old_timeline_takes_no_reads) {
    topology t = three_hosts();
    t.probe_succeeded(db1, primary_reading(t0, 1, 1000));
    probe_reading on_1 = standby_reading(t0, 1000, 1ms);
    on_1.timeline = 1;
    t.probe_succeeded(db3, on_1);
    EXPECT_EQ(t.pick(route::standby, t0 + 10ms, 0, no_load, 0), db3);
    t.probe_succeeded(db2, primary_reading(t0 + 100ms, 2, 1000));  // promoted at db1's last position
    // db3 replayed up to the same position, but of timeline 1: db1's tail, not db2's commits.
    on_1.sent = t0 + 200ms;
    on_1.received = t0 + 201ms;
    on_1.lsn = 1200;
    t.probe_succeeded(db3, on_1);
    EXPECT_EQ(t.pick(route::standby, t0 + 210ms, 1100, no_load, 0), std::nullopt);
    EXPECT_EQ(t.pick(route::prefer_standby, t0 + 210ms, 0, no_load, 0), db2);
    probe_reading on_2 = standby_reading(t0 + 300ms, 1200, 1ms);
    on_2.timeline = 2;
    t.probe_succeeded(db3, on_2);
    EXPECT_EQ(t.pick(route::standby, t0 + 310ms, 1100, no_load, 0), db3);
}

TEST(pg_topology, read_your_writes_a_standby_behind_the_commit_is_skipped_and_the_primary_always_qualifies) {
    topology t = three_hosts();
    t.probe_succeeded(db1, primary_reading(t0, 1, 2000));
    t.probe_succeeded(db2, standby_reading(t0, 2000, 1ms));
    t.probe_succeeded(db3, standby_reading(t0, 1500, 1ms));
    const std::array<std::size_t, 3> load{0, 5, 0};  // db3 would win on load
    const time_point now = t0 + 10ms;
    EXPECT_EQ(t.pick(route::standby, now, 1500, load, 0), db3);
    EXPECT_EQ(t.pick(route::standby, now, 1501, load, 0), db2);
    EXPECT_EQ(t.pick(route::standby, now, 2001, load, 0), std::nullopt);
    EXPECT_EQ(t.pick(route::prefer_standby, now, 2001, load, 0), db1);
    EXPECT_EQ(t.pick(route::primary, now, ~std::uint64_t{0}, load, 0), db1);
}

// ---------------------------------------------------------------- pick

TEST(pg_topology, reads_go_to_the_least_loaded_eligible_standby) {
    topology t = healthy_cluster();
    const time_point now = t0 + 10ms;
    EXPECT_EQ(t.pick(route::standby, now, 0, std::array<std::size_t, 3>{0, 5, 2}, 0), db3);
    EXPECT_EQ(t.pick(route::standby, now, 0, std::array<std::size_t, 3>{0, 1, 2}, 7), db2);
    EXPECT_EQ(t.pick(route::prefer_standby, now, 0, std::array<std::size_t, 3>{0, 5, 2}, 0), db3);
    // The primary is never a standby read, however idle.
    EXPECT_EQ(t.pick(route::standby, now, 0, std::array<std::size_t, 3>{0, 50, 50}, 0), db2);
    EXPECT_EQ(t.pick(route::primary, now, 0, std::array<std::size_t, 3>{50, 0, 0}, 0), db1);
    // A short load span: the missing hosts count as idle.
    EXPECT_EQ(t.pick(route::standby, now, 0, std::array<std::size_t, 2>{0, 3}, 0), db3);
}

TEST(pg_topology, the_tiebreak_spreads_reads_over_equally_loaded_standbys) {
    topology t = healthy_cluster();
    const time_point now = t0 + 10ms;
    const std::array<std::size_t, 3> load{0, 3, 3};
    EXPECT_EQ(t.pick(route::standby, now, 0, load, 0), db2);
    EXPECT_EQ(t.pick(route::standby, now, 0, load, 1), db3);
    EXPECT_EQ(t.pick(route::standby, now, 0, load, 2), db2);
    EXPECT_EQ(t.pick(route::standby, now, 0, load, 0xFFFFFFFFu), db3);
}

TEST(pg_topology, prefer_standby_falls_back_to_the_primary_and_standby_to_nothing) {
    topology t = healthy_cluster();
    t.probe_failed(db2, t0 + 1s, "timeout");
    EXPECT_EQ(t.view(db2).fresh_as_of, std::nullopt);            // a host that is down holds nothing known
    t.probe_succeeded(db3, standby_reading(t0 + 1s, 900, 30s));  // lagging
    const time_point now = t0 + 1010ms;
    EXPECT_EQ(t.pick(route::standby, now, 0, no_load, 0), std::nullopt);
    EXPECT_EQ(t.pick(route::prefer_standby, now, 0, no_load, 0), db1);
    t.probe_failed(db1, t0 + 1100ms, "timeout");
    EXPECT_EQ(t.pick(route::prefer_standby, now, 0, no_load, 0), std::nullopt);
    EXPECT_EQ(t.pick(route::primary, now, 0, no_load, 0), std::nullopt);
}

// ---------------------------------------------------------------- probe schedule

TEST(pg_topology, probes_are_due_at_once_first_then_every_period_of_the_mode) {
    topology t = three_hosts();  // interval 1 s, no primary 100 ms, max lag 1 s
    EXPECT_LE(t.next_probe(db1), t0);
    t.probe_succeeded(db2, standby_reading(t0, 1000, 1ms));
    EXPECT_EQ(t.next_probe(db2), t0 + 100ms);  // no primary known yet
    EXPECT_LE(t.next_probe(db1), t0);
    t.probe_succeeded(db1, primary_reading(t0 + 10ms, 1, 1000));
    EXPECT_EQ(t.next_probe(db1), t0 + 10ms + 500ms);  // min(interval, max lag / 2)
    EXPECT_EQ(t.next_probe(db2), t0 + 500ms);
    t.probe_failed(db3, t0 + 20ms, "timeout");
    EXPECT_EQ(t.next_probe(db3), t0 + 520ms);  // down hosts are probed on the same schedule

    topology::settings wide;
    wide.max_replica_lag = 10s;
    topology w = healthy_cluster(wide);
    EXPECT_EQ(w.next_probe(db1), t0 + 1s);  // the interval when it is shorter than half the lag
    w.probe_failed(db1, t0 + 1s, "timeout");
    EXPECT_EQ(w.next_probe(db1), t0 + 1100ms);
    EXPECT_EQ(w.next_probe(db2), t0 + 100ms);  // every host probes fast while no primary is known

    topology::settings no_lag;
    no_lag.max_replica_lag = 0s;  // no standby reads within a zero lag: the interval alone
    topology z = healthy_cluster(no_lag);
    EXPECT_EQ(z.next_probe(db2), t0 + 1s);
    topology::settings tiny_lag;
    tiny_lag.max_replica_lag = topology_clock::duration(1);  // too small to halve: the interval as well
    EXPECT_EQ(healthy_cluster(tiny_lag).next_probe(db2), t0 + 1s);
}

// ---------------------------------------------------------------- random events, invariants after each

namespace {

struct property_run {
    std::mt19937_64 rng;
    topology t = three_hosts_plus_one();
    time_point now = t0;
    std::uint32_t highest_claimed = 0;
    std::uint64_t lsn = 1000;
    std::array<host_role, 4> roles{};
    std::array<bool, 4> writable{};
    std::array<std::uint32_t, 4> receiving{};  // the timeline of each host's last reading in recovery
    // The newest timeline each host is known to be on: its claim, or a timeline it receives (kept
    // while it is down or receives nothing). The primary is on the highest of them.
    std::array<std::uint32_t, 4> known{};
    const std::array<std::string, 4> names{"db1:5432", "db2:5433", "db3:5434", "db4:5435"};

    explicit property_run(std::uint64_t seed) : rng(seed) {}

    static topology three_hosts_plus_one() {
        topology::settings s;
        s.max_replica_lag = 500ms;
        return topology({"db1:5432", "db2:5433", "db3:5434", "db4:5435"}, s);
    }

    std::uint64_t below(std::uint64_t n) {
        return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng);
    }

    void random_event() {
        now += std::chrono::milliseconds(below(300));
        const std::size_t h = below(4);
        switch (below(8)) {
        case 0:
        case 1:
        case 2: {
            probe_reading r;
            r.sent = now;
            r.received = now + std::chrono::milliseconds(below(5));
            r.in_recovery = below(5) < 3;
            r.read_only = below(10) == 0;
            // Mostly the current highest timeline, sometimes a promotion past it, sometimes an old one.
            const std::uint64_t k = below(10);
            r.timeline = k < 6   ? highest_claimed
                         : k < 8 ? highest_claimed + 1
                                 : static_cast<std::uint32_t>(below(highest_claimed + 1));
            lsn += below(100);
            r.lsn = below(4) == 0 ? lsn - below(300) : lsn;
            if (r.in_recovery && below(2) == 0)
                r.timeline = static_cast<std::uint32_t>(below(highest_claimed + 1));
            if (below(3) != 0) r.replay_age = std::chrono::milliseconds(below(2000));
            if (!r.in_recovery) highest_claimed = std::max(highest_claimed, r.timeline);
            if (r.in_recovery) receiving[h] = r.timeline;
            if (!r.in_recovery || r.timeline > 0) known[h] = r.timeline;
            t.probe_succeeded(h, r);
            break;
        }
        case 3: t.probe_failed(h, now, "timeout"); break;
        case 4: t.session_reported(h, below(2) == 0, below(2) == 0, now); break;
        case 5: t.connection_lost(h, now); break;
        case 6: t.write_refused(h, now); break;
        default: break;  // time passes
        }
    }

    void check_invariants(int step) {
        SCOPED_TRACE("step " + std::to_string(step));
        std::size_t writable_hosts = 0;
        for (std::size_t i = 0; i < 4; ++i) writable_hosts += t.view(i).writable ? 1 : 0;
        ASSERT_LE(writable_hosts, 1u);
        if (const auto p = t.primary()) {
            const host_view v = t.view(*p);
            ASSERT_TRUE(v.writable);
            ASSERT_EQ(v.role, host_role::primary);
            ASSERT_EQ(v.timeline, *std::max_element(known.begin(), known.end()));
            ASSERT_TRUE(t.no_primary_reason().empty());
        } else {
            ASSERT_EQ(writable_hosts, 0u);
            ASSERT_FALSE(t.no_primary_reason().empty());
        }
        const std::array<std::size_t, 4> load{below(3), below(3), below(3), below(3)};
        for (const route r : {route::primary, route::standby, route::prefer_standby}) {
            const std::uint64_t min_lsn = below(2) == 0 ? 0 : lsn - below(200);
            const auto picked = t.pick(r, now, min_lsn, load, static_cast<std::uint32_t>(rng()));
            if (!picked) continue;
            const host_view v = t.view(*picked);
            ASSERT_NE(v.role, host_role::fenced);
            ASSERT_NE(v.role, host_role::down);
            ASSERT_FALSE(v.suspect);
            if (v.role == host_role::standby) {
                ASSERT_NE(r, route::primary);
                ASSERT_TRUE(v.fresh_as_of.has_value());
                ASSERT_LE(now - *v.fresh_as_of, 500ms);
                ASSERT_GE(v.lsn, min_lsn);
                // the least loaded of the standbys that qualify
                for (std::size_t other = 0; other < 4; ++other) {
                    const host_view o = t.view(other);
                    const bool current_history =
                        receiving[other] == 0 ||
                        receiving[other] >= *std::max_element(known.begin(), known.end());
                    if (o.role == host_role::standby && !o.suspect && current_history && o.fresh_as_of &&
                        now - *o.fresh_as_of <= 500ms && o.lsn >= min_lsn) {
                        ASSERT_LE(load[*picked], load[other]) << "host " << other;
                    }
                }
            } else {
                ASSERT_NE(r, route::standby);
                ASSERT_EQ(picked, t.primary());
            }
        }
        // Every change is one real transition from the role and write permission last reported; a
        // role change into primary says in its reason when it comes without write permission.
        for (const role_change& c : t.take_changes()) {
            ASSERT_LT(c.host, 4u);
            ASSERT_EQ(c.from, roles[c.host]) << c.reason;
            ASSERT_EQ(c.reason.rfind(names[c.host], 0), 0u) << c.reason;
            const bool says_not_writable = c.reason.find("not writable") != std::string::npos;
            if (c.from == c.to) {
                ASSERT_EQ(c.to, host_role::primary) << c.reason;  // only a write-permission change
                ASSERT_EQ(says_not_writable, writable[c.host]) << c.reason;
                writable[c.host] = !writable[c.host];
            } else {
                writable[c.host] = c.to == host_role::primary && !says_not_writable;
            }
            roles[c.host] = c.to;
        }
        for (std::size_t i = 0; i < 4; ++i) {
            const host_view v = t.view(i);
            ASSERT_EQ(roles[i], v.role) << "host " << i;
            ASSERT_EQ(writable[i], v.writable) << "host " << i;
            if (v.suspect) {
                ASSERT_LE(t.next_probe(i), now) << "host " << i;
            }
        }
    }
};

}  // namespace

TEST(pg_topology, random_events_never_break_the_invariants) {
    for (const std::uint64_t seed : {1u, 2u, 3u, 20261126u}) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        property_run run(seed);
        for (int step = 0; step < 20000; ++step) {
            run.random_event();
            run.check_invariants(step);
            if (::testing::Test::HasFatalFailure()) return;
        }
    }
}
