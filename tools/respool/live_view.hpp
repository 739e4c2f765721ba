// `respool demo`'s live view: one line, redrawn in place on a terminal (a plain line per second
// otherwise), under a header printed once. Both fit a width (80 columns by default) whatever the
// numbers: each figure is shortened (15.8k, 2.1M, 12.3s) and the line is cut at the width as a last
// resort, so that `\r` always rewrites the whole line.
#pragma once

#include "health_json.hpp"

#include <cstddef>
#include <string>

namespace respool_cli {

struct live_figures {
    double elapsed_s = 0;
    bool sampled = false;       // a second has passed: the figures below are set ("-" until then)
    double requests_per_s = 0;  // of the last second
    double p50_ms = 0, p99_ms = 0;
    long errors_5xx = 0;  // so far
    health_reading pool;  // /health as last read
};

// "  time  req/s    p50    p99    5xx  pools active/idle/waiting, circuit"
std::string live_header(std::size_t width = 80);
// " 12.3s  15.8k  818us 17.2ms      0  writer 1/0/26 reader 3/5/0 closed"
std::string live_line(const live_figures& f, std::size_t width = 80);

// A count in at most 6 characters: 9999, 15.8k, 999.9k, 2.1M, ... ("?" when not a finite number).
std::string short_count(double n);
// A duration in at most 6 characters: 818us, 17.2ms, 240ms, 12.3s, 999s, 1.2ks.
std::string short_ms(double ms);

}  // namespace respool_cli
