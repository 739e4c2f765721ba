// The body of GET /health, both ways, with Boost.JSON: the service writes it (handlers.cpp) and
// `respool demo` reads it as any client would (docs/09-service.md):
//   up:   {"status":"up","database":"sqlite","threads":1,"pools":[{"thread":0,"pool":"writer","idle":1,
//          "active":0,"total":1,"max":1,"waiting":0,"circuit":"closed"},...]}
//   down: {"status":"down","reason":"...","since":"2026-11-25T10:00:00.000Z"}
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace respool_cli {

// One pool of one event loop, as /health lists it.
struct health_pool {
    std::size_t thread = 0;
    std::string_view name;                                                // "postgresql", "writer", "reader"
    std::uint32_t idle = 0, active = 0, total = 0, max = 0, waiting = 0;  // from respool::pool_stats
    std::string_view circuit;  // the circuit's name: closed, open, half_open
};

std::string health_up_body(std::string_view database, std::size_t threads,
                           const std::vector<health_pool>& pools);
std::string health_down_body(std::string_view reason, std::string_view since);

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
