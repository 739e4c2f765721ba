// /metrics for pools in the shared connection budget (`respool serve --budget auto`), in the
// Prometheus text exposition format 0.0.4, per event loop (label thread) and pool (label pool: the
// pool's name, host:port with a multi-host URL). The families are documented in docs/09-service.md:
//   respool_pg_budget_connections{thread,pool}         what the members share (max_connections minus
//                                                      the server's reserved slots and the reserve)
//   respool_pg_budget_members{thread,pool}             live members, this one included
//   respool_pg_budget_granted_connections{thread,pool} this member's share (its member connection too)
//   respool_pg_budget_target_connections{thread,pool}  what the division gives it (granted follows)
//   respool_pg_budget_demand_connections{thread,pool}  what it asked for
//   respool_pg_budget_degraded{thread,pool}            1 while it keeps its configured max instead
//   respool_pg_budget_heartbeats_total{thread,pool}    heartbeats that committed
#pragma once

#include <respool/pg/budget.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace respool_cli {

struct budget_sample {
    std::size_t thread = 0;
    std::string pool;
    respool::pg::budget_stats budget;
};

// Appends the families for `samples`; with none, appends nothing.
void write_budget_metrics(std::string& out, const std::vector<budget_sample>& samples);

}  // namespace respool_cli
