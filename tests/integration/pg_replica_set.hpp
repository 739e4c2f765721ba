// Test-side control of a replicated PostgreSQL cluster of the pg_replicas fixtures
// (tests/integration/pg_replicas.sh: node0 the primary, node1.. its streaming standbys, each on a
// loopback port of its own): faults (promote, crash, stop, start, rejoin, apply delay) and a look at
// every node from the outside through libpq's blocking API (an admin connection of its own per call).
//
// Everything here blocks the calling thread: call it from the test's thread, never from a handler on
// an io_context the code under test needs. Every call is bounded: the script's waits are (pg_ctl -t 60,
// 60 s for streaming), the admin connections carry connect_timeout=10, the waits here take a limit.
//
// A node's port never changes (not across stops, crashes, promotions or rejoins): a chaos proxy
// (tests/tools/chaos_proxy.hpp) put between a client and a node targets port(i).
//
// Tests that change roles leave the cluster as they found it: restore_layout() at their end (also
// from TearDown, so that a failed test does not break the next ones) puts back node0 as the primary
// and every other node as its streaming standby, without apply delay.
#pragma once

#include "pg_server.hpp"

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace test {

class pg_replica_set {
public:
    using row = pg_server::row;              // std::nullopt for SQL NULL
    using stop_mode = pg_server::stop_mode;  // fast: clean shutdown; immediate: no checkpoint

    // The state folder is the folder of the file named by RESPOOL_PG_REPLICAS_FILE (ctest sets it to
    // <state>/conninfo for the tests of a pg_replicas fixture). Throws std::runtime_error when it is
    // unset or the cluster is not started; tests that may run outside ctest check available() first.
    pg_replica_set();
    explicit pg_replica_set(std::filesystem::path state_dir);

    static bool available();  // RESPOOL_PG_REPLICAS_FILE names a readable file

    int nodes() const { return static_cast<int>(nodes_.size()); }
    int port(int i) const;
    std::string conninfo(int i) const;                         // node i alone
    const std::string& conninfo() const { return conninfo_; }  // every node: host=a,b port=p,q ...
    const std::string& url() const { return url_; }            // the same as postgresql://...
    // The multi-host form with these ports in place of the nodes' (e.g. chaos proxies in front of
    // them, in node order): host=127.0.0.1,... port=p0,... and the nodes' dbname, user and password.
    std::string conninfo_with_ports(const std::vector<int>& ports) const;
    std::filesystem::path log_path(int i) const;  // node i's server log
    // Lines of node i's log containing `needle` (log_connections=on: "connection received: " counts
    // connection attempts, this class's admin connections included).
    std::size_t count_log_lines(int i, std::string_view needle) const;
    const std::filesystem::path& state_dir() const { return state_; }

    // The script's faults, synchronously; each throws std::runtime_error with the script's output
    // (which ends with the tail of every node's log) when it fails.
    void promote(int i);  // pg_ctl promote: returns once node i accepts writes, no later
    // A power loss: SIGKILL to node i's postmaster and all its children at once (no process has a last
    // word: its clients see their connections end without a message); returns once all have ended.
    void crash(int i);
    void stop(int i, stop_mode mode = stop_mode::fast);
    void start(int i);  // with the options of the fixture's start
    // Node i (running, stopped or crashed) becomes a standby of node j: pg_rewind drops what node i
    // wrote since their histories forked. Returns once node i streams from node j.
    void rejoin(int i, int j);
    void set_delay(int i, std::chrono::milliseconds delay);  // recovery_min_apply_delay; 0: none

    // Runs `sql` on node i (text parameters $1, $2... when `params` is not empty) on a fresh connection
    // (application_name=respool_test_admin); every row as text. Throws with libpq's message.
    std::vector<row> query(int i, const std::string& sql, const std::vector<std::string>& params = {}) const;
    bool in_recovery(int i) const;  // pg_is_in_recovery()
    bool answers(int i) const;      // an admin connection to node i succeeds
    // Client backends of node i, the admin connections left out; only this application_name if set.
    int count_backends(int i, const std::string& application_name = {}) const;
    // Node i's postmaster and its child processes that are alive (zombies left out), from
    // postmaster.pid and /proc; empty when the node does not run.
    std::vector<int> processes(int i) const;

    // Waits until standby `standby` has replayed the WAL of `primary` (a primary: not in recovery) up to
    // its insert position at the call: every transaction committed there before the call is visible on the
    // standby afterwards. A CHECKPOINT on the primary makes sure that position is on disk, since only flushed
    // WAL streams. Throws when `limit` passes first (an apply delay holds replay back: it counts against
    // `limit`).
    void wait_replayed(int standby, int primary = 0,
                       std::chrono::milliseconds limit = std::chrono::seconds(30)) const;

    // Polls `done` every 10 ms until it holds; throws std::runtime_error naming `what` after `limit`.
    static void wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit,
                           std::string_view what = "condition") {
        pg_server::wait_until(done, limit, what);
    }

    // Puts back the fixture's layout: every node running, node0 the primary (promoted if it is a
    // standby), every other node a standby streaming from node0 (rejoined when it is a primary or
    // follows another node), no apply delay anywhere. Returns once node0 streams to all of them. What
    // another node wrote as a primary meanwhile is gone (rewound); a test creates its data after.
    void restore_layout();

private:
    void run_script(const std::vector<std::string>& args) const;
    std::string index(int i) const;  // i as the script's argument; throws unless it names a node
    const pg_server& node(int i) const;
    bool streams_to(int primary, int standby) const;

    std::filesystem::path state_;
    std::string conninfo_;
    std::string url_;
    std::vector<pg_server> nodes_;  // each node's admin access (its state: <state>/nodeI)
};

}  // namespace test
