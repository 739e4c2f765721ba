// Timer work on the pool's executor: the alarm's dispatch, housekeeping, creation back-off, health checks.

#include "engine.hpp"

namespace respool::detail {

// ---- timers: one alarm per pool; the work runs on the pool's executor ------------------------

void pool_impl::on_alarm() noexcept {
    core::effects fx;
    std::vector<timer_list::callback> due;
    {
        guard g(*s_);
        s_->alarm_set = false;
        const auto t = now();
        s_->core.set_now(t);
        s_->core.expire(t, fx);
        s_->timers.take_due(t, due);
        s_->rearm();
    }
    apply(fx);
    for (auto& f : due) f();
}

void pool_impl::arm_housekeeping() noexcept {
    if (s_->core.closed()) return;
    try {
        s_->housekeeping_timer = s_->schedule(housekeeping_period_, [this] { housekeep_tick(); });
    } catch (...) {
    }
}

void pool_impl::housekeep_tick() noexcept {
    core::effects fx;
    {
        guard g(*s_);
        s_->housekeeping_timer = {};
        const auto t = now();
        s_->core.set_now(t);
        if (s_->cache) {  // cached resources age and expire in the core's idle set
            s_->cache->coarse_now.store(t.time_since_epoch().count(), std::memory_order_relaxed);
            s_->drain_cache_locked(fx);
        }
        s_->core.housekeep(t, fx);
        arm_housekeeping();
    }
    apply(fx);
    after_change();
}

void pool_impl::arm_retry(duration d) noexcept {
    // +-20 % jitter: pools restarted together do not retry in lock-step.
    std::uniform_real_distribution<double> jitter(0.8, 1.2);
    guard g(*s_);
    if (s_->core.closed()) return;
    const auto delay = std::chrono::duration_cast<duration>(d * jitter(s_->rng));
    s_->cancel_timer(s_->retry_timer);
    try {
        s_->retry_timer = s_->schedule(delay, [this] {
            core::effects fx;
            {
                guard g2(*s_);
                s_->retry_timer = {};
                s_->core.backoff_elapsed(fx);
            }
            apply(fx);
        });
    } catch (...) {
    }
}

// ---- health check ----------------------------------------------------------------------------

void pool_impl::arm_health_timer() noexcept {
    if (s_->core.closed()) return;
    try {
        s_->health_timer = s_->schedule(opts_.healthcheck_interval, [this] { health_tick(); });
    } catch (...) {
    }
}

void pool_impl::health_tick() noexcept {
    core::effects fx;
    {
        guard g(*s_);
        s_->health_timer = {};
        ++s_->tick;
        s_->core.set_now(now());
        if (s_->cache) s_->drain_cache_locked(fx);  // cached resources are idle: they are checked too
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
            guard g(*s_);
            n = node_of(s_->core.begin_check(s_->tick));
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
                hooks_->check_async(check_kind::healthcheck, *n, run->ctx, ex_, run->signal.slot(),
                                    [self = shared_from_this(), run](bool ok) { self->health_done(run, ok); });
            } catch (...) {
                health_done(run, false);
            }
            return;  // health_done (or hook_overdue) goes on with the next resource
        }
        const bool ok = healthcheck_ == hook_mode::sync && check(check_kind::healthcheck, *n, hook_reason::in_background);
        core::effects fx;
        {
            guard g(*s_);
            s_->core.end_check(core_of(n), ok, fx);
        }
        apply(fx);
    }
    core::effects fx;
    {
        guard g(*s_);
        s_->core.replenish(fx);  // replacements up to min
        arm_health_timer();
    }
    apply(fx);
    after_change();
}

void pool_impl::health_done(const std::shared_ptr<hook_run>& run, bool ok) noexcept {
    core::effects fx;
    bool live;
    {
        guard g(*s_);
        live = end_run_locked(*run);
        if (live) s_->core.end_check(core_of(run->n), ok, fx);
    }
    if (!live) {  // failed at check_timeout or close: the round went on then
        destroy_node(run->n, run->why);
        return after_change();
    }
    apply(fx);
    health_step();
}

}  // namespace respool::detail
