// Why the pool destroyed a resource (observer events, log lines, the core's destroy effects).
#pragma once

namespace respool {

enum class destroy_reason {
    closed,        // idle at close, or returned / created after it
    broken,        // before_release said no
    poisoned,      // the holder poisoned the lease
    rejected,      // before_acquire (or the validation on borrow) said no
    unhealthy,     // the background health check said no
    idle_timeout,  // evicted: idle longer than idle_ttl
    lifetime,      // retired: older than max_lifetime
    replaced,      // made before retire_all()
    surplus,       // beyond a max lowered by set_max()
};
const char* to_string(destroy_reason) noexcept;

}  // namespace respool
