// What a cluster client's store (pg_cluster_store.cpp) shows of its pg::cluster to /health and
// /metrics: a plain copy of pg::cluster_stats, taken on the store's loop, so that the handlers and the
// JSON and metrics writers need no PostgreSQL header. No credential: host names are host:port.
#pragma once

#include <respool/stats.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace respool_cli {

struct cluster_host_view {
    std::string name;  // host:port
    std::string role;  // unknown, primary, standby, fenced, down
    bool writable = false;
    std::uint32_t timeline = 0;                   // 0: none seen
    std::optional<std::chrono::nanoseconds> lag;  // nullopt: unknown
    std::uint64_t statements = 0;                 // operations routed to it
    respool::pool_stats pool;
};

struct cluster_view {
    std::vector<cluster_host_view> hosts;  // in the URL's order
    std::optional<std::size_t> primary;    // index into hosts
    std::string no_primary_reason;         // empty when there is a primary
    std::size_t waiting_for_primary = 0;
    std::uint64_t failover_waits = 0;
    std::uint64_t failover_timeouts = 0;
    std::uint64_t reads_to_standby = 0;
    std::uint64_t reads_to_primary = 0;
};

}  // namespace respool_cli
