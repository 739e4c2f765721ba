// The service's store on a PostgreSQL cluster (a multi-host --db URL): db_store (db_store.hpp) over
// pg::cluster with the statements of pg_dialect.hpp. PUT, DELETE and incr go to the primary (the
// cluster's async_query and transaction without read_options); GET goes where --read-from says
// (read_options{.to = ...}). One pool per host, each with the flags' settings (--max per host).
//
// Every role change the cluster reports is logged, one line: info for a host becoming primary or
// standby, warn for one fenced or down. Each --threads loop has a cluster of its own, and all of them
// see the same change: loop 0 logs it at its level, the others at debug, so that one event is one line.
#include "log.hpp"
#include "pg_dialect.hpp"

#include <respool/pg/cluster.hpp>
#include <respool/pg/roles.hpp>

namespace asio = boost::asio;
namespace pg = respool::pg;

namespace respool_cli {

struct pg_cluster_dialect : pg_dialect {
    using pool = pg::cluster;
    using read_route = pg::read_options;
    static constexpr bool learns_roles_first = true;

    static std::vector<std::pair<std::string, respool::pool<connection>*>> pools_of(pool& db) {
        const pg::cluster_stats s = db.stats();
        std::vector<std::pair<std::string, respool::pool<connection>*>> out;
        for (std::size_t i = 0; i < db.hosts(); ++i)
            out.emplace_back("postgresql " + s.hosts[i].name, &db.host_pool(i).base());
        return out;
    }
    // Each host's pool closed as pg_dialect closes one (the primary's leaves the shared budget).
    static boost::asio::awaitable<void> close(pool& db, respool::duration grace) {
        for (std::size_t i = 0; i < db.hosts(); ++i)
            co_await db.host_pool(i).async_close(grace, boost::asio::as_tuple(boost::asio::use_awaitable));
        db.close();
    }
    // One pool per host, named by the host (host:port): /health's pools and /metrics' pool label.
    static std::vector<pool_view> views_of(const pool& db) {
        std::vector<pool_view> out;
        for (const pg::cluster_host_stats& h : db.stats().hosts)
            out.push_back({h.name, h.pool, budget_view(h.budget)});
        return out;
    }
    static cluster_view cluster_of(const pool& db) {
        const pg::cluster_stats s = db.stats();
        cluster_view v;
        for (const pg::cluster_host_stats& h : s.hosts)
            v.hosts.push_back({.name = h.name,
                               .role = std::string(pg::to_string(h.role)),
                               .writable = h.writable,
                               .timeline = h.timeline,
                               .lag = h.lag ? std::optional<std::chrono::nanoseconds>(*h.lag) : std::nullopt,
                               .statements = h.statements,
                               .pool = h.pool});
        v.primary = s.primary;
        v.no_primary_reason = s.no_primary_reason;
        v.waiting_for_primary = s.waiting_for_primary;
        v.failover_waits = s.failover_waits;
        v.failover_timeouts = s.failover_timeouts;
        v.reads_to_standby = s.reads_to_standby;
        v.reads_to_primary = s.reads_to_primary;
        return v;
    }
};

namespace {

pg::route route_of(read_from r) {
    switch (r) {
    case read_from::standby: return pg::route::standby;
    case read_from::prefer_standby: return pg::route::prefer_standby;
    case read_from::primary: break;
    }
    return pg::route::primary;
}

// "host 127.0.0.1:5433 standby -> primary: promoted to primary (timeline 2)": the cluster's names and
// reason carry no credential (host:port, masked failures); masked once more and kept on one line
// anyway.
std::string role_change_line(std::string_view host, std::string_view from, std::string_view to,
                             std::string_view reason) {
    std::string line = "host " + std::string(host) + " " + std::string(from) + " -> " + std::string(to);
    // The reason's own leading host name and new role ("db2:5432 down: FATAL ..."), when it starts
    // with them, are not repeated.
    for (const std::string& prefix : {std::string(host) + " ", std::string(to) + ": "})
        if (reason.substr(0, prefix.size()) == prefix) reason.remove_prefix(prefix.size());
    if (!reason.empty()) line += ": " + log::one_line(pg::masked(reason));
    return line;
}

}  // namespace

std::unique_ptr<kv_store> make_pg_cluster_store(asio::any_io_executor ex, const db_target& target,
                                                const serve_config& cfg, std::size_t worker) {
    auto d = [](std::chrono::nanoseconds n) { return std::chrono::duration_cast<respool::duration>(n); };
    pg::cluster_config c;
    c.pool = pg_pool_config(target, cfg);
    c.failover_wait = d(cfg.failover_wait);
    c.max_replica_lag = d(cfg.max_replica_lag);
    c.on_role_change = [worker](std::string_view host, pg::host_role from, pg::host_role to,
                                std::string_view reason) {
        const bool bad = to == pg::host_role::fenced || to == pg::host_role::down;
        const log::level l = worker != 0 ? log::level::debug : bad ? log::level::warn : log::level::info;
        log::write(l, role_change_line(host, pg::to_string(from), pg::to_string(to), reason));
    };
    return std::make_unique<db_store<pg_cluster_dialect>>(std::move(ex), std::move(c),
                                                          pg::read_options{.to = route_of(cfg.read_route)});
}

}  // namespace respool_cli
