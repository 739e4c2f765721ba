// Durations as people read and write them in messages, logs and --help: "250ms", "5s", "2min", "-1ms".
// Not API: shared by the library's messages and the respool CLI, so that both spell a duration alike.
#pragma once

#include <chrono>
#include <string>

namespace respool::detail {

// The shortest exact form: the value as a whole number of the largest unit that divides it (h, min, s,
// ms, us, ns); zero is "0ms". A caller that wants an approximation rounds first (e.g. to milliseconds).
inline std::string duration_text(std::chrono::nanoseconds d) {
    const long long n = d.count();
    if (n == 0) return "0ms";
    static constexpr struct {
        const char* name;
        long long factor;
    } units[] = {{"h", 3600'000'000'000LL}, {"min", 60'000'000'000LL}, {"s", 1'000'000'000LL},
                 {"ms", 1'000'000LL},       {"us", 1'000LL},           {"ns", 1LL}};
    for (const auto& u : units)
        if (n % u.factor == 0) return std::to_string(n / u.factor) + u.name;
    return std::to_string(n) + "ns";  // not reached: every count is a whole number of ns
}

}  // namespace respool::detail
