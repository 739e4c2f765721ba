// What demo and simulate print alike: durations in milliseconds, shortened to a readable unit, and
// percentiles of a sample.
#pragma once

#include <string>
#include <vector>

namespace respool_cli {

// 850us, 12.3ms, 240ms.
std::string show_ms(double ms);
// The q-quantile (0..1) of `v` (reordered), 0 when empty.
double percentile(std::vector<double>& v, double q);

}  // namespace respool_cli
