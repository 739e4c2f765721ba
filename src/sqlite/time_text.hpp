// The text form of a time point that sqlite::params binds and sqlite::result reads (values.cpp):
// "YYYY-MM-DD HH:MM:SS.ffffff" in UTC, and on reading SQLite's own variants. Declared here so that the
// tests can hand it texts of every length on buffers of exactly that size.
#pragma once

#include <chrono>
#include <string_view>

namespace respool::sqlite::detail {

// "YYYY-MM-DD", then ' ' or 'T' and "HH:MM[:SS[.fff...]]", then "Z" or "+HH:MM"/"-HH:MM"; false for
// anything else, and for a time system_clock cannot hold (outside about 1678-2262 with libstdc++'s
// nanoseconds). Reads no byte outside `s`.
bool parse_time(std::string_view s, std::chrono::system_clock::time_point& out);

}  // namespace respool::sqlite::detail
