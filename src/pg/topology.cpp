// The cluster's sans-io topology (topology.hpp): every input updates what the host said about itself,
// then settle() derives every host's role and write permission from those facts alone and records
// each difference as a role change. Deriving instead of transitioning keeps one place for the rules.
#include "topology.hpp"

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <utility>

namespace respool::pg::detail {

namespace {

using time_point = topology_clock::time_point;

// Enough primary readings to find one a standby has reached while it lags by up to 64 probe periods;
// a standby further behind is judged by its replay age alone.
constexpr std::size_t primary_history_size = 64;

// One probe of the primary: every commit acknowledged before `sent` lies at or before `lsn`.
struct primary_sample {
    time_point sent;
    std::uint64_t lsn;
};

}  // namespace

struct topology::state {
    struct host {
        std::string name;

        // ---- what the host and its sessions said ----
        bool probed = false;  // a probe result (either outcome) was applied
        bool failed = false;  // the last applied probe failed
        time_point last_probe{};
        std::string last_failure;
        // The timeline of its primary claim; kept while it is down (it may come back claiming).
        std::optional<std::uint32_t> claim;
        // Claimed primary below the highest timeline seen; only a reading in recovery (or a claim on
        // a timeline higher than any seen, a new promotion) ends it.
        bool fenced = false;
        std::uint32_t fenced_claim = 0;        // the claim it was fenced on (its messages)
        bool read_only = false;                // default_transaction_read_only from its last reading
        std::uint32_t timeline = 0;            // of its last primary claim
        std::uint32_t receiving_timeline = 0;  // a standby's, from its last reading (0: not known)
        // The newest timeline it is known to be on: its claim, or the timeline it receives as a
        // standby; kept while it is down or receives nothing (0: none known yet).
        std::uint32_t known_timeline = 0;
        std::uint64_t lsn = 0;
        std::optional<time_point> fresh_as_of;
        bool suspect = false;  // a report or an error took its write permission (and read eligibility)
        std::string suspect_cause;
        bool probe_requested = false;  // a report disagreed with its role: probe now
        // Only a probe sent at or after this answers the suspicion or the request.
        time_point wanted_since{};

        // ---- derived by settle() ----
        host_role role = host_role::unknown;
        bool writable = false;
        time_point role_since{};
    };

    settings cfg;
    std::vector<host> hosts;
    // The highest timeline any host is known to be on (its claim, or what it receives as a standby;
    // a host that is down keeps its last): a claim below it is fenced. It falls only when the host
    // that was on it is seen on a lower one (rewound onto the other history by its operator).
    std::optional<std::uint32_t> top_timeline;
    std::size_t top_host = 0;            // a host on it (for messages)
    std::deque<primary_sample> history;  // newest last, all from one primary on one timeline
    std::size_t history_host = 0;
    std::uint32_t history_timeline = 0;
    std::vector<role_change> changes;

    host& at(std::size_t i) {
        if (i >= hosts.size())
            throw std::out_of_range("respool::pg cluster topology: host index " + std::to_string(i) +
                                    " out of range (the cluster has " + std::to_string(hosts.size()) +
                                    " hosts)");
        return hosts[i];
    }

    // The unfenced claimants on the highest timeline: exactly one is the primary; two or more are a
    // split brain. A claimant that is down still counts: it may come back claiming.
    [[nodiscard]] std::vector<std::size_t> top_claimants() const {
        std::vector<std::size_t> top;
        for (std::size_t i = 0; i < hosts.size(); ++i) {
            const host& h = hosts[i];
            if (h.claim && !h.fenced && top_timeline && *h.claim == *top_timeline) top.push_back(i);
        }
        return top;
    }

