// Durations as people read them in error messages and logs: "250ms", "12.5s".
#pragma once

#include <chrono>
#include <cstdlib>
#include <string>

namespace respool::detail {

inline std::string duration_text(std::chrono::steady_clock::duration d) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
    if (ms >= 10000 || ms <= -10000)
        return std::to_string(ms / 1000) + "." + std::to_string(std::abs(ms % 1000) / 100) + "s";
    return std::to_string(ms) + "ms";
}

}  // namespace respool::detail
