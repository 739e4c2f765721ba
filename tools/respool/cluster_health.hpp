// Whether a cluster client (a multi-host PostgreSQL --db) is up for /health, and why not: up while
// every loop's cluster knows a primary whose pool can lend connections (its circuit is not open), that
// is, while writes can be served. A standby that is down, or a standby's pool whose circuit is open,
// does not make the service down: reads fall back as --read-from says.
#pragma once

#include "cluster_view.hpp"

#include <optional>
#include <string>
#include <vector>

namespace respool_cli {

struct cluster_verdict {
    bool up = true;
    std::string reason;  // down: the first loop's why (the cluster's own words, or the circuit)
};

// `loops`: each loop's view (nullopt entries, loops without a cluster, are skipped).
cluster_verdict judge_cluster(const std::vector<std::optional<cluster_view>>& loops);

}  // namespace respool_cli
