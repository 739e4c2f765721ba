// Coroutine hooks under way: bounded by their timeouts, interrupted by close().

#include "driver_state.hpp"

namespace respool::detail {

// ---- coroutine hook runs: bounded, interruptible ---------------------------------------------

// Registers a coroutine hook run (lock held): bounded by `limit`, listed for close() to interrupt.
std::shared_ptr<hook_run> pool_impl::begin_run_locked(run_kind kind, resource_node* n, duration limit) {
    auto run = std::make_shared<hook_run>();
    run->what = kind;
    run->n = n;
    run->bound = state_->schedule(limit, [this, weak = std::weak_ptr<hook_run>(run)] {
        if (auto r = weak.lock()) hook_overdue(r);
    });
    state_->runs.push_back(run);
    return run;
}

// Takes the run off the list of runs under way (lock held); false when it was not on it any more.
static bool unlist_locked(pool_impl::driver_state& s, const hook_run& run) noexcept {
    auto& v = s.runs;
    for (auto it = v.begin(); it != v.end(); ++it)
        if (it->get() == &run) {
            v.erase(it);
            return true;
        }
    return false;
}

// The run's coroutine returned (lock held). False when its outcome was decided before (bound, close).
bool pool_impl::end_run_locked(hook_run& run) noexcept {
    state_->cancel_timer(run.bound);
    if (run.decided) return false;
    unlist_locked(*state_, run);
    return true;
}

// A hook past its bound, or interrupted by close(): it fails now. Its coroutine is asked to stop; the
// resource it holds is counted out here and destroyed when the coroutine returns (end_run_locked).
void pool_impl::hook_overdue(const std::shared_ptr<hook_run>& run) noexcept {
    core::effects fx;
    core::pool_core::verdict v;  // borrow checks: what their borrower gets now
    bool closed;
    {
        guard g(*state_);
        if (run->decided || !unlist_locked(*state_, *run)) return;  // decided, or it returned meanwhile
        run->decided = true;
        closed = state_->core.closed();
        state_->cancel_timer(run->bound);
        switch (run->what) {
        case run_kind::create: break;  // settled below, like any failed creation
        case run_kind::validate:
        case run_kind::before_acquire:
            run->why = destroy_reason::rejected;
            v = state_->core.check_done(core_of(run->n), false, now(), fx);
            break;
        case run_kind::healthcheck:
            run->why = destroy_reason::unhealthy;
            state_->core.end_check(core_of(run->n), false, fx);
            break;
        case run_kind::before_release:
            run->why = destroy_reason::broken;
            state_->core.set_now(now());  // a lease reported as leaked: how long it was held
            state_->core.release(core_of(run->n), core::pool_core::release_kind::broken, fx);
            break;
        }
    }
    run->signal.emit(asio::cancellation_type::terminal);
    if (logging(log_level::warning))
        log(log_level::warning, std::string(to_string(run->what)) + " hook " +
                                    (closed ? "interrupted by close" : "timed out") + ": cancelled");
    if (run->what == run_kind::create) {
        const int more = settle_creation(errc::hook_timeout, nullptr);
        if (more) start_creations(more);
        release_self_if_drained();
        return;
    }
    apply(fx, {}, run->n);
    if (run->what == run_kind::validate || run->what == run_kind::before_acquire)
        return after_verdict(v);  // its borrower takes again, or has left
    if (run->what == run_kind::healthcheck) return health_step();
    release_self_if_drained();
}

}  // namespace respool::detail