    [[nodiscard]] std::string split_brain_text(const std::vector<std::size_t>& top) const {
        std::string text = "split brain: ";
        for (std::size_t k = 0; k < top.size(); ++k) {
            if (k > 0) text += k + 1 == top.size() ? " and " : ", ";
            text += hosts[top[k]].name;
        }
        text += top.size() == 2 ? " both" : " all";
        text += " claim primary on timeline " + std::to_string(*top_timeline);
        return text;
    }

    [[nodiscard]] std::string not_writable_cause(const host& h, const std::vector<std::size_t>& top) const {
        if (top.size() > 1) return split_brain_text(top);
        if (h.suspect) return h.suspect_cause;
        if (h.read_only) return "default_transaction_read_only is on";
        return "it is not the primary";
    }

    [[nodiscard]] std::string fence_text(const host& h) const {
        return "it claims primary on timeline " + std::to_string(h.claim.value_or(0)) + ", " +
               hosts[top_host].name + " is on timeline " + std::to_string(top_timeline.value_or(0));
    }

    [[nodiscard]] std::string describe_role_change(std::size_t i, host_role from, host_role to, bool writable,
                                                   const std::vector<std::size_t>& top) const {
        const host& h = hosts[i];
        switch (to) {
        case host_role::down:
            return h.name +
                   " down: " + (h.last_failure.empty() ? std::string("its probe failed") : h.last_failure);
        case host_role::fenced: return h.name + " fenced: " + fence_text(h);
        case host_role::standby:
            switch (from) {
            case host_role::primary: return h.name + " demoted: it is in recovery (a standby)";
            case host_role::fenced: return h.name + " rejoined as a standby (it is in recovery)";
            case host_role::down: return h.name + " is back as a standby";
            default: return h.name + " is a standby";
            }
        case host_role::primary: {
            std::string text = h.name;
            switch (from) {
            case host_role::fenced:
                if (h.claim == h.fenced_claim) {  // the newer history was given up, not this host promoted
                    text += " is primary again (timeline " + std::to_string(*h.claim) +
                            "): no host is on a newer timeline any more";
                    if (!writable) text += ", not writable: " + not_writable_cause(h, top);
                    return text;
                }
                text += " promoted to primary";
                break;
            case host_role::standby: text += " promoted to primary"; break;
            case host_role::down: text += " is back as primary"; break;
            default: text += " is primary"; break;
            }
            text += " (timeline " + std::to_string(h.claim.value_or(0)) + ")";
            if (!writable) text += ", not writable: " + not_writable_cause(h, top);
            return text;
        }
        case host_role::unknown: break;
        }
        return h.name + " role unknown";
    }

    [[nodiscard]] std::string describe_write_change(std::size_t i, bool writable, std::size_t event_host,
                                                    const std::vector<std::size_t>& top) const {
        const host& h = hosts[i];
        if (!writable) return h.name + " not writable: " + not_writable_cause(h, top);
        const std::string tl = " (timeline " + std::to_string(h.claim.value_or(0)) + ")";
        if (i == event_host) return h.name + " writable: a probe confirmed it as primary" + tl;
        return h.name + " writable: it is the only primary on the highest timeline" + tl;
    }

    // Derives every host's role and write permission from the facts and records what changed, the
    // host the event was about first (the cause before its consequences).
    void settle(time_point when, std::size_t event_host) {
        top_timeline.reset();
        for (std::size_t i = 0; i < hosts.size(); ++i)
            if (hosts[i].known_timeline > 0 && (!top_timeline || hosts[i].known_timeline > *top_timeline)) {
                top_timeline = hosts[i].known_timeline;
                top_host = i;
            }
        for (host& h : hosts) {
            h.fenced = h.claim && top_timeline && *h.claim < *top_timeline;
            if (h.fenced) h.fenced_claim = *h.claim;
        }
        const std::vector<std::size_t> top = top_claimants();
        const auto settle_one = [&](std::size_t i) {
            host& h = hosts[i];
            host_role role = host_role::unknown;
            if (h.failed)
                role = host_role::down;
            else if (!h.probed)
                role = host_role::unknown;
            else if (h.fenced)
                role = host_role::fenced;
            else if (h.claim)
                role = host_role::primary;
            else
                role = host_role::standby;
            const bool writable = role == host_role::primary && top.size() == 1 && !h.read_only && !h.suspect;
            if (role != h.role) {
                changes.push_back(
                    {i, h.role, role, describe_role_change(i, h.role, role, writable, top), when});
                h.role_since = when;
            } else if (writable != h.writable) {
                changes.push_back({i, role, role, describe_write_change(i, writable, event_host, top), when});
            }
            h.role = role;
            h.writable = writable;
        };
        settle_one(event_host);
        for (std::size_t i = 0; i < hosts.size(); ++i)
            if (i != event_host) settle_one(i);
    }

