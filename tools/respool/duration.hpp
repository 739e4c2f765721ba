// Duration flags of the CLI: a number and a unit ("250ms", "5s", "2min", "1.5s"); "0" alone means
// zero (a setting turned off). A duration without a unit is refused, so that "5" is never
// silently five nanoseconds or five hours.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace respool_cli {

// ns, us, ms, s, min, h; nullopt when malformed or negative.
std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text);

// The shortest exact form, for defaults in --help and for banners: "250ms", "5s", "2min", "0".
std::string format_duration(std::chrono::nanoseconds d);

// The validator message for CLI11: empty when `text` parses.
std::string duration_error(const std::string& text);

}  // namespace respool_cli
