// The replicated test cluster itself (tests/integration/pg_replicas.sh through test::pg_replica_set),
// before pg::cluster's tests build on it: writes reach the standbys, promoting a standby while the
// primary runs gives two primaries (split brain), rejoin heals it, a crash leaves no process behind,
// an apply delay holds writes back on a standby, and a synchronous standby holds commits back.
//
// pg_replicas_async.* run against the pg_replicas fixture (node0 the primary, node1 and node2
// asynchronous standbys), pg_replicas_sync.* against pg_replicas_sync (node0 and its synchronous
// standby node1): the same binary, registered once per fixture with a GTEST_FILTER
// (tests/CMakeLists.txt). Every test starts from, and leaves, the fixture's layout: restore_layout()
// in SetUp (cheap when nothing changed) and in TearDown (also after a failure). Waits are on server
// state (wait_until), never on a guessed time.
#include "pg_replica_set.hpp"

#include <libpq-fe.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

using namespace std::chrono_literals;
using test::pg_replica_set;

namespace {

using clock_type = std::chrono::steady_clock;

std::chrono::milliseconds since(clock_type::time_point start) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - start);
}

// A process that exists and has not ended (a zombie its parent has not reaped yet has ended).
bool process_alive(int pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text;
    if (!stat || !std::getline(stat, text)) return false;
    const auto after_name = text.rfind(')');
    return after_name != std::string::npos && after_name + 2 < text.size() && text[after_name + 2] != 'Z';
}

// The timeline node i writes on (a primary only: pg_walfile_name refuses to run during recovery).
unsigned long timeline(const pg_replica_set& rs, int i) {
    return std::stoul(
        rs.query(i, "SELECT substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)").at(0).at(0).value(),
        nullptr, 16);
}

// The value of the row of `table` with id 1 on node i, std::nullopt when there is none.
std::optional<std::string> value_on(const pg_replica_set& rs, int i, const std::string& table) {
    const auto rows = rs.query(i, "SELECT v FROM " + table + " WHERE id = 1");
    if (rows.empty()) return std::nullopt;
    return rows.at(0).at(0);
}

int streaming_standbys(const pg_replica_set& rs, int primary) {
    return std::stoi(rs.query(primary, "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")
                         .at(0)
                         .at(0)
                         .value());
}

struct pq_finish {
    void operator()(PGconn* c) const { PQfinish(c); }
};
using connection = std::unique_ptr<PGconn, pq_finish>;

// A blocking libpq connection; `conninfo` carries its own connect_timeout.
connection connect(const std::string& conninfo) {
    connection c(PQconnectdb(conninfo.c_str()));
    if (!c || PQstatus(c.get()) != CONNECTION_OK)
        throw std::runtime_error("connect failed: " +
                                 std::string(c ? PQerrorMessage(c.get()) : "out of memory"));
    return c;
}

class replicas : public ::testing::Test {
protected:
    void SetUp() override {
        if (!pg_replica_set::available())
            GTEST_SKIP() << "RESPOOL_PG_REPLICAS_FILE not set: run through ctest -L cluster";
        rs.emplace();
        rs->restore_layout();
    }
    void TearDown() override {
        if (rs) rs->restore_layout();
    }
    // A fresh table on node0 with the row (1, 'first'), replayed on every standby.
    std::string fresh_table(const std::string& name) {
        rs->query(0, "DROP TABLE IF EXISTS " + name);
        rs->query(0, "CREATE TABLE " + name + " (id int PRIMARY KEY, v text)");
        rs->query(0, "INSERT INTO " + name + " VALUES (1, 'first')");
        for (int i = 1; i < rs->nodes(); ++i) rs->wait_replayed(i);
        return name;
    }
    std::optional<pg_replica_set> rs;
};

class pg_replicas_async : public replicas {};
class pg_replicas_sync : public replicas {};

