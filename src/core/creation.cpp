// Creation on behalf of the queue and the floor: factory outcomes, back-off after failures, the
// inline creation of try_acquire.
#include "pool_core.hpp"

#include <cassert>

namespace respool::core {

// ---- creation --------------------------------------------------------------------------------

void pool_core::creation_succeeded(resource* r, effects& fx) {
    assert(creating_ > 0 && active_ > 0);
    --creating_;
    --active_;
    ++c_.creations;
    if (closed_) {
        destroy(r, destroy_reason::closed, fx);
        return;
    }
    floor_blocked_ = false;
    failures_in_row_ = 0;
    r->idle_since = now_;
    r->generation = generation_;
    if (drop_unwanted(r, fx)) {  // beyond a max lowered while it was being made
        note_creation_over(fx);
        return;
    }
    r->made = next_seq_++;  // before_acquire skips it only for an acquire that arrived before
    idle_.push_back(r);
    reserve_for_parked(fx);
    maybe_create(fx);
    note_creation_over(fx);
}

// Counts a failed factory call (already uncounted) and, with a retry delay configured, holds creations
// back.
void pool_core::creation_failure(effects& fx) {
    ++c_.create_failures;
    ++failures_in_row_;
    if (shrinking_ && total() <= cfg_.max) {  // back within a lowered max without a destroy
        shrinking_ = false;
        refresh_fast_paths();
    }
    report_creation_failure(fx);
    if (closed_ || cfg_.retry_initial <= duration::zero()) return;
    duration d = cfg_.retry_initial;
    for (std::uint32_t i = 1; i < failures_in_row_ && d < cfg_.retry_max; ++i)
        d = d > duration::max() / 2 ? duration::max() : d * 2;  // a huge cap must not make the delay wrap
    if (cfg_.retry_max > duration::zero() && d > cfg_.retry_max) d = cfg_.retry_max;
    if (!backoff_active_) {
        backoff_active_ = true;
        ++c_.creation_retries;
        fx.push(effect::retry_after(d));
    }
}

waiter* pool_core::creation_failed(effects& fx) {
    assert(creating_ > 0 && active_ > 0);
    --creating_;
    --active_;
    creation_failure(fx);
    if (warming_) {  // the pre-warm is over at its first failure
        warming_ = false;
        fx.push(effect::ready(status::create_failed));
    }
    if (closed_) {
        note_gone(fx);
        return nullptr;
    }
    waiter* w = fifo_.head;
    if (w)
        fail(*w, status::create_failed, fx);  // errors surface at once, not as timeouts
    else if (!backoff_active_)
        floor_blocked_ = true;
    maybe_create(fx);
    return w;
}

void pool_core::backoff_elapsed(effects& fx) {
    backoff_active_ = false;
    maybe_create(fx);
}

void pool_core::retry_now(effects& fx) {
    failures_in_row_ = 0;
    floor_blocked_ = false;
    backoff_active_ = false;
    maybe_create(fx);
}

bool pool_core::begin_inline_creation() noexcept {
    if (closed_ || circuit_ == circuit::open || probes_exhausted() || backoff_active_ || parked_ != 0)
        return false;
    if (total() >= cfg_.max || creating_ >= cfg_.max_concurrent_creations) return false;
    ++creating_;
    ++active_;
    return true;
}

status pool_core::inline_created(resource* r, effects& fx, const site& where) {
    --creating_;
    ++c_.creations;
    failures_in_row_ = 0;
    if (closed_) {
        --active_;
        destroy(r, destroy_reason::closed, fx);
        return status::closed;
    }
    --active_;  // lend() counts it again, with the rest of a take
    r->generation = generation_;
    lend(r, newcomer, where, false, false);  // made for this take: no check
    // A waiter that parked meanwhile counted this creation as its own: it needs one now.
    maybe_create(fx);
    note_creation_over(fx);
    return status::ok;
}

void pool_core::inline_failed(effects& fx) {
    --creating_;
    --active_;
    creation_failure(fx);
    maybe_create(fx);  // someone may have parked meanwhile; this place is free again
    note_creation_over(fx);
    note_gone(fx);
}

}  // namespace respool::core
