// /metrics for a cluster client (a multi-host PostgreSQL URL): the hosts' roles and lag and the
// cluster's routing counters, in the Prometheus text exposition format 0.0.4, per event loop (label
// thread) and host (label host="host:port"). The families are documented in docs/09-service.md:
//   respool_pg_host_role{thread,host,role}            one-hot gauge over unknown, primary, standby,
//                                                     fenced, down
//   respool_pg_host_writable{thread,host}             1 while writes go there
//   respool_pg_host_timeline{thread,host}             its timeline (0: none seen)
//   respool_pg_host_replica_lag_seconds{thread,host}  how stale it may be (absent while unknown)
//   respool_pg_host_statements_total{thread,host}     operations routed to it
//   respool_pg_cluster_primary_known{thread}          1 while a primary is known (writes can be served)
//   respool_pg_cluster_writes_waiting_for_primary{thread}
//   respool_pg_cluster_failover_waits_total{thread}   writes that had to wait for a primary
//   respool_pg_cluster_failover_timeouts_total{thread} ... and gave up (503)
//   respool_pg_cluster_reads_total{thread,to="primary|standby"}  routed reads
#pragma once

#include "cluster_view.hpp"

#include <optional>
#include <string>
#include <vector>

namespace respool_cli {

// Appends the families for the loops' clusters (index = thread; nullopt entries are skipped). With no
// cluster, appends nothing.
void write_cluster_metrics(std::string& out, const std::vector<std::optional<cluster_view>>& loops);

}  // namespace respool_cli
