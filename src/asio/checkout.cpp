// Acquire: the inline and parked paths, the checks on the way out, deadline and cancellation.

#include "driver_state.hpp"

namespace respool::detail {

// ---- acquire ---------------------------------------------------------------------------------

// The synchronous verdict of one check stage on a taken resource (true = lend it).
namespace {
bool validating(pool_impl::stage at) noexcept {
    return at == pool_impl::stage::validate || at == pool_impl::stage::validate_only;
}
}  // namespace

bool pool_impl::check_inline(stage at, resource_node* n) noexcept {
    return check(validating(at) ? check_kind::validate : check_kind::before_acquire, *n,
                 hook_reason::on_borrow);
}

// The stage after `at` passed.
pool_impl::stage pool_impl::next_stage(stage at) const noexcept {
    return at == stage::validate && before_acquire_ != hook_mode::none ? stage::before_acquire : stage::done;
}

hook_context pool_impl::context_of(const resource_node& n, hook_reason why) const noexcept {
    hook_context c;
    c.reason = why;
    if (!context_) return c;  // no hook reads it: no clock read
    const auto t = now();
    const core::resource& r = *core_of(const_cast<resource_node*>(&n));
    c.age = t - r.created_at;
    if (why != hook_reason::on_release) c.idle_for = t - r.idle_since;
    c.uses = n.uses;
    return c;
}

bool pool_impl::check(check_kind k, resource_node& n, hook_reason why) noexcept {
    return hooks_->check_sync(k, n, context_of(n, why));
}

// A resource leaves the pool for a caller: stamps for leak reports, hold times, the observer.
void pool_impl::hand_out(resource_node* n, const std::source_location& where,
                         const acquire_op_base* op) noexcept {
    if (opts_.acquire_ttl > duration::zero()) n->acquired_at = where;  // only leak reports read it
    if (context_) ++n->uses;
    const bool timed = opts_.record_timings || state_->obs;
    if (timed) n->taken_at = now();
    if (!timed) return;
    if (op && op->started != clock::time_point{}) {
        const auto waited_for = std::chrono::nanoseconds(n->taken_at - op->started);
        if (opts_.record_timings) {
            guard g(*state_);
            state_->wait_time.record(waited_for);
        }
        notify(state_->obs, [&](observer& o) { o.on_taken(waited_for); });
    } else {  // immediate: counted by the core in bucket 0 (no clock, no lock here)
        notify(state_->obs, [](observer& o) { o.on_taken(std::chrono::nanoseconds(0)); });
    }
}

// pool<T>::try_acquire after take_inline found nothing (it is not tried again here).
resource_node* pool_impl::try_acquire(error_code& ec, const std::source_location& where) noexcept {
    if (!acquire_inline) {
        ec = errc::not_supported;
        return nullptr;
    }
    resource_node* n = acquire_general(ec, where);
    if (n || ec) return n;
    n = create_inline(ec, where);
    if (!n && !ec) ec = errc::exhausted;
    return n;
}

resource_node* pool_impl::acquire_now(error_code& ec, const std::source_location& where) noexcept {
    if (resource_node* n = take_inline(*this)) return n;
    return acquire_general(ec, where);
}

// Steps 1-3 through the core's general take, with synchronous checks only (acquire_inline).
resource_node* pool_impl::acquire_general(error_code& ec, const std::source_location& where) noexcept {
    for (;;) {
        core::pool_core::take_result t;
        {
            guard g(*state_);
            t = state_->core.try_take();
        }
        if (t.st != core::status::ok) {
            ec = to_error(t.st);
            return nullptr;
        }
        if (!t.r) return nullptr;
        auto* n = node_of(t.r);
        if (state_->core.cfg().confirm_takes) {  // synchronous checks only here (acquire_inline)
            const bool ok =
                (!t.validate || check_inline(stage::validate, n)) &&
                (t.fresh || before_acquire_ == hook_mode::none || check_inline(stage::before_acquire, n));
            core::effects fx;
            core::status st = core::status::ok;
            {
                guard g(*state_);
                if (ok)
                    st = state_->core.confirm_take(core_of(n), fx);
                else
                    state_->core.reject(core_of(n), fx);
            }
            apply(fx);
            if (!ok) continue;  // destroyed; try the next place
            if (st != core::status::ok) {
                ec = to_error(st);
                return nullptr;
            }
        }
        hand_out(n, where, nullptr);
        return n;
    }
}

// Where the checks on the way out start: validation when it idled too long, then before_acquire
// unless it was never lent.
pool_impl::stage first_stage(const core::pool_core::take_result& t) noexcept {
    if (t.validate) return t.fresh ? pool_impl::stage::validate_only : pool_impl::stage::validate;
    return t.fresh ? pool_impl::stage::done : pool_impl::stage::before_acquire;
}

void pool_impl::start_acquire(acquire_op_base* op) noexcept {
    core::effects fx;
    core::pool_core::take_result t;
    core::status st = core::status::ok;
    bool expired = false;
    {
        guard g(*state_);
        if (op->cancel_requested) {
            t.st = core::status::cancelled;
        } else {
            // The clock only when something needs it: a deadline, wait times, the observer.
            if (op->timeout || op->deadline || opts_.record_timings || state_->obs) {
                const auto t0 = now();
                op->started = t0;  // before park: once parked, another thread may complete the op
                if (op->timeout && !op->deadline) op->deadline = core::deadline_after(t0, *op->timeout);
                state_->core.set_now(t0);
            }
            t = state_->core.try_take();
            if (t.st == core::status::ok && !t.r) {
                expired = op->deadline && *op->deadline <= op->started;
                if (!expired) {
                    st = state_->core.park(core_of(op), op->started, op->deadline, op->timeout, fx);
                    if (st == core::status::ok && op->deadline) state_->rearm();
                }
            }
        }
    }
    // From here on a parked op belongs to the pool: only `fx` and locals are touched.
    if (t.r) return handle_taken(op, node_of(t.r), true, first_stage(t));
    if (t.st != core::status::ok) return op->complete(op, to_error(t.st), nullptr, true);
    if (expired) {  // no time to wait: only a place that is free now (a synchronous creation) serves
        error_code ec;
        resource_node* n = create_inline(ec, op->where, &op->create_exception);
        if (ec) op->create_error = ec;
        if (!n && !ec) {
            guard g(*state_);
            state_->core.count_timeout();
            ec = errc::timeout;
        }
        return op->complete(op, ec, n, true);
    }
    apply(fx);
    if (st != core::status::ok) op->complete(op, to_error(st), nullptr, true);
}

void pool_impl::resume(acquire_op_base* op, bool on_handler_executor) noexcept {
    core::pool_core::take_result t;
    core::effects fx;
    {
        guard g(*state_);
        t = state_->core.resume(core_of(op), fx);
    }
    if (!fx.empty()) apply(fx);
    const bool post = !on_handler_executor;
    if (t.r) return handle_taken(op, node_of(t.r), post, first_stage(t));
    error_code ec = to_error(t.st);
    if (t.st == core::status::create_failed && op->create_error) ec = op->create_error;
    if (t.st == core::status::timeout) notify(state_->obs, [&](observer& o) { o.on_exhausted(stats()); });
    op->complete(op, ec, nullptr, post);
}

// A check said no: destroy the resource and run steps 1-3 again for the waiter (it re-parks in its
// arrival position when nothing is free). Called with the lock held.
core::pool_core::take_result reject_and_retry_locked(pool_impl::driver_state& s, acquire_op_base* op,
                                                     resource_node* n, core::effects& fx) {
    s.core.reject(core_of(n), fx);
    const auto t0 = s.clock->now();
    s.core.set_now(t0);
    auto t = s.core.retry(core_of(op), t0, fx);
    if (t.st == core::status::ok && !t.r && op->deadline) s.rearm();
    return t;
}

// A resource taken for a waiter passes the checks from `from` on (validation on borrow, then
// before_acquire), inline when synchronous, through a bounded coroutine otherwise; a "no" destroys it
// and the waiter retries in its arrival position.
void pool_impl::handle_taken(acquire_op_base* op, resource_node* n, bool post, stage from) noexcept {
    for (;;) {
        stage at = from;
        if (at == stage::before_acquire && before_acquire_ == hook_mode::none) at = stage::done;
        bool ok = true;
        while (at != stage::done) {
            const hook_mode mode = validating(at) ? validate_ : before_acquire_;
            if (mode == hook_mode::async) {
                std::shared_ptr<hook_run> run;
                try {
                    guard g(*state_);
                    run = begin_run_locked(validating(at) ? run_kind::validate : run_kind::before_acquire, n,
                                           opts_.check_timeout);
                    run->op = op;
                    run->ctx = context_of(*n, hook_reason::on_borrow);
                    op->check = run.get();
                    if (op->deadline)  // the acquire's own deadline ends the wait, not the check
                        run->op_deadline = state_->schedule(*op->deadline - now(),
                                                            [this, weak = std::weak_ptr<hook_run>(run)] {
                                                                if (auto r = weak.lock())
                                                                    abandon_check(*r, errc::timeout);
                                                            });
                } catch (...) {
                    ok = false;
                    break;
                }
                try {
                    hooks_->check_async(
                        validating(at) ? check_kind::validate : check_kind::before_acquire, *n, run->ctx,
                        executor, run->signal.slot(),
                        [self = op->impl, run, at](bool pass) { self->check_done(run, pass, at); });
                } catch (...) {
                    check_done(run, false, at);
                }
                return;
            }
            ok = check_inline(at, n);
            if (!ok) break;
            at = next_stage(at);
        }
        if (ok && !state_->core.cfg().confirm_takes) {  // no checks configured: lend it as it is
            hand_out(n, op->where, op);
            return op->complete(op, {}, n, post);
        }
        core::effects fx;
        core::pool_core::take_result t;
        core::status st = core::status::ok;
        {
            guard g(*state_);
            if (ok)
                st = state_->core.confirm_take(core_of(n), fx);
            else
                t = reject_and_retry_locked(*state_, op, n, fx);
        }
        apply(fx);
        if (!ok) {
            if (t.r) {
                n = node_of(t.r);
                from = first_stage(t);
                continue;
            }
            if (t.st != core::status::ok) op->complete(op, to_error(t.st), nullptr, post);
            return;  // re-parked in its arrival position
        }
        if (st != core::status::ok) {
            finish_close_if_drained();
            return op->complete(op, to_error(st), nullptr, post);
        }
        hand_out(n, op->where, op);
        return op->complete(op, {}, n, post);
    }
}

// The acquire waiting for a borrow check ends now (its deadline passed, or it was cancelled); the
// check goes on and decides the resource's fate.
void pool_impl::abandon_check(hook_run& run, error_code ec) noexcept {
    acquire_op_base* op;
    {
        guard g(*state_);
        op = detach_op_locked(*state_, run);
        if (op && ec == errc::timeout) state_->core.count_timeout();
        if (op && ec == errc::cancelled) state_->core.count_cancellation();
    }
    if (op) op->complete(op, ec, nullptr, true);
}

// A coroutine check on borrow returned (on the pool's executor): go on with the next stage, or retry;
// when the acquire already left, only the resource's fate is decided.
void pool_impl::check_done(const std::shared_ptr<hook_run>& run, bool ok, stage at) noexcept {
    resource_node* n = run->n;
    acquire_op_base* op = nullptr;
    core::effects fx;
    bool live;
    {
        guard g(*state_);
        live = end_run_locked(*run);
        if (live) {
            op = detach_op_locked(*state_, *run);
            if (!op) {
                if (ok)
                    state_->core.give_back(core_of(n), fx);
                else
                    state_->core.reject(core_of(n), fx);
            }
        }
    }
    if (!live) {  // failed at its bound or at close, and counted out then
        destroy_node(n, run->why);
        return finish_close_if_drained();
    }
    if (!op) {
        apply(fx);
        return finish_close_if_drained();
    }
    if (ok) return handle_taken(op, n, true, next_stage(at));
    core::pool_core::take_result t;
    {
        guard g(*state_);
        t = reject_and_retry_locked(*state_, op, n, fx);
    }
    apply(fx);
    if (t.r) return handle_taken(op, node_of(t.r), true, first_stage(t));
    if (t.st != core::status::ok) op->complete(op, to_error(t.st), nullptr, true);
}

void pool_impl::cancel(acquire_op_base* op) noexcept {
    core::effects fx;
    acquire_op_base* abandoned = nullptr;
    {
        guard g(*state_);
        if (state_->core.cancel(core_of(op), fx)) {
        } else if (op->check) {  // inside a coroutine check: complete now
            abandoned = detach_op_locked(*state_, *op->check);
            state_->core.count_cancellation();
        } else {
            op->cancel_requested = true;  // not parked yet: honoured by its park step
        }
    }
    apply(fx);
    if (abandoned) abandoned->complete(abandoned, errc::cancelled, nullptr, true);
}

}  // namespace respool::detail

namespace respool::detail {

resource_node* acquire_now(pool_impl& p, error_code& ec, const std::source_location& where) noexcept {
    return p.acquire_now(ec, where);
}
void start_acquire(pool_impl& p, acquire_op_base* op) noexcept {
    p.start_acquire(op);
}
void resume(pool_impl& p, acquire_op_base* op, bool on_handler_executor) noexcept {
    p.resume(op, on_handler_executor);
}
void cancel(pool_impl& p, acquire_op_base* op) noexcept {
    p.cancel(op);
}
resource_node* try_acquire(pool_impl& p, error_code& ec, const std::source_location& where) noexcept {
    return p.try_acquire(ec, where);
}

}  // namespace respool::detail

namespace respool::detail {

void init_waiter(acquire_op_base& op) noexcept {
    new (op.core_part) core::waiter{};
}

}  // namespace respool::detail
