#include "budget_metrics.hpp"

#include "exposition.hpp"

#include <functional>

namespace respool_cli {

void write_budget_metrics(std::string& out, const std::vector<budget_sample>& samples) {
    if (samples.empty()) return;
    exposition::families families;
    using value_of = std::function<double(const respool::pg::budget_stats&)>;
    auto each = [&](std::string_view name, std::string_view type, std::string_view help, const value_of& f) {
        families.family(name, type == "counter" ? exposition::kind::counter : exposition::kind::gauge, help);
        for (const budget_sample& s : samples)
            families.sample({{"thread", std::to_string(s.thread)}, {"pool", s.pool}}, f(s.budget));
    };
    each("respool_pg_budget_connections", "gauge",
         "Connections the members of the shared budget divide (as of the last heartbeat).",
         [](const auto& b) { return double(b.budget); });
    each("respool_pg_budget_members", "gauge", "Live members of the shared budget, this pool included.",
         [](const auto& b) { return double(b.members); });
    each("respool_pg_budget_granted_connections", "gauge",
         "This pool's share of the budget (its member connection included).",
         [](const auto& b) { return double(b.granted); });
    each("respool_pg_budget_target_connections", "gauge",
         "The share the division gives this pool; the granted share moves toward it.",
         [](const auto& b) { return double(b.target); });
    each("respool_pg_budget_demand_connections", "gauge",
         "Connections this pool asked for (its peak in use and waiting over the last heartbeat, plus one).",
         [](const auto& b) { return double(b.demand); });
    each("respool_pg_budget_degraded", "gauge",
         "1 while the pool keeps its configured max instead of a share (the log says why).",
         [](const auto& b) { return b.degraded.empty() ? 0.0 : 1.0; });
    each("respool_pg_budget_heartbeats_total", "counter", "Heartbeats on the budget's table that committed.",
         [](const auto& b) { return double(b.ticks); });
    families.append_to(out);
}

}  // namespace respool_cli
