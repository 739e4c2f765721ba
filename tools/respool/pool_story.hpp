// The pool's own story for `respool demo`'s summary, read from the service's /metrics text as any
// Prometheus client would: how long borrowers waited (p50/p99 estimated from the buckets of
// respool_pool_acquire_wait_seconds, summed over every pool), how many borrows timed out and how many
// connections were created. Sums cover every pool and event loop of the service.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace respool_cli {

struct pool_story {
    double acquires = 0;   // respool_pool_acquires_total
    double timeouts = 0;   // respool_pool_timeouts_total: borrows that failed at their deadline
    double creations = 0;  // respool_pool_creations_total: connections created
    std::optional<double> wait_p50_ms, wait_p99_ms;  // none when nothing was borrowed
    bool found = false;                              // the text held the pool families at all
};

// Reads the families above from a Prometheus text exposition; missing families read as 0 / none.
pool_story read_pool_story(std::string_view exposition);

// The q-quantile (0..1) of a cumulative histogram given as {upper bound, cumulative count} pairs in
// increasing bound order (the last may be +Inf), interpolated linearly inside its bucket as
// Prometheus' histogram_quantile does; a quantile in the +Inf bucket reads as the largest finite
// bound. None when the histogram is empty.
std::optional<double> bucket_quantile(const std::vector<std::pair<double, double>>& cumulative, double q);

}  // namespace respool_cli
