// `respool simulate`: a pool of simulated resources driven by many concurrent clients, to explore pool
// sizing without a database (the CLI's first job, before `respool demo` ran a real service).
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>

namespace respool_cli {

struct simulate_config {
    int clients = 64;
    std::size_t min = 2;
    std::size_t max = 16;
    std::string create_latency = "20ms";
    std::string hold = "5ms";
    double failure_rate = 0.0;
    std::string timeout = "250ms";
    std::string duration = "10s";
    bool quiet = false;
    // resilience and lifecycle
    std::string outage;    // "START:LENGTH" (e.g. 3s:2s): the backend is down in that window
    unsigned breaker = 5;  // consecutive failures that open the circuit (0 = no breaker)
    std::string cool_down = "1s";
    double leak_rate = 0.0;  // probability that a client forgets its lease for --leak-hold
    std::string leak_hold = "3s";
    std::string acquire_ttl = "1s";  // leak detection threshold
    std::string idle_ttl = "0";
    std::string max_lifetime = "0";
};

// Adds the subcommand and its flags to `app`.
CLI::App* add_simulate_command(CLI::App& app, simulate_config& cfg);
int run_simulate(const simulate_config& cfg);

}  // namespace respool_cli
