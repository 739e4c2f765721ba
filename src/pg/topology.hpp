// The cluster's picture of its hosts, as a sans-io state machine: no socket, no timer, no clock of its
// own. The cluster driver (cluster.cpp) feeds it what it observes -- probe readings, probe failures,
// the ParameterStatus a session reported when its lease ended, errors that say a host was lost or
// refused a write -- with the time it observed them, and asks it where a statement may go, when each
// host is due for its next probe, and what changed (role changes, for logs, metrics and the
// retirement of a demoted or fenced host's connections).
//
// Rules (docs/06-postgresql.md, "Clusters"):
//  - A host whose reading says "not in recovery" claims primary. Each host is known to be on a
//    timeline: its claim's, or the one it receives as a standby; a host that is down, or a standby
//    that receives nothing, keeps the last one known. The claimant on the highest of them is the
//    primary; a claimant on a lower one is fenced (also when the host on the higher one is not
//    reachable now: its writes would be rewound). Two claimants on the same highest timeline: no
//    primary at all (split brain), until one of them stops claiming. A claimant that goes down keeps
//    its claim (it may come back claiming): it still splits the brain, and a fence on it holds while
//    it is down. A claim on a timeline higher than any known is a new promotion: that host is the
//    primary, whatever it was before.
//  - A fence ends when the host is seen in recovery (it rejoined as a standby), when it claims the
//    highest timeline, or when the host on the higher timeline is seen on a lower one (its operator
//    rewound it onto the fenced host's history): a fence never outlives the history it protects.
//  - A primary that is read-only (default_transaction_read_only on) takes no writes.
//  - A probe result sent before the last one applied for its host is ignored (overtaken).
//  - A session report or an error only ever takes write permission away at once (a primary reported
//    read-only or in hot standby, a write refused with 25006, a lost connection: the host is suspect
//    and due for a probe now); a promotion (a standby's session reporting in_hot_standby off) makes
//    the host due for a probe now, and only the probe's timeline makes it primary. Only a probe sent
//    at or after the report or error answers it (one in flight then may predate the change). A report
//    that agrees with the last probe asks for nothing (a read-only primary's sessions say read-only at
//    every lease end).
//  - Freshness: a standby is known to hold every commit acknowledged before fresh_as_of(), the later
//    of (a) the send time of the newest primary reading whose insert LSN the standby's replay LSN has
//    reached and (b) the probe's send time minus the age of the last replayed transaction. A read
//    within the lag bound goes only to a host with now - fresh_as_of <= max_replica_lag; the primary
//    is always fresh. Only the current primary's readings count (the last 64; positions of another
//    host or timeline describe another history). A standby that reports receiving a timeline below
//    the highest claimed one follows a history the cluster left: it takes no reads.
//  - Probe schedule: every host every min(interval, max_replica_lag / 2) (a lag too small to halve:
//    the interval); every no_primary_interval (if shorter) while no primary is known; at once when a
//    report or an error made it suspect, and before its first probe.
//
// Bad input: the constructor throws std::invalid_argument (no host, an interval that is not positive,
// a negative lag); a host index out of range throws std::out_of_range, except in next_probe (noexcept:
// time_point::max(), never due). A moved-from topology may only be destroyed or assigned to.
#pragma once

#include <respool/pg/roles.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace respool::pg::detail {

using topology_clock = std::chrono::steady_clock;

// What one probe read on a host (one round trip on the host's monitor connection).
struct probe_reading {
    topology_clock::time_point sent;      // when the probe was sent
    topology_clock::time_point received;  // when its answer arrived
    bool in_recovery = false;             // pg_is_in_recovery()
    bool read_only = false;               // default_transaction_read_only
    // A primary's current timeline; a standby's, the timeline it receives (pg_stat_wal_receiver's
    // received_tli). 0: not known (a claim without one counts as timeline 0).
    std::uint32_t timeline = 0;
    // false: a standby's timeline from its last restartpoint (pg_control_checkpoint(), what a role
    // without pg_read_all_stats can read), which may lag behind the one it receives: good enough to
    // tell that it was rewound onto another history, not to tell which history it streams now.
    bool timeline_exact = true;
    // A primary: pg_current_wal_insert_lsn(); a standby: pg_last_wal_replay_lsn() (0: not known).
    std::uint64_t lsn = 0;
    // A standby: the server's now() - pg_last_xact_replay_timestamp() (nullopt: nothing replayed yet).
    std::optional<std::chrono::microseconds> replay_age;
    std::uint64_t system_id = 0;  // pg_control_system().system_identifier (0: not known)
};