TEST_F(pg_replicas_async, the_state_files_name_every_node) {
    ASSERT_EQ(rs->nodes(), 3);
    std::string ports;
    for (int i = 0; i < rs->nodes(); ++i) {
        EXPECT_GT(rs->port(i), 0);
        EXPECT_NE(rs->conninfo(i).find("port=" + std::to_string(rs->port(i))), std::string::npos);
        ports += (i ? "," : "") + std::to_string(rs->port(i));
        EXPECT_TRUE(std::ifstream(rs->log_path(i)).good()) << rs->log_path(i);
    }
    EXPECT_NE(rs->conninfo().find("port=" + ports), std::string::npos) << rs->conninfo();
    EXPECT_EQ(rs->conninfo_with_ports({rs->port(0), rs->port(1), rs->port(2)}), rs->conninfo());
    EXPECT_NE(rs->url().find("@127.0.0.1:" + std::to_string(rs->port(0)) + ",127.0.0.1:"), std::string::npos);
    // libpq's multi-host forms reach the primary, or a standby, as asked.
    const auto primary = connect(rs->conninfo() + " target_session_attrs=read-write connect_timeout=10");
    EXPECT_EQ(std::string(PQport(primary.get())), std::to_string(rs->port(0)));
    const auto standby = connect(rs->url() + "?target_session_attrs=standby&connect_timeout=10");
    EXPECT_NE(std::string(PQport(standby.get())), std::to_string(rs->port(0)));
    EXPECT_FALSE(rs->in_recovery(0));
    EXPECT_TRUE(rs->in_recovery(1));
    EXPECT_TRUE(rs->in_recovery(2));
}

TEST_F(pg_replicas_async, a_write_on_the_primary_is_read_on_every_standby) {
    const auto table = fresh_table("rig_replication");
    rs->query(0, "UPDATE " + table + " SET v = 'second' WHERE id = 1");
    rs->wait_replayed(1);
    rs->wait_replayed(2);
    EXPECT_EQ(value_on(*rs, 1, table), "second");
    EXPECT_EQ(value_on(*rs, 2, table), "second");
    EXPECT_EQ(streaming_standbys(*rs, 0), 2);
    try {
        rs->query(1, "UPDATE " + table + " SET v = 'on a standby'");
        FAIL() << "a standby takes no write";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("read-only transaction"), std::string::npos) << e.what();
    }
}

TEST_F(pg_replicas_async,
       promoting_a_standby_while_the_primary_runs_gives_two_primaries_and_rejoin_heals_it) {
    const auto table = fresh_table("rig_split_brain");
    const auto start = clock_type::now();
    rs->promote(1);
    std::cout << "promote: " << since(start).count() << " ms\n";
    // Split brain: both take writes, node1 on a new timeline.
    EXPECT_FALSE(rs->in_recovery(0));
    EXPECT_FALSE(rs->in_recovery(1));
    const auto split_timeline = timeline(*rs, 1);
    EXPECT_GT(split_timeline, timeline(*rs, 0));
    rs->query(0, "UPDATE " + table + " SET v = 'on the old primary' WHERE id = 1");
    rs->query(1, "UPDATE " + table + " SET v = 'on the new primary' WHERE id = 1");
    EXPECT_EQ(value_on(*rs, 0, table), "on the old primary");
    EXPECT_EQ(value_on(*rs, 1, table), "on the new primary");

    auto step = clock_type::now();
    rs->rejoin(0, 1);
    std::cout << "rejoin of the old primary: " << since(step).count() << " ms\n";
    EXPECT_TRUE(rs->in_recovery(0));
    EXPECT_FALSE(rs->in_recovery(1));
    EXPECT_EQ(rs->query(1, "SELECT state FROM pg_stat_replication WHERE application_name = 'node0'"),
              (std::vector<pg_replica_set::row>{{"streaming"}}));
    rs->query(1, "UPDATE " + table + " SET v = 'after the rejoin' WHERE id = 1");
    rs->wait_replayed(0, 1);
    // The old primary's write of the split brain is gone: pg_rewind took it back to node1's history.
    EXPECT_EQ(value_on(*rs, 0, table), "after the rejoin");

    step = clock_type::now();
    rs->restore_layout();
    std::cout << "restore_layout: " << since(step).count() << " ms\n";
    EXPECT_FALSE(rs->in_recovery(0));
    EXPECT_TRUE(rs->in_recovery(1));
    EXPECT_TRUE(rs->in_recovery(2));
    EXPECT_EQ(streaming_standbys(*rs, 0), 2);
    EXPECT_GT(timeline(*rs, 0), split_timeline);  // node0 promoted again: a newer timeline still
    rs->query(0, "UPDATE " + table + " SET v = 'restored' WHERE id = 1");
    rs->wait_replayed(1);
    rs->wait_replayed(2);
    EXPECT_EQ(value_on(*rs, 1, table), "restored");
    EXPECT_EQ(value_on(*rs, 2, table), "restored");
}

