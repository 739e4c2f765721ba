// The service's log: one line per event on standard error, with a UTC timestamp and a level,
//   2026-11-26T00:36:28.123Z warn  respool serve: database unreachable: connection refused: ...
// filtered by --log-level (error, warn, info, debug; default info). Lines are written whole (one
// write per line, under a lock), so the workers' lines never interleave. Callers keep credentials
// out of what they log (connection strings go through pg::masked, as everywhere).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace respool_cli::log {

enum class level { error = 0, warn = 1, info = 2, debug = 3 };

// "error", "warn", "info", "debug" (nothing else: the flag's validator names the choices).
std::optional<level> parse_level(std::string_view text);
std::string level_error(const std::string& text);  // empty when parse_level accepts it

void set_level(level l) noexcept;
[[nodiscard]] bool enabled(level l) noexcept;

// Writes one line (when `l` is enabled); line breaks and tabs inside `message` become spaces, so that
// one event is one line whatever a driver's message holds.
void write(level l, std::string_view message);

inline void error(std::string_view m) {
    write(level::error, m);
}
inline void warn(std::string_view m) {
    write(level::warn, m);
}
inline void info(std::string_view m) {
    write(level::info, m);
}
inline void debug(std::string_view m) {
    write(level::debug, m);
}

// `text` on one line: CR, LF and TAB runs become one space, trailing blanks go.
std::string one_line(std::string_view text);
// RFC 3339 in UTC with milliseconds: 2026-11-26T00:36:28.123Z.
std::string rfc3339(std::chrono::system_clock::time_point t);

}  // namespace respool_cli::log
