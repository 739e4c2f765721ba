// The one reader of ISO 8601 time texts, as PostgreSQL (DateStyle ISO) and SQLite write them, for both
// database layers: "YYYY-MM-DD", then optionally ' ' or 'T' and "HH:MM[:SS[.fff...]]", then optionally
// "Z" or a UTC offset. The two databases spell the offset differently, so the caller says which form.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace respool::detail {

enum class iso_offset {
    hh_mm,     // "+HH:MM" exactly (SQLite's date functions read no other form)
    hh_mm_ss,  // "+HH", "+HH:MM" or "+HH:MM:SS" (PostgreSQL writes the shortest; seconds for old local times)
};

struct iso_time_syntax {
    iso_offset offset;
    int fraction_digits;  // the digits of a fraction that count (6: microseconds); later ones are ignored
};

// The time point, or nullopt for any other text (a field out of range such as month 13 or hour 24, a
// character where a digit belongs, a cut text) and for a time system_clock cannot hold (outside about
// 1678-2262 with libstdc++'s nanoseconds). A time without an offset is UTC. Reads no byte outside `s`.
std::optional<std::chrono::system_clock::time_point> parse_iso_time(std::string_view s,
                                                                    iso_time_syntax syntax);

}  // namespace respool::detail