    void want_probe(host& h, time_point now) { h.wanted_since = std::max(h.wanted_since, now); }

    void make_suspect(host& h, const char* cause, time_point now) {
        if (!h.suspect) {
            h.suspect = true;
            h.suspect_cause = cause;
        }
        want_probe(h, now);
    }

    // A probe sent at or after the suspicion answers it; an older one (in flight when it arose) not.
    void probe_answered(host& h, time_point sent) {
        if (sent < h.wanted_since) return;
        h.suspect = false;
        h.suspect_cause.clear();
        h.probe_requested = false;
    }

    // The primary's reading: a new sample of where its WAL was, which may make standbys fresher.
    void record_primary_sample(std::size_t i, const probe_reading& r) {
        if (r.lsn == 0) return;
        const std::uint32_t timeline = hosts[i].claim.value_or(0);
        if (history_host != i || history_timeline != timeline) {
            history.clear();  // another primary's positions describe another history
            history_host = i;
            history_timeline = timeline;
        }
        history.push_back({r.sent, r.lsn});
        if (history.size() > primary_history_size) history.pop_front();
        for (host& h : hosts)
            if (h.role == host_role::standby && h.lsn >= r.lsn)
                h.fresh_as_of = std::max(h.fresh_as_of.value_or(r.sent), r.sent);
    }

    // A standby's reading: it holds every commit acknowledged before the newest primary sample it
    // has replayed, and every one committed before its last replayed transaction.
    void update_freshness(host& h, const probe_reading& r, bool was_standby) {
        std::optional<time_point> fresh = was_standby ? h.fresh_as_of : std::nullopt;
        const auto later = [&fresh](time_point t) { fresh = fresh ? std::max(*fresh, t) : t; };
        if (r.replay_age) later(std::min(r.sent, r.sent - *r.replay_age));  // a skewed clock's negative age
        if (h.lsn != 0) {
            for (auto it = history.rbegin(); it != history.rend(); ++it)
                if (it->lsn <= h.lsn) {
                    later(it->sent);
                    break;
                }
        }
        h.fresh_as_of = fresh;
    }

    [[nodiscard]] std::optional<std::size_t> primary() const noexcept {
        for (std::size_t i = 0; i < hosts.size(); ++i)
            if (hosts[i].writable) return i;
        return std::nullopt;
    }

    [[nodiscard]] topology_clock::duration period() const noexcept {
        topology_clock::duration p = cfg.interval;
        // A lag bound too small to halve (zero: no standby reads) must not make the probes continuous.
        if (cfg.max_replica_lag / 2 > topology_clock::duration::zero())
            p = std::min(p, cfg.max_replica_lag / 2);
        if (!primary()) p = std::min(p, cfg.no_primary_interval);
        return p;
    }

