#include "conversions.hpp"

namespace respool {

const char* to_string(destroy_reason r) noexcept { return core::to_string(detail::to_core(r)); }

}  // namespace respool

namespace respool::detail {

std::string exception_message(const std::exception_ptr& e, const error_code& ec) {
    if (e) {
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& x) {
            return x.what();
        } catch (...) {
        }
    }
    return ec.message();
}

pool_stats to_stats(const core::snapshot& s) noexcept {
    pool_stats p;
    p.idle = s.idle;
    p.active = s.active;
    p.total = s.total;
    p.waiting = s.waiting;
    p.max = s.max;
    p.reserved = s.reserved;
    p.creating = s.creating;
    p.acquires = s.c.acquires;
    p.waits = s.c.waits;
    p.timeouts = s.c.timeouts;
    p.cancellations = s.c.cancellations;
    p.creations = s.c.creations;
    p.create_failures = s.c.create_failures;
    p.destructions = s.c.destructions;
    p.poisoned = s.c.poisoned;
    p.unavailable_rejections = s.c.unavailable_rejections;
    p.exhausted_rejections = s.c.exhausted_rejections;
    p.rejected = s.c.rejected;
    p.broken = s.c.broken;
    p.unhealthy = s.c.unhealthy;
    p.evicted = s.c.evicted;
    p.retired = s.c.retired;
    p.leaks = s.c.leaks;
    p.creation_retries = s.c.creation_retries;
    p.circuit_opened = s.c.circuit_opened;
    p.circuit_half_opened = s.c.circuit_half_opened;
    p.circuit_closed = s.c.circuit_closed;
    p.probes = s.c.probes;
    p.circuit = to_public(s.circuit_state);
    p.closed = s.closed;
    return p;
}

}  // namespace respool::detail
