#include "cluster_health.hpp"

namespace respool_cli {

cluster_verdict judge_cluster(const std::vector<std::optional<cluster_view>>& loops) {
    for (const auto& c : loops) {
        if (!c) continue;
        if (!c->primary || *c->primary >= c->hosts.size())
            return {false, c->no_primary_reason.empty() ? "no primary known" : c->no_primary_reason};
        const cluster_host_view& p = c->hosts[*c->primary];
        if (p.pool.circuit == respool::circuit_state::open)
            return {false, "circuit open on the primary " + p.name +
                               ": its pool stopped connecting for its cool-down"};
    }
    return {};
}

}  // namespace respool_cli
