#include "duration.hpp"

#include <respool/detail/duration_text.hpp>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <utility>

namespace respool_cli {

std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text) {
    const std::string s(text);
    if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.')) return std::nullopt;
    char* end = nullptr;
    const double value = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || !std::isfinite(value) || value < 0) return std::nullopt;
    const std::string_view unit(end);
    static constexpr std::pair<std::string_view, double> units[] = {{"ns", 1},  {"us", 1e3},   {"ms", 1e6},
                                                                    {"s", 1e9}, {"min", 60e9}, {"h", 3600e9}};
    double scale = -1;
    for (const auto& [name, factor] : units)
        if (unit == name) scale = factor;
    if (unit.empty() && value == 0) scale = 0;
    if (scale < 0) return std::nullopt;
    const double ns = value * scale;
    if (ns > 9.2e18) return std::nullopt;  // beyond what nanoseconds hold
    return std::chrono::nanoseconds(static_cast<long long>(std::llround(ns)));
}

std::string format_duration(std::chrono::nanoseconds d) {
    // "0" alone is how the flags spell "off"; every other value in the library's own spelling.
    return d == d.zero() ? "0" : respool::detail::duration_text(d);
}

std::string duration_error(const std::string& text) {
    if (parse_duration(text)) return {};
    return "'" + text + "' is not a duration (a number and a unit: 250ms, 5s, 2min; ns, us, ms, s, min, h)";
}

}  // namespace respool_cli