    [[nodiscard]] bool eligible_standby(const host& h, time_point now, std::uint64_t min_lsn) const {
        // A standby still on an older timeline than the primary's holds positions of a history the
        // cluster left: neither its LSN nor its freshness compares with the primary's.
        const bool current_history =
            h.receiving_timeline == 0 || !top_timeline || h.receiving_timeline >= *top_timeline;
        return h.role == host_role::standby && !h.suspect && current_history && h.fresh_as_of &&
               now - *h.fresh_as_of <= cfg.max_replica_lag && h.lsn >= min_lsn;
    }
};

topology::topology(std::vector<std::string> host_names, settings s) : s_(std::make_unique<state>()) {
    if (host_names.empty()) throw std::invalid_argument("respool::pg cluster topology: no host");
    if (s.interval <= topology_clock::duration::zero())
        throw std::invalid_argument("respool::pg cluster topology: the probe interval must be positive");
    if (s.no_primary_interval <= topology_clock::duration::zero())
        throw std::invalid_argument(
            "respool::pg cluster topology: the probe interval while no primary is known must be positive");
    if (s.max_replica_lag < topology_clock::duration::zero())
        throw std::invalid_argument("respool::pg cluster topology: max_replica_lag must not be negative");
    s_->cfg = s;
    s_->hosts.resize(host_names.size());
    for (std::size_t i = 0; i < host_names.size(); ++i) s_->hosts[i].name = std::move(host_names[i]);
}

topology::~topology() = default;
topology::topology(topology&&) noexcept = default;
topology& topology::operator=(topology&&) noexcept = default;

std::size_t topology::size() const noexcept {
    return s_->hosts.size();
}

void topology::probe_succeeded(std::size_t host, const probe_reading& r) {
    state::host& h = s_->at(host);
    if (h.probed && r.sent < h.last_probe) return;  // overtaken by a newer probe's result
    const bool was_standby = h.role == host_role::standby;
    h.probed = true;
    h.failed = false;
    h.last_probe = r.sent;
    h.last_failure.clear();
    s_->probe_answered(h, r.sent);
    h.lsn = r.lsn;
    h.read_only = r.read_only;
    if (r.in_recovery) {
        h.claim.reset();
        // Only the receiver's own timeline says which history it follows now; a checkpoint's may lag.
        h.receiving_timeline = r.timeline_exact ? r.timeline : 0;
        if (r.timeline > 0) h.known_timeline = r.timeline;
    } else {
        h.claim = r.timeline;
        h.timeline = r.timeline;
        h.known_timeline = r.timeline;
    }
    s_->settle(r.received, host);
    if (h.role == host_role::primary && s_->top_claimants().size() == 1) {
        h.fresh_as_of.reset();
        s_->record_primary_sample(host, r);
    } else if (h.role == host_role::standby) {
        s_->update_freshness(h, r, was_standby);
    } else {
        h.fresh_as_of.reset();
    }
}

void topology::probe_failed(std::size_t host, topology_clock::time_point sent, std::string reason) {
    state::host& h = s_->at(host);
    if (h.probed && sent < h.last_probe) return;
    h.probed = true;
    h.failed = true;
    h.last_probe = sent;
    h.last_failure = reason.empty() ? std::string("its probe failed") : std::move(reason);
    s_->probe_answered(h, sent);
    h.fresh_as_of.reset();
    s_->settle(sent, host);
}

void topology::session_reported(std::size_t host, bool in_hot_standby, bool read_only,
                                topology_clock::time_point now) {
    state::host& h = s_->at(host);
    switch (h.role) {
    case host_role::primary:
        if (in_hot_standby)
            s_->make_suspect(h, "a session reported hot standby", now);
        else if (read_only && !h.read_only)
            s_->make_suspect(h, "a session reported read-only", now);
        else if (!read_only && h.read_only) {
            h.probe_requested = true;  // may take writes now; only a probe says so
            s_->want_probe(h, now);
        }
        break;
    case host_role::standby:
    case host_role::fenced:
    case host_role::down:
        // A standby out of hot standby was promoted; a fenced host in hot standby rejoined; a host
        // marked down has a working session. None changes role before a probe confirms it.
        if ((h.role == host_role::standby && !in_hot_standby) ||
            (h.role == host_role::fenced && in_hot_standby) || h.role == host_role::down) {
            h.probe_requested = true;
            s_->want_probe(h, now);
        }
        break;
    case host_role::unknown: break;  // its first probe is due anyway
    }
    s_->settle(now, host);
}

// An error on a host that is down or not probed yet says nothing new (the pool's reconnects to a
// down host fail over and over): it must not hurry the probes of a host its schedule covers.
void topology::connection_lost(std::size_t host, topology_clock::time_point now) {
    state::host& h = s_->at(host);
    if (h.role == host_role::down || h.role == host_role::unknown) return;
    s_->make_suspect(h, "a connection to it was lost", now);
    s_->settle(now, host);
}

void topology::write_refused(std::size_t host, topology_clock::time_point now) {
    state::host& h = s_->at(host);
    if (h.role == host_role::down || h.role == host_role::unknown) return;
    s_->make_suspect(h, "a write was refused (read-only transaction)", now);
    s_->settle(now, host);
}

std::optional<std::size_t> topology::primary() const noexcept {
    return s_->primary();
}

std::string topology::no_primary_reason() const {
    if (primary()) return {};
    const std::vector<std::size_t> top = s_->top_claimants();
    if (top.size() > 1) return s_->split_brain_text(top);
    std::string text;
    for (const state::host& h : s_->hosts) {
        if (!text.empty()) text += "; ";
        text += h.name;
        switch (h.role) {
        case host_role::unknown: text += " not probed yet"; break;
        case host_role::down: text += " down: " + h.last_failure; break;
        case host_role::standby: text += " standby"; break;
        case host_role::fenced: text += " fenced: " + s_->fence_text(h); break;
        case host_role::primary:
            text += " primary but not writable: " + s_->not_writable_cause(h, top);
            break;
        }
    }
    return text;
}

std::optional<std::size_t> topology::pick(route r, topology_clock::time_point now, std::uint64_t min_lsn,
                                          std::span<const std::size_t> load, std::uint32_t tiebreak) const {
    if (r == route::primary) return primary();
    const auto load_of = [&load](std::size_t i) { return i < load.size() ? load[i] : std::size_t{0}; };
    std::size_t least = 0;
    std::size_t tied = 0;
    for (std::size_t i = 0; i < s_->hosts.size(); ++i) {
        if (!s_->eligible_standby(s_->hosts[i], now, min_lsn)) continue;
        if (tied == 0 || load_of(i) < least) {
            least = load_of(i);
            tied = 1;
        } else if (load_of(i) == least) {
            ++tied;
        }
    }
    if (tied > 0) {
        std::size_t skip = tiebreak % tied;
        for (std::size_t i = 0; i < s_->hosts.size(); ++i)
            if (s_->eligible_standby(s_->hosts[i], now, min_lsn) && load_of(i) == least && skip-- == 0)
                return i;
    }
    if (r == route::prefer_standby) return primary();
    return std::nullopt;
}

topology_clock::time_point topology::next_probe(std::size_t host) const noexcept {
    if (host >= s_->hosts.size()) return topology_clock::time_point::max();
    const state::host& h = s_->hosts[host];
    if (!h.probed) return topology_clock::time_point{};
    if (h.suspect || h.probe_requested) return h.last_probe;
    return h.last_probe + s_->period();
}

std::vector<role_change> topology::take_changes() {
    return std::exchange(s_->changes, {});
}

host_view topology::view(std::size_t host) const {
    const state::host& h = s_->at(host);
    host_view v;
    v.role = h.role;
    v.writable = h.writable;
    v.suspect = h.suspect;
    v.timeline = h.timeline;
    v.lsn = h.lsn;
    v.fresh_as_of = h.fresh_as_of;
    v.role_since = h.role_since;
    v.last_probe = h.last_probe;
    v.last_failure = h.last_failure;
    return v;
}

}  // namespace respool::pg::detail