TEST_F(pg_replicas_async, a_crash_leaves_no_process_and_start_brings_the_node_back) {
    const auto table = fresh_table("rig_crash");
    const auto client = connect(rs->conninfo(0) + " application_name=rig_crash_client connect_timeout=10");
    const auto before = rs->processes(0);
    // The postmaster, its auxiliary processes, the two walsenders and the client's backend at least.
    ASSERT_GE(before.size(), 7u);
    const auto exits_before = rs->count_log_lines(0, "unexpected postmaster exit");
    rs->crash(0);
    for (int pid : before)
        EXPECT_FALSE(process_alive(pid)) << "process " << pid << " of node0 survived the crash";
    EXPECT_TRUE(rs->processes(0).empty());
    EXPECT_FALSE(rs->answers(0));
    // A power loss: no process had a last word. A backend that outlived its postmaster would have told
    // its client (and the log) "terminating connection due to unexpected postmaster exit".
    std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(client.get(), "SELECT 1"), &PQclear);
    EXPECT_NE(PQresultStatus(r.get()), PGRES_TUPLES_OK);
    EXPECT_EQ(std::string(PQerrorMessage(client.get())).find("postmaster exit"), std::string::npos)
        << PQerrorMessage(client.get());
    EXPECT_EQ(rs->count_log_lines(0, "unexpected postmaster exit"), exits_before);

    const auto start = clock_type::now();
    rs->start(0);
    std::cout << "start after a crash (crash recovery): " << since(start).count() << " ms\n";
    EXPECT_FALSE(rs->in_recovery(0));
    EXPECT_EQ(value_on(*rs, 0, table), "first");  // committed before the crash
    // The standbys reconnect by themselves (their walreceivers retry).
    pg_replica_set::wait_until([&] { return streaming_standbys(*rs, 0) == 2; }, 60s,
                               "both standbys to stream from node0 again");
    rs->query(0, "UPDATE " + table + " SET v = 'after the crash' WHERE id = 1");
    rs->wait_replayed(1);
    EXPECT_EQ(value_on(*rs, 1, table), "after the crash");
}

TEST_F(pg_replicas_async, an_apply_delay_holds_a_write_back_on_the_standby_until_it_passes) {
    const auto table = fresh_table("rig_delay");
    rs->set_delay(1, 2000ms);
    rs->query(0, "UPDATE " + table + " SET v = 'delayed' WHERE id = 1");
    const auto committed = clock_type::now();
    const auto commit_lsn = rs->query(0, "SELECT pg_current_wal_flush_lsn()").at(0).at(0).value();
    // node1 has received the commit but not applied it; node2 (no delay) has.
    pg_replica_set::wait_until(
        [&] {
            return rs->query(1, "SELECT pg_last_wal_receive_lsn() >= $1::pg_lsn", {commit_lsn}).at(0).at(0) ==
                   "t";
        },
        10s, "node1 to receive the commit");
    EXPECT_EQ(value_on(*rs, 1, table), "first");
    rs->wait_replayed(2);
    EXPECT_EQ(value_on(*rs, 2, table), "delayed");
    pg_replica_set::wait_until([&] { return value_on(*rs, 1, table) == "delayed"; }, 10s,
                               "the delayed write to show on node1");
    const auto held = since(committed);
    std::cout << "write held back on node1 for " << held.count() << " ms\n";
    EXPECT_GE(held, 1500ms);  // at least the delay, less the moments between commit and the clock read

    rs->set_delay(1, 0ms);
    rs->query(0, "UPDATE " + table + " SET v = 'not delayed' WHERE id = 1");
    const auto again = clock_type::now();
    pg_replica_set::wait_until([&] { return value_on(*rs, 1, table) == "not delayed"; }, 10s,
                               "the write to show on node1 without delay");
    EXPECT_LT(since(again), 1500ms);  // well under the former delay
}

