#include "conversions.hpp"

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
    static_cast<pool_counters&>(p) = s.c;
    p.circuit = s.circuit_state;
    p.closed = s.closed;
    return p;
}

}  // namespace respool::detail
