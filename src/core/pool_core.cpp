#include "pool_core.hpp"

#include <cassert>

namespace respool::core {

pool_core::pool_core(const config& cfg) : cfg_(cfg), idle_(cfg.min < 8 ? 8 : cfg.min) {
    assert(cfg.max >= 1 && cfg.min <= cfg.max && cfg.max_concurrent_creations >= 1);
    cfg_.track_leases = cfg.acquire_ttl > duration::zero();
    cfg_.stamp_idle = cfg.stamp_idle || cfg.idle_ttl > duration::zero() || cfg.validate_on_borrow;
    refresh_fast_paths();
}

// ---- helpers ---------------------------------------------------------------------------------

resource* pool_core::pop_idle() noexcept {
    return cfg_.lifo ? idle_.pop_back() : idle_.pop_front();
}

void pool_core::destroy(resource* r, destroy_reason why, effects& fx) {
    ++c_.destructions;
    fx.push(effect::destroy(r, why));
    bool changed = false;
    if (stale_ != 0 && r->generation != generation_) changed = --stale_ == 0;
    if (shrinking_ && total() <= cfg_.max) {
        shrinking_ = false;
        changed = true;
    }
    if (changed) refresh_fast_paths();  // the inline paths may serve again
    note_gone(fx);
}

// A closed pool whose last resource (or creation) is gone is drained: said once.
void pool_core::note_gone(effects& fx) {
    if (closed_ && !drained_ && total() == 0) {
        drained_ = true;
        fx.push(effect::drained());
    }
}

// The pre-warm is over when no creation runs any more (a failure ends it at once: creation_failed).
void pool_core::note_creation_over(effects& fx) {
    if (warming_ && creating_ == 0) {
        warming_ = false;
        fx.push(effect::ready(status::ok));
    }
}

void pool_core::start(effects& fx) {
    replenish(fx);
    note_creation_over(fx);
}

// A resource about to go back to idle (not counted at this point) that must go instead: made before
// retire_all(), or beyond a max that set_max() lowered. Destroys it and serves the queue.
bool pool_core::drop_unwanted(resource* r, effects& fx) {
    if (r->generation != generation_) {
        ++c_.replaced;
        destroy(r, destroy_reason::replaced, fx);
    } else if (total() >= cfg_.max) {
        ++c_.surplus;
        destroy(r, destroy_reason::surplus, fx);
        return true;  // no replacement: the pool is shrinking
    } else {
        return false;
    }
    maybe_create(fx);
    return true;
}

// Idle resources that retire_all() or a lowered max condemned while a reservation kept them idle (a
// woken waiter held it, then left): destroyed now, in idle order, never leaving a reservation unbacked.
void pool_core::shed_unwanted(effects& fx) {
    if (stale_ == 0 && !shrinking_) return;
    const std::size_t n = idle_.size();
    for (std::size_t i = 0; i < n; ++i) {
        resource* r = idle_.pop_front();
        if (idle_.size() >= reserved_ && drop_unwanted(r, fx)) continue;
        idle_.push_back(r);
    }
}

void pool_core::report_creation_failure(effects& fx) {
    if (cfg_.reports) fx.push(effect::report_creation_failure());
}

void pool_core::report_resource_failure(destroy_reason why, effects& fx) {
    if (cfg_.reports) fx.push(effect::report_resource_failure(why));
}

// Every idle resource beyond the reservations goes to the oldest parked waiter.
void pool_core::reserve_for_parked(effects& fx) {
    while (fifo_.head && idle_.size() > reserved_) {
        waiter& w = *fifo_.head;
        fifo_.remove(w);
        --parked_;
        reserved_list_.push_back(w);
        ++reserved_;
        w.state = waiter_state::reserved;
        fx.push(effect::wake(&w));
    }
}

// Creation on behalf of the queue (and of the min floor), counted before the factory runs.
void pool_core::maybe_create(effects& fx) {
    if (closed_ || circuit_ == circuit::open || backoff_active_) return;
    while (total() < cfg_.max && creating_ < cfg_.max_concurrent_creations &&
           (creating_ < parked_ || (!floor_blocked_ && total() < cfg_.min))) {
        ++creating_;
        ++active_;
        fx.push(effect::create());
    }
}

void pool_core::fail(waiter& w, status st, effects& fx) {
    deadlines_.erase(w);
    w.result = st;
    if (w.state == waiter_state::parked) {
        fifo_.remove(w);
        --parked_;
        w.state = waiter_state::failed;
        fx.push(effect::fail_wake(&w, st));
    } else if (w.state == waiter_state::checking) {
        resource* r = w.checking;
        drop_checker(w);
        r->orphaned = true;  // the verdict decides only its fate now
        w.state = waiter_state::failed;
        fx.push(effect::fail_wake(&w, st));
    } else {
        assert(w.state == waiter_state::reserved);
        reserved_list_.remove(w);
        --reserved_;
        w.state = waiter_state::failed;  // its resumption is already on its way
    }
}

void pool_core::fail_all(status st, effects& fx) {
    while (fifo_.head) {
        if (st == status::unavailable) ++c_.unavailable_rejections;
        fail(*fifo_.head, st, fx);
    }
    while (reserved_list_.head) {
        if (st == status::unavailable) ++c_.unavailable_rejections;
        fail(*reserved_list_.head, st, fx);
    }
    // A waiter whose resource is under its checks already passed the circuit: only close ends it.
    if (st == status::closed)
        while (checking_list_.head) fail(*checking_list_.head, st, fx);
}

// w waits for the verdict on r.
void pool_core::hold_for_check(waiter& w, resource* r) noexcept {
    w.state = waiter_state::checking;
    w.checking = r;
    r->checker = &w;
    r->orphaned = false;
    checking_list_.push_back(w);
    ++checking_;
}

// w no longer waits for a verdict (it has one, or it left).
void pool_core::drop_checker(waiter& w) noexcept {
    checking_list_.remove(w);
    --checking_;
    w.checking->checker = nullptr;
    w.checking = nullptr;
}

// ---- acquire ---------------------------------------------------------------------------------

// A resource leaves idle for a caller that arrived at `arrival`: counted active, linked into the
// leased list (leak detection), with the checks it must pass first (`checks`: false for one created
// inline for this very take).
pool_core::take_result pool_core::lend(resource* r, std::uint64_t arrival, const site& where, bool at_once,
                                       bool checks) noexcept {
    ++active_;
    if (circuit_ == circuit::half_open) {
        ++probes_admitted_;
        ++c_.probes;
    }
    if (cfg_.track_leases) {
        r->leased = true;
        r->leak_reported = false;
        r->leased_at = now_;
        r->lease_site = where;
        r->lprev = nullptr;
        r->lnext = leased_head_;
        if (leased_head_) leased_head_->lprev = r;
        leased_head_ = r;
    }
    take_result t{r, status::ok};
    std::uint8_t due = 0;
    if (cfg_.before_acquire || cfg_.validate_on_borrow) {  // only the checks read or write the resource
        // before_acquire runs on every resource taken from idle, pre-warmed ones included, except
        // one made for this very acquire: never lent and made after it arrived (the replacement of
        // one its check refused, or one made while it waited). So a hook that always says no costs
        // one creation per refusal instead of making a take create and reject forever. Validation
        // depends on idle time alone: a pre-warmed resource that idled for an hour is pinged, one
        // created for this take (idle 0) is not.
        if (checks && cfg_.validate_on_borrow && now_ - r->idle_since > cfg_.validate_after)
            due |= static_cast<std::uint8_t>(borrow_check::validate);
        if (checks && cfg_.before_acquire && r->made <= arrival)
            due |= static_cast<std::uint8_t>(borrow_check::before_acquire);
        r->checks_due = due;
        r->made = 0;  // lent: whoever takes it next did not get it made
    }
    if (due == 0) {
        ++c_.acquires;  // lent now; otherwise when its last check passes
        c_.immediate_takes += at_once;
    } else {
        r->taken_at_once = at_once;
        t.check = next_check(due);
    }
    return t;
}

void pool_core::unlend(resource* r) noexcept {
    if (!cfg_.track_leases || !r->leased) return;
    r->leased = false;
    if (r->lprev)
        r->lprev->lnext = r->lnext;
    else
        leased_head_ = r->lnext;
    if (r->lnext) r->lnext->lprev = r->lprev;
    r->lprev = r->lnext = nullptr;
}

pool_core::take_result pool_core::try_take(std::uint64_t arrival, bool at_once, const site& where) noexcept {
    if (closed_) return {nullptr, status::closed};
    if (circuit_ == circuit::open || probes_exhausted()) {
        ++c_.unavailable_rejections;
        return {nullptr, status::unavailable};
    }
    if (idle_.size() > reserved_) return lend(pop_idle(), arrival, where, at_once);
    return {};
}

status pool_core::park(waiter& w, time_point now, std::optional<time_point> deadline,
                       std::optional<duration> timeout, effects& fx) {
    assert(w.state == waiter_state::none);
    if (cfg_.max_waiters != 0 && waiting() >= cfg_.max_waiters) {
        ++c_.exhausted_rejections;
        return status::exhausted;
    }
    if (deadline && *deadline <= now) {
        ++c_.timeouts;
        return status::timeout;
    }
    w.seq = next_seq_++;
    w.has_deadline = deadline.has_value();
    if (deadline) {
        w.deadline = *deadline;
        // A span that produced the deadline is > 0 here (the deadline is after now); zero: absolute.
        w.span = timeout && deadline_after(now, *timeout) == *deadline ? *timeout : duration::zero();
        deadlines_.push(w);  // may allocate (and throw): before anything else changes
    }
    w.state = waiter_state::parked;
    w.result = status::ok;
    if (!w.counted_wait) {
        w.counted_wait = true;
        ++c_.waits;
    }
    fifo_.push_back(w);
    ++parked_;
    maybe_create(fx);
    return status::ok;
}

status pool_core::park(waiter& w, time_point now, std::optional<duration> timeout, effects& fx) {
    std::optional<time_point> deadline;
    if (timeout) deadline = deadline_after(now, *timeout);
    return park(w, now, deadline, timeout, fx);
}

pool_core::take_result pool_core::resume(waiter& w, effects& fx) {
    if (w.state == waiter_state::failed) {
        w.state = waiter_state::none;
        return {nullptr, w.result};
    }
    assert(w.state == waiter_state::reserved);
    assert(idle_.size() >= reserved_ && reserved_ > 0);
    reserved_list_.remove(w);
    --reserved_;
    w.state = waiter_state::none;
    if (probes_exhausted()) {
        deadlines_.erase(w);
        ++c_.unavailable_rejections;
        reserve_for_parked(fx);  // its place moves on (to the same verdict, unless the state changes)
        shed_unwanted(fx);
        return {nullptr, status::unavailable};
    }
    const take_result t = lend(pop_idle(), w.seq, w.where, false);
    if (t.check != borrow_check::none)
        hold_for_check(w, t.r);  // its deadline goes on running
    else
        deadlines_.erase(w);
    return t;
}

void pool_core::wait_for_check(waiter& w, resource* r, time_point now, std::optional<time_point> deadline,
                               std::optional<duration> timeout) {
    assert(w.state == waiter_state::none && r->checks_due != 0 && !r->checker);
    w.seq = next_seq_++;  // its arrival, should a rejection make it park
    w.has_deadline = deadline.has_value();
    w.result = status::ok;
    if (deadline) {
        w.deadline = *deadline;
        w.span = timeout && deadline_after(now, *timeout) == *deadline ? *timeout : duration::zero();
        deadlines_.push(w);  // may allocate (and throw): before anything else changes
    }
    hold_for_check(w, r);
}

pool_core::verdict pool_core::check_done(resource* r, bool passed, time_point now, effects& fx) {
    set_now(now);
    assert(r->checks_due != 0);
    waiter* w = r->checker;
    const bool orphaned = r->orphaned;
    r->orphaned = false;
    r->checks_due &= static_cast<std::uint8_t>(r->checks_due - 1);  // this check is done
    if (w) drop_checker(*w);
    if (!passed) {
        r->checks_due = 0;
        reject(r, fx);
        if (orphaned) return {};
        if (!w) return {nullptr, {nullptr, status::ok}};  // a synchronous caller takes again itself
        return {w, retry(*w, now, fx)};
    }
    if (orphaned) {  // its borrower left: back to idle, its other checks are moot
        r->checks_due = 0;
        give_back(r, fx);
        return {};
    }
    if (r->checks_due != 0) {
        if (w) hold_for_check(*w, r);
        return {w, {r, status::ok, next_check(r->checks_due)}};
    }
    if (w) {
        deadlines_.erase(*w);
        w->state = waiter_state::none;
    }
    const status st = confirm_take(r, fx);
    return {w, {st == status::ok ? r : nullptr, st}};
}

// After a check said no: steps 1-3 again for w (which left the checking list and is still in the
// deadline index); it re-parks in arrival order when nothing is free, with the deadline it came with
// (timeout when that has passed by now).
pool_core::take_result pool_core::retry(waiter& w, time_point now, effects& fx) {
    take_result t = try_take(w.seq, !w.counted_wait, w.where);
    if (t.st == status::ok && !t.r && w.has_deadline && w.deadline <= now) {
        ++c_.timeouts;
        t.st = status::timeout;
    }
    if (t.st != status::ok || (t.r && t.check == borrow_check::none)) {
        deadlines_.erase(w);
        w.state = waiter_state::none;
        return t;
    }
    if (t.r) {
        hold_for_check(w, t.r);
        return t;
    }
    w.state = waiter_state::parked;
    if (!w.counted_wait) {  // a newcomer whose resource was refused waits now
        w.counted_wait = true;
        ++c_.waits;
    }
    fifo_.insert_by_seq(w);
    ++parked_;
    maybe_create(fx);
    return t;
}

bool pool_core::cancel(waiter& w, effects& fx) {
    if (w.state != waiter_state::parked && w.state != waiter_state::reserved &&
        w.state != waiter_state::checking)
        return false;
    const bool had_reservation = w.state == waiter_state::reserved;
    ++c_.cancellations;
    fail(w, status::cancelled, fx);
    if (had_reservation) {
        reserve_for_parked(fx);  // hand the reservation on
        shed_unwanted(fx);
    }
    return true;
}

void pool_core::expire(time_point now, effects& fx) {
    bool handed_on = false;
    while (waiter* w = deadlines_.due(now)) {  // fail() takes it out of the index
        handed_on |= w->state == waiter_state::reserved;
        ++c_.timeouts;
        fail(*w, status::timeout, fx);
    }
    if (handed_on) {
        reserve_for_parked(fx);
        shed_unwanted(fx);
    }
}

// Every check passed: the acquire counts; a pool closed meanwhile destroys the resource instead.
status pool_core::confirm_take(resource* r, effects& fx) {
    if (closed_) {
        unlend(r);
        --active_;
        destroy(r, destroy_reason::closed, fx);
        return status::closed;
    }
    ++c_.acquires;
    c_.immediate_takes += r->taken_at_once;
    return status::ok;
}

// A check said no: destroyed; the freed capacity serves the queue.
void pool_core::reject(resource* r, effects& fx) {
    unlend(r);
    --active_;
    ++c_.rejected;
    destroy(r, destroy_reason::rejected, fx);
    report_resource_failure(destroy_reason::rejected, fx);
    maybe_create(fx);
}

// Taken but never handed out (its borrower left during a check): back to idle, no reports.
void pool_core::give_back(resource* r, effects& fx) {
    unlend(r);
    --active_;
    if (closed_) {
        destroy(r, destroy_reason::closed, fx);
        return;
    }
    if (drop_unwanted(r, fx)) return;
    if (cfg_.lifo)  // it was never used: back where it was taken from, first in line again
        idle_.push_back(r);
    else
        idle_.push_front(r);
    reserve_for_parked(fx);
}

// ---- release ---------------------------------------------------------------------------------

void pool_core::release(resource* r, release_kind kind, effects& fx) {
    assert(active_ > 0);
    --active_;
    if (cfg_.track_leases && r->leased) {
        unlend(r);
        if (r->leak_reported) fx.push(effect::leak_returned(r, now_ - r->leased_at));
    }
    if (kind != release_kind::ok) {
        if (kind == release_kind::poisoned)
            ++c_.poisoned;
        else
            ++c_.broken;
        const auto why = kind == release_kind::poisoned ? destroy_reason::poisoned : destroy_reason::broken;
        destroy(r, why, fx);
        report_resource_failure(why, fx);
        maybe_create(fx);  // the freed capacity serves the oldest waiter
        return;
    }
    if (cfg_.reports) fx.push(effect::report_success());
    if (closed_) {
        destroy(r, destroy_reason::closed, fx);
        return;
    }
    if (cfg_.lifetimes && r->expires_at != time_point{} && r->expires_at <= now_) {  // never while lent
        ++c_.retired;
        destroy(r, destroy_reason::lifetime, fx);
        maybe_create(fx);
        return;
    }
    if (drop_unwanted(r, fx)) return;
    if (cfg_.stamp_idle) r->idle_since = now_;
    idle_.push_back(r);
    if (fifo_.head) reserve_for_parked(fx);
}

// ---- circuit and close -----------------------------------------------------------------------

void pool_core::set_circuit(circuit s, effects& fx, std::uint32_t probes) {
    if (s == circuit::half_open) {  // (re)entering half-open starts a fresh probe budget
        probe_limit_ = probes;
        probes_admitted_ = 0;
    }
    if (s == circuit_) return;
    circuit_ = s;
    refresh_fast_paths();
    if (s == circuit::open)
        ++c_.circuit_opened;
    else if (s == circuit::half_open)
        ++c_.circuit_half_opened;
    else
        ++c_.circuit_closed;
    fx.push(effect::circuit_changed());
    if (s == circuit::open) {
        fail_all(status::unavailable, fx);
        shed_unwanted(fx);  // places the failed waiters held
    } else {
        maybe_create(fx);
    }
}

void pool_core::set_max(std::uint32_t max, effects& fx) {
    assert(max >= 1 && max >= cfg_.min);
    cfg_.max = max;
    // Idle resources beyond it go now, least recently used first; reserved ones are spoken for, and
    // lent ones are never taken from their holders: they go when they come back.
    while (total() > max && idle_.size() > reserved_) {
        ++c_.surplus;
        destroy(idle_.pop_front(), destroy_reason::surplus, fx);
    }
    shrinking_ = total() > max;
    refresh_fast_paths();
    maybe_create(fx);  // a larger max may serve parked waiters at once
}

void pool_core::retire_all(effects& fx) {
    if (closed_) return;
    ++generation_;
    stale_ = 0;
    // Idle ones go now (a place reserved for a woken waiter is already on its way to it); lent ones,
    // and those in a check, go when they come back. Creations under way make new-generation ones.
    const std::size_t n = idle_.size() - reserved_;
    for (std::size_t i = 0; i < n; ++i) {
        ++c_.replaced;
        destroy(cfg_.lifo ? idle_.pop_back() : idle_.pop_front(), destroy_reason::replaced, fx);
    }
    stale_ = total() - creating_;  // set after the loop: destroy() counts stale ones down
    refresh_fast_paths();
    replenish(fx);  // replacements up to min, and for the queue
}

bool pool_core::close(effects& fx) {
    if (closed_) return false;
    closed_ = true;
    refresh_fast_paths();
    if (warming_) {
        warming_ = false;
        fx.push(effect::ready(status::closed));
    }
    fail_all(status::closed, fx);
    while (!idle_.empty()) destroy(idle_.pop_front(), destroy_reason::closed, fx);
    note_gone(fx);
    return true;
}

snapshot pool_core::snap() const noexcept {
    snapshot s;
    s.idle = idle();
    s.active = active_;
    s.total = total();
    s.waiting = waiting();
    s.max = cfg_.max;
    s.reserved = reserved_;
    s.creating = creating_;
    s.circuit_state = circuit_;
    s.closed = closed_;
    s.c = c_;
    return s;
}

}  // namespace respool::core