// restore_layout() from what tests of failover leave behind: every node ends up running, node0 the
// primary, node1 and node2 its streaming standbys without delay, and a write reaches both.
TEST_F(pg_replicas_async, restore_layout_puts_back_the_layout_from_any_failover) {
    const auto table = fresh_table("rig_restore");
    const auto check_layout = [&](const std::string& after, const std::string& value) {
        SCOPED_TRACE(after);
        const auto start = clock_type::now();
        rs->restore_layout();
        std::cout << "restore_layout after " << after << ": " << since(start).count() << " ms\n";
        EXPECT_FALSE(rs->in_recovery(0));
        EXPECT_TRUE(rs->in_recovery(1));
        EXPECT_TRUE(rs->in_recovery(2));
        EXPECT_EQ(streaming_standbys(*rs, 0), 2);
        for (int i = 1; i < 3; ++i) EXPECT_EQ(rs->query(i, "SHOW recovery_min_apply_delay").at(0).at(0), "0");
        rs->query(0, "UPDATE " + table + " SET v = $1 WHERE id = 1", {value});
        rs->wait_replayed(1, 0, 5s);
        rs->wait_replayed(2, 0, 5s);
        EXPECT_EQ(value_on(*rs, 1, table), value);
        EXPECT_EQ(value_on(*rs, 2, table), value);
    };

    // A failover: the primary crashed, node1 promoted, node2 following it, node0 left down.
    rs->crash(0);
    rs->promote(1);
    rs->rejoin(2, 1);
    rs->query(1, "UPDATE " + table + " SET v = 'written on node1' WHERE id = 1");
    check_layout("a failover to node1", "one");

    // Split brain on node2, node1 delayed and then stopped immediately.
    rs->set_delay(1, 5000ms);
    rs->promote(2);
    rs->stop(1, pg_replica_set::stop_mode::immediate);
    check_layout("a split brain on node2 with node1 delayed and stopped", "two");

    // The primary stopped cleanly, nothing promoted.
    rs->stop(0);
    check_layout("a stop of the primary", "three");

    // node0 a standby of node1 (the state after a failover and the old primary's rejoin), crashed.
    rs->promote(1);
    rs->rejoin(0, 1);
    rs->crash(0);
    check_layout("node0 rejoined to node1 and crashed", "four");
}

// After a failover, the new primary waits for the old one as its synchronous standby once it has
// rejoined (each node names the others in synchronous_standby_names).
TEST_F(pg_replicas_sync, after_a_failover_the_rejoined_old_primary_is_the_synchronous_standby) {
    const auto table = fresh_table("rig_sync_failover");
    rs->crash(0);
    rs->promote(1);
    EXPECT_EQ(rs->query(1, "SHOW synchronous_standby_names").at(0).at(0), "node0");
    rs->rejoin(0, 1);
    EXPECT_EQ(rs->query(1, "SELECT application_name, state, sync_state FROM pg_stat_replication"),
              (std::vector<pg_replica_set::row>{{"node0", "streaming", "sync"}}));
    rs->query(1, "UPDATE " + table + " SET v = 'on node1' WHERE id = 1");  // returns: node0 acknowledged
    rs->wait_replayed(0, 1);
    EXPECT_EQ(value_on(*rs, 0, table), "on node1");
}

TEST_F(pg_replicas_sync, a_commit_returns_only_once_the_synchronous_standby_has_it) {
    ASSERT_EQ(rs->nodes(), 2);
    EXPECT_EQ(rs->query(0, "SHOW synchronous_standby_names").at(0).at(0), "node1");
    EXPECT_EQ(rs->query(0, "SELECT application_name, state, sync_state FROM pg_stat_replication"),
              (std::vector<pg_replica_set::row>{{"node1", "streaming", "sync"}}));
    const auto table = fresh_table("rig_sync");

    // With the standby stopped, a commit waits for it (wait event SyncRep) and stays invisible.
    rs->stop(1);
    auto writer = connect(rs->conninfo(0) + " application_name=rig_sync_writer connect_timeout=10");
    ASSERT_EQ(PQsendQuery(writer.get(), ("UPDATE " + table + " SET v = 'acknowledged' WHERE id = 1").c_str()),
              1);
    pg_replica_set::wait_until(
        [&] {
            return rs->query(
                         0,
                         "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'rig_sync_writer' "
                         "AND wait_event = 'SyncRep'")
                       .at(0)
                       .at(0) == "1";
        },
        10s, "the commit to wait for the synchronous standby");
    EXPECT_EQ(value_on(*rs, 0, table), "first");
    ASSERT_EQ(PQconsumeInput(writer.get()), 1);
    EXPECT_EQ(PQisBusy(writer.get()), 1);

    // The standby back: the commit returns, and the standby has it.
    rs->start(1);
    pg_replica_set::wait_until(
        [&] { return PQconsumeInput(writer.get()) == 1 && PQisBusy(writer.get()) == 0; }, 60s,
        "the commit to return once the standby is back");
    std::unique_ptr<PGresult, decltype(&PQclear)> result(PQgetResult(writer.get()), &PQclear);
    ASSERT_EQ(PQresultStatus(result.get()), PGRES_COMMAND_OK) << PQerrorMessage(writer.get());
    EXPECT_EQ(value_on(*rs, 0, table), "acknowledged");
    rs->wait_replayed(1);
    EXPECT_EQ(value_on(*rs, 1, table), "acknowledged");
    EXPECT_EQ(rs->query(0, "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'node1'"),
              (std::vector<pg_replica_set::row>{{"sync"}}));
}

}  // namespace
