#include "report_format.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdio>

namespace respool_cli {

std::string show_ms(double ms) {
    char buf[32];
    if (ms < 1)
        std::snprintf(buf, sizeof buf, "%.0fus", ms * 1000);
    else if (ms < 100)
        std::snprintf(buf, sizeof buf, "%.1fms", ms);
    else
        std::snprintf(buf, sizeof buf, "%.0fms", ms);
    return buf;
}

double percentile(std::vector<double>& v, double q) {
    if (v.empty()) return 0;
    const auto k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
}

}  // namespace respool_cli
