// The body of GET /health, both ways, with Boost.JSON: the service writes it (handlers.cpp) and
// `respool demo` reads it as any client would (docs/09-service.md):
//   up:   {"status":"up","database":"sqlite","threads":1,"pools":[{"thread":0,"pool":"writer","idle":1,
//          "active":0,"total":1,"max":1,"waiting":0,"circuit":"closed"},...]}
//   down: {"status":"down","reason":"...","since":"2026-11-25T10:00:00.000Z"}
// A pool in the shared connection budget (--budget auto) adds to its entry
//   "budget":{"connections":34,"members":3,"granted":12,"target":12,"demand":9,"degraded":null}
// A cluster client (a multi-host PostgreSQL URL) adds, up or down, its hosts as each loop sees them:
//   "cluster":{"primary":"127.0.0.1:5433","hosts":[{"thread":0,"name":"127.0.0.1:5433","role":"primary",
//     "writable":true,"timeline":1,"lag_ms":0,"pool":{"idle":2,"active":0,"total":2,"max":16,
//     "waiting":0,"circuit":"closed"}},...]}                   ("primary":null and "lag_ms":null: unknown)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace respool_cli {

// A pool's share of the shared connection budget (`respool serve --budget auto`), from
// respool::pg::budget_stats.
struct health_budget {
    std::uint32_t connections = 0;  // what the members share
    std::uint32_t members = 0, granted = 0, target = 0, demand = 0;
    std::string_view degraded;  // why the pool keeps its configured max (null while sharing)
};

// One pool of one event loop, as /health lists it.
struct health_pool {
    std::size_t thread = 0;
    std::string_view name;                                                // "postgresql", "writer", "reader"
    std::uint32_t idle = 0, active = 0, total = 0, max = 0, waiting = 0;  // from respool::pool_stats
    std::string_view circuit;  // the circuit's name: closed, open, half_open
    std::optional<health_budget> budget{};
};

// One host of a cluster as one event loop sees it (its pool: `pool`'s counts, name unused).
struct health_host {
    std::size_t thread = 0;
    std::string_view name;  // host:port
    std::string_view role;  // unknown, primary, standby, fenced, down
    bool writable = false;
    std::uint32_t timeline = 0;
    std::optional<std::int64_t> lag_ms;  // nullopt: unknown (null)
    health_pool pool;
};
struct health_cluster {
    std::string_view primary;  // host:port, empty when none is known (null)
    std::vector<health_host> hosts;
};

std::string health_up_body(std::string_view database, std::size_t threads,
                           const std::vector<health_pool>& pools, const health_cluster* cluster = nullptr);
std::string health_down_body(std::string_view reason, std::string_view since,
                             const health_cluster* cluster = nullptr);

// What a client reads from a /health answer: up (200) or not; per pool name the sums over the event
// loops of idle, active and waiting; the worst circuit ("open" over "half_open" over "closed"). A body
// that is not the JSON above reads as no pools.
struct health_reading {
    bool up = false;
    std::map<std::string, std::array<long, 3>> pools;  // idle, active, waiting
    std::string circuit = "closed";
};
health_reading read_health(unsigned status, std::string_view body);

}  // namespace respool_cli
