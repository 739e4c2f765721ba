// Timer work on the pool's executor: the alarm's dispatch, housekeeping, creation back-off, health checks.

#include "driver_state.hpp"

namespace respool::detail {

// ---- timers: one alarm per pool; the work runs on the pool's executor ------------------------

void pool_impl::on_alarm() noexcept {
    core::effects fx;
    std::vector<timer_list::callback> due;
    {
        guard g(*state_);
        state_->alarm_set = false;
        const auto t = now();
        state_->core.set_now(t);
        state_->core.expire(t, fx);
        state_->timers.take_due(t, due);
        state_->rearm();
    }
    apply(fx);
    for (auto& f : due) f();
}

void pool_impl::arm_housekeeping() noexcept {
    if (state_->core.closed()) return;
    try {
        state_->housekeeping_timer = state_->schedule(housekeeping_period_, [this] { housekeep_tick(); });
    } catch (...) {
    }
}

void pool_impl::housekeep_tick() noexcept {
    core::effects fx;
    {
        guard g(*state_);
        state_->housekeeping_timer = {};
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
    const auto delay = std::chrono::duration_cast<duration>(d * jitter(state_->rng));
    state_->cancel_timer(state_->retry_timer);
    try {
        state_->retry_timer = state_->schedule(delay, [this] {
            core::effects fx;
            {
                guard g2(*state_);
                state_->retry_timer = {};
                state_->core.backoff_elapsed(fx);
            }
            apply(fx);
        });
    } catch (...) {
    }
}

// ---- health check ----------------------------------------------------------------------------

void pool_impl::arm_health_timer() noexcept {
    if (state_->core.closed()) return;
    try {
        state_->health_timer = state_->schedule(opts_.healthcheck_interval, [this] { health_tick(); });
    } catch (...) {
    }
}

void pool_impl::health_tick() noexcept {
    core::effects fx;
    {
        guard g(*state_);
        state_->health_timer = {};
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
