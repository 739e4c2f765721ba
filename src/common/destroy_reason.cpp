// The names of destroy_reason, as observer events and log lines print them.
#include <respool/destroy_reason.hpp>

namespace respool {

const char* to_string(destroy_reason r) noexcept {
    switch (r) {
    case destroy_reason::closed: return "closed";
    case destroy_reason::broken: return "broken";
    case destroy_reason::poisoned: return "poisoned";
    case destroy_reason::rejected: return "rejected";
    case destroy_reason::unhealthy: return "unhealthy";
    case destroy_reason::idle_timeout: return "idle_timeout";
    case destroy_reason::lifetime: return "lifetime";
    case destroy_reason::replaced: return "replaced";
    case destroy_reason::surplus: return "surplus";
    }
    return "unknown";
}

}  // namespace respool
