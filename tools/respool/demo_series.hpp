// What `respool demo` samples once per second during the run, kept in memory for --report: the
// request rate and latency of that second (the load clients' own measurements) and the pools'
// occupancy (from /health, summed over the pools and event loops).
#pragma once

#include <vector>

namespace respool_cli {

struct demo_sample {
    double t_s = 0;  // seconds since the clients started
    double requests_per_s = 0;
    double p50_ms = 0, p99_ms = 0;
    long active = 0, idle = 0, waiting = 0;
};
using demo_series = std::vector<demo_sample>;

}  // namespace respool_cli
