// The names of circuit_state, as stats, metrics, /health and log lines print them.
#include <respool/stats.hpp>

namespace respool {

const char* to_string(circuit_state s) noexcept {
    switch (s) {
    case circuit_state::closed: return "closed";
    case circuit_state::open: return "open";
    case circuit_state::half_open: return "half_open";
    }
    return "unknown";
}

}  // namespace respool
