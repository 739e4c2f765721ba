#include "cluster_metrics.hpp"

#include "exposition.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <string_view>

namespace respool_cli {
namespace {

// {thread="i"[,host="h"][,extra="v"]} value, in the family started last.
void append_sample(exposition::families& out, std::size_t thread, std::string_view host,
                   std::string_view extra_name, std::string_view extra_value, double value) {
    const std::string t = std::to_string(thread);
    if (host.empty() && extra_name.empty())
        out.sample({{"thread", t}}, value);
    else if (extra_name.empty())
        out.sample({{"thread", t}, {"host", host}}, value);
    else if (host.empty())
        out.sample({{"thread", t}, {extra_name, extra_value}}, value);
    else
        out.sample({{"thread", t}, {"host", host}, {extra_name, extra_value}}, value);
}

exposition::kind kind_of(std::string_view type) {
    return type == "counter" ? exposition::kind::counter : exposition::kind::gauge;
}

constexpr std::array<std::string_view, 5> roles{"unknown", "primary", "standby", "fenced", "down"};

}  // namespace

void write_cluster_metrics(std::string& text, const std::vector<std::optional<cluster_view>>& loops) {
    bool any = false;
    for (const auto& c : loops) any = any || c.has_value();
    if (!any) return;
    exposition::families out;

    using host_value = std::function<std::optional<double>(const cluster_host_view&)>;
    auto per_host = [&](std::string_view name, std::string_view type, std::string_view help,
                        const host_value& f) {
        out.family(name, kind_of(type), help);
        for (std::size_t t = 0; t < loops.size(); ++t)
            if (loops[t])
                for (const cluster_host_view& h : loops[t]->hosts)
                    if (const auto v = f(h)) append_sample(out, t, h.name, {}, {}, *v);
    };
    using loop_value = std::function<double(const cluster_view&)>;
    auto per_loop = [&](std::string_view name, std::string_view type, std::string_view help,
                        const loop_value& f) {
        out.family(name, kind_of(type), help);
        for (std::size_t t = 0; t < loops.size(); ++t)
            if (loops[t]) append_sample(out, t, {}, {}, {}, f(*loops[t]));
    };

    out.family("respool_pg_host_role", exposition::kind::gauge,
               "The host's role as the cluster sees it (1 for its role, 0 for the others).");
    for (std::size_t t = 0; t < loops.size(); ++t)
        if (loops[t])
            for (const cluster_host_view& h : loops[t]->hosts)
                for (const std::string_view r : roles)
                    append_sample(out, t, h.name, "role", r, h.role == r ? 1 : 0);
    per_host("respool_pg_host_writable", "gauge", "1 while writes go to the host.",
             [](const cluster_host_view& h) { return std::optional<double>(h.writable ? 1 : 0); });
    per_host("respool_pg_host_timeline", "gauge",
             "The host's timeline from its last primary claim (0: none seen).",
             [](const cluster_host_view& h) { return std::optional<double>(h.timeline); });
    per_host("respool_pg_host_replica_lag_seconds", "gauge",
             "How stale the host may be (0 for the primary; absent while unknown).",
             [](const cluster_host_view& h) -> std::optional<double> {
                 if (!h.lag) return std::nullopt;
                 return std::chrono::duration<double>(*h.lag).count();
             });
    per_host(
        "respool_pg_host_statements_total", "counter", "Operations the cluster routed to the host.",
        [](const cluster_host_view& h) { return std::optional<double>(static_cast<double>(h.statements)); });
    per_loop("respool_pg_cluster_primary_known", "gauge",
             "1 while a primary is known (writes can be served).",
             [](const cluster_view& c) { return c.primary ? 1.0 : 0.0; });
    per_loop("respool_pg_cluster_writes_waiting_for_primary", "gauge", "Writes waiting for a primary now.",
             [](const cluster_view& c) { return static_cast<double>(c.waiting_for_primary); });
    per_loop("respool_pg_cluster_failover_waits_total", "counter", "Writes that had to wait for a primary.",
             [](const cluster_view& c) { return static_cast<double>(c.failover_waits); });
    per_loop("respool_pg_cluster_failover_timeouts_total", "counter",
             "Writes that gave up waiting for a primary (503).",
             [](const cluster_view& c) { return static_cast<double>(c.failover_timeouts); });
    out.family("respool_pg_cluster_reads_total", exposition::kind::counter,
               "Reads routed, by where they went.");
    for (std::size_t t = 0; t < loops.size(); ++t)
        if (loops[t]) {
            append_sample(out, t, {}, "to", "primary", static_cast<double>(loops[t]->reads_to_primary));
            append_sample(out, t, {}, "to", "standby", static_cast<double>(loops[t]->reads_to_standby));
        }
    out.append_to(text);
}

}  // namespace respool_cli
