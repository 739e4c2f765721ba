// Deadline arithmetic. `now + timeout` overflows the clock's signed count for a huge timeout (such as
// duration::max(), meaning "wait as long as it takes"): the sum wraps to the past and the acquire times
// out at once. Every deadline the core derives from a timeout goes through deadline_after, which
// saturates instead; time_point::max() then stands for "a very long time".
#pragma once

#include "nodes.hpp"

namespace respool::core {

// now + d, clamped to [time_point::min(), time_point::max()].
[[nodiscard]] constexpr time_point deadline_after(time_point now, duration d) noexcept {
    const duration since = now.time_since_epoch();
    if (d > duration::zero() && since > duration::max() - d) return time_point::max();
    if (d < duration::zero() && since < duration::min() - d) return time_point::min();
    return now + d;
}

}  // namespace respool::core