// One host's state as the topology sees it (for stats, /health and metrics).
struct host_view {
    host_role role = host_role::unknown;
    // Writes go here: role primary, the only claimant on the highest timeline, not read-only, not suspect.
    bool writable = false;
    bool suspect = false;        // a report or an error said it may have changed; a probe is due
    std::uint32_t timeline = 0;  // from the last reading that said primary (0: none)
    std::uint64_t lsn = 0;       // from the last reading
    std::optional<topology_clock::time_point> fresh_as_of;  // a standby's (see the rules); nullopt: unknown
    topology_clock::time_point role_since{};                // when the role last changed
    topology_clock::time_point last_probe{};                // when the last probe (either outcome) was sent
    std::string last_failure;  // why the last probe failed (masked by the caller), empty after a success
};

// A host's role changed (or its write permission: from == to == primary then, with `reason` saying).
struct role_change {
    std::size_t host = 0;
    host_role from = host_role::unknown;
    host_role to = host_role::unknown;
    // In words, naming the host and the cause, for the log line: "db2:5433 promoted to primary (timeline
    // 2)", "db1:5432 fenced: it claims primary on timeline 1, db2:5433 is on timeline 2", "db1:5432 down:
    // connection refused", "db1:5432 not writable: a session reported read-only".
    std::string reason;
    topology_clock::time_point at{};
};

class topology {
public:
    struct settings {
        topology_clock::duration interval = std::chrono::seconds(1);
        topology_clock::duration no_primary_interval = std::chrono::milliseconds(100);
        topology_clock::duration max_replica_lag = std::chrono::seconds(1);
    };

    // One entry per host, in the conninfo's order: its name for messages ("db1:5432", no credential).
    topology(std::vector<std::string> host_names, settings s);
    ~topology();
    topology(topology&&) noexcept;
    topology& operator=(topology&&) noexcept;

    [[nodiscard]] std::size_t size() const noexcept;

    // ---- what the driver observed (each at `now`, or the reading's own times) ----
    void probe_succeeded(std::size_t host, const probe_reading& r);
    void probe_failed(std::size_t host, topology_clock::time_point sent, std::string reason);
    // ParameterStatus of a session of `host` as its lease ended (PostgreSQL 14 and later report both
    // on every change): in_hot_standby and default_transaction_read_only.
    void session_reported(std::size_t host, bool in_hot_standby, bool read_only,
                          topology_clock::time_point now);
    // A connection to `host` was lost (57P01-57P03, SQLSTATE class 08, EOF): suspect, probe now
    // (nothing for a host that is down or not probed yet: its schedule covers it).
    void connection_lost(std::size_t host, topology_clock::time_point now);
    // A write on `host` failed with 25006 (read_only_sql_transaction): not writable, probe now (as above).
    void write_refused(std::size_t host, topology_clock::time_point now);

    // ---- where to go ----
    // The host writes go to now: the primary, writable and not suspect; nullopt while there is none.
    [[nodiscard]] std::optional<std::size_t> primary() const noexcept;
    // Why there is no primary, in words naming the hosts ("db1:5432 down: connection refused; db2:5432
    // standby"; "split brain: db1:5432 and db3:5432 both claim primary on timeline 3"); empty when
    // there is one.
    [[nodiscard]] std::string no_primary_reason() const;
    // Where a read with `r` goes now: among the hosts eligible for it (a standby within the lag bound
    // whose LSN reached `min_lsn`; for prefer_standby the primary when no standby is), the one with the
    // least `load` (the driver's measure: leases out and waiting, per host), ties broken by `tiebreak`
    // (a random number from the driver, so that equal hosts share the reads: the tied host number
    // tiebreak % ties, in host order). A host past the end of `load` counts as load 0. route::primary
    // gives primary(). nullopt: none eligible now.
    [[nodiscard]] std::optional<std::size_t> pick(route r, topology_clock::time_point now,
                                                  std::uint64_t min_lsn, std::span<const std::size_t> load,
                                                  std::uint32_t tiebreak) const;

    // ---- scheduling and changes ----
    // When `host`'s next probe is due (a time in the past: now; the epoch before its first probe).
    [[nodiscard]] topology_clock::time_point next_probe(std::size_t host) const noexcept;
    // Role changes since the last call, oldest first. The driver logs each, counts it, and retires the
    // pooled connections of a host that stopped being primary (to fenced, standby or down).
    std::vector<role_change> take_changes();

    [[nodiscard]] host_view view(std::size_t host) const;

private:
    struct state;  // topology.cpp
    std::unique_ptr<state> s_;
};

}  // namespace respool::pg::detail
