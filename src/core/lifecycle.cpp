// Background work on idle resources: the health check, one resource at a time, and housekeeping
// (eviction, lifetimes, leak reports, the min floor).
#include "pool_core.hpp"

namespace respool::core {

// ---- health check ----------------------------------------------------------------------------

resource* pool_core::begin_check() noexcept {
    if (closed_ || idle_.size() <= reserved_) return nullptr;  // reserved resources are spoken for
    resource* r = idle_.front();
    if (r->checked_round == health_round_) return nullptr;  // everything idle at the round's start was seen
    idle_.pop_front();
    r->checked_round = health_round_;
    ++active_;
    return r;
}

void pool_core::end_check(resource* r, bool healthy, effects& fx) {
    --active_;
    if (!healthy) {
        ++c_.unhealthy;
        destroy(r, destroy_reason::unhealthy, fx);
        maybe_create(fx);
        return;
    }
    if (closed_) {
        destroy(r, destroy_reason::closed, fx);
        return;
    }
    if (drop_unwanted(r, fx)) return;
    idle_.push_back(r);
    reserve_for_parked(fx);
}

void pool_core::replenish(effects& fx) {
    floor_blocked_ = false;
    maybe_create(fx);
}

void pool_core::housekeep(time_point now, effects& fx) {
    set_now(now);
    if (closed_) return;
    // Idle resources in idle order; survivors keep their order. Reserved places are never taken.
    const std::size_t n = idle_.size();
    for (std::size_t i = 0; i < n; ++i) {
        resource* r = idle_.pop_front();
        const bool spare = idle_.size() >= reserved_;  // removing r leaves every reservation backed
        if (spare && r->expires_at != time_point{} && r->expires_at <= now_) {
            ++c_.retired;
            destroy(r, destroy_reason::lifetime, fx);
        } else if (spare && cfg_.idle_ttl > duration::zero() &&
                   deadline_after(r->idle_since, cfg_.idle_ttl) <= now_ && total() >= cfg_.min) {
            ++c_.evicted;
            destroy(r, destroy_reason::idle_timeout, fx);
        } else {
            idle_.push_back(r);
        }
    }
    if (cfg_.acquire_ttl > duration::zero()) {
        for (resource* r = leased_head_; r; r = r->lnext) {
            if (!r->leak_reported && deadline_after(r->leased_at, cfg_.acquire_ttl) <= now_) {
                r->leak_reported = true;
                ++c_.leaks;
                fx.push(effect::leak_suspected(r, now_ - r->leased_at));
            }
        }
    }
    replenish(fx);  // re-warm to min (a running back-off still holds creations back)
}

}  // namespace respool::core
