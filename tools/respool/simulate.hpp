// `respool simulate`: a pool of simulated resources driven by many concurrent clients, to explore pool
// sizing without a database (the CLI's first job, before `respool demo` ran a real service).
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstddef>
#include <string>

namespace respool_cli {

// A window in which the simulated backend is down (--outage START:LENGTH).
struct outage_window {
    std::chrono::nanoseconds from{-1};  // negative: no outage
    std::chrono::nanoseconds length{0};
};

struct simulate_config {
    int clients = 64;
    std::size_t min = 2;
    std::size_t max = 16;
    std::chrono::nanoseconds create_latency = std::chrono::milliseconds(20);
    std::chrono::nanoseconds hold = std::chrono::milliseconds(5);
    double failure_rate = 0.0;
    std::chrono::nanoseconds timeout = std::chrono::milliseconds(250);
    std::chrono::nanoseconds duration = std::chrono::seconds(10);
    bool quiet = false;
    // resilience and lifecycle
    outage_window outage;  // the backend is down in that window: creations fail, queries break
    unsigned breaker = 5;  // consecutive failures that open the circuit (0 = no breaker)
    std::chrono::nanoseconds cool_down = std::chrono::seconds(1);
    double leak_rate = 0.0;  // probability that a client forgets its lease for --leak-hold
    std::chrono::nanoseconds leak_hold = std::chrono::seconds(3);
    std::chrono::nanoseconds acquire_ttl = std::chrono::seconds(1);  // leak detection threshold
    std::chrono::nanoseconds idle_ttl{};                             // 0 = off
    std::chrono::nanoseconds max_lifetime{};                         // 0 = off
};

// Adds the subcommand and its flags to `app`.
CLI::App* add_simulate_command(CLI::App& app, simulate_config& cfg);
int run_simulate(const simulate_config& cfg);

}  // namespace respool_cli
