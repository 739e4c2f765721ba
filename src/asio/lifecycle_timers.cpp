// Timer work on the pool's executor: the alarm's dispatch, housekeeping, creation back-off, health checks.

#include "driver_state.hpp"

namespace respool::detail {

// ---- timers: one alarm per pool; the work runs on the pool's executor ------------------------

namespace {
// Clears a recurring timer that is due at `t`; true when it was.
bool take_if_due(std::optional<clock::time_point>& at, clock::time_point t) noexcept {
    if (!at || *at > t) return false;
    at.reset();
    return true;
}
}  // namespace

// Allocates nothing of its own: the due one-shot timers are taken one at a time, and the recurring
// ones are a due time each.
void pool_impl::on_alarm() noexcept {
    core::effects fx;
    bool health, housekeeping, retry;
    clock::time_point t;
    {
        guard g(*state_);
        state_->alarm_set = false;
        t = now();
        state_->core.set_now(t);
        state_->core.expire(t, fx);
        health = take_if_due(state_->health_at, t);
        housekeeping = take_if_due(state_->housekeeping_at, t);
        retry = take_if_due(state_->retry_at, t);
    }
    apply(fx);
    for (;;) {
        timer_list::callback f;
        {
            guard g(*state_);
            f = state_->timers.pop_due(t);
            if (!f) {
                state_->rearm();
                break;
            }
        }
        f();
    }
    if (retry) retry_elapsed();
    if (housekeeping) housekeep_tick();
    if (health) health_tick();
}

void pool_impl::arm_housekeeping() noexcept {
    if (!state_->core.closed()) state_->arm(state_->housekeeping_at, housekeeping_period_);
}

void pool_impl::housekeep_tick() noexcept {
    core::effects fx;
    {
        guard g(*state_);
        const auto t = now();
        state_->core.set_now(t);
        if (state_->cache) {  // cached resources age and expire in the core's idle set
            state_->cache->coarse_now.store(t.time_since_epoch().count(), std::memory_order_relaxed);
            state_->drain_cache_locked(fx);
        }
        state_->core.housekeep(t, fx);
        arm_housekeeping();
    }
    apply(fx);
    release_self_if_drained();
}

void pool_impl::arm_retry(duration d) noexcept {
    // +-20 % jitter: pools restarted together do not retry in lock-step.
    std::uniform_real_distribution<double> jitter(0.8, 1.2);
    guard g(*state_);
    if (state_->core.closed()) return;
    state_->arm(state_->retry_at, std::chrono::duration_cast<duration>(d * jitter(state_->rng)));
}

void pool_impl::retry_elapsed() noexcept {
    core::effects fx;
    {
        guard g(*state_);
        state_->core.backoff_elapsed(fx);
    }
    apply(fx);
}

// ---- health check ----------------------------------------------------------------------------

void pool_impl::arm_health_timer() noexcept {
    if (!state_->core.closed()) state_->arm(state_->health_at, opts_.healthcheck_interval);
}

void pool_impl::health_tick() noexcept {
    core::effects fx;
    {
        guard g(*state_);
        state_->core.begin_health_round();
        state_->core.set_now(now());
        if (state_->cache) state_->drain_cache_locked(fx);  // cached resources are idle: they are checked too
    }
    apply(fx);
    health_step();
}

// One resource at a time, so acquirers keep finding the rest of the idle set. A coroutine check is
// bounded by check_timeout: a stuck one fails there and the round goes on with the next resource.
void pool_impl::health_step() noexcept {
    for (;;) {
        resource_node* n;
        std::shared_ptr<hook_run> run;
        {
            guard g(*state_);
            n = node_of(state_->core.begin_check());
            if (n && healthcheck_ == hook_mode::async) {
                try {
                    run = begin_run_locked(run_kind::healthcheck, n, opts_.check_timeout);
                    run->ctx = context_of(*n, hook_reason::in_background);
                } catch (...) {
                }
            }
        }
        if (!n) break;
        if (run) {
            try {
                hooks_->check_async(
                    check_kind::healthcheck, *n, run->ctx, executor, run->signal.slot(),
                    [self = shared_from_this(), run](bool ok) { self->health_done(run, ok); });
            } catch (...) {
                health_done(run, false);
            }
            return;  // health_done (or hook_overdue) goes on with the next resource
        }
        const bool ok =
            healthcheck_ == hook_mode::sync && check(check_kind::healthcheck, *n, hook_reason::in_background);
        core::effects fx;
        {
            guard g(*state_);
            state_->core.end_check(core_of(n), ok, fx);
        }
        apply(fx);
    }
    core::effects fx;
    {
        guard g(*state_);
        state_->core.replenish(fx);  // replacements up to min
        arm_health_timer();
    }
    apply(fx);
    release_self_if_drained();
}

void pool_impl::health_done(const std::shared_ptr<hook_run>& run, bool ok) noexcept {
    core::effects fx;
    bool live;
    {
        guard g(*state_);
        live = end_run_locked(*run);
        if (live) state_->core.end_check(core_of(run->n), ok, fx);
    }
    if (!live) {  // failed at check_timeout or close: the round went on then
        destroy_node(run->n, run->why);
        return release_self_if_drained();
    }
    apply(fx);
    health_step();
}

}  // namespace respool::detail
