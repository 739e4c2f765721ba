// Acquire: the inline and parked paths, the checks on the way out, deadline and cancellation.

#include "driver_state.hpp"

namespace respool::detail {

// ---- acquire ---------------------------------------------------------------------------------

namespace {
check_kind kind_of(core::borrow_check c) noexcept {
    return c == core::borrow_check::validate ? check_kind::validate : check_kind::before_acquire;
}
}  // namespace

hook_mode pool_impl::mode_of(core::borrow_check c) const noexcept {
    return c == core::borrow_check::validate ? validate_ : before_acquire_;
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

// A resource leaves the pool for a caller: the use count, hold times, the observer. (Leak reports take
// the acquire's site from the core, which records it when it lends the resource.)
void pool_impl::hand_out(resource_node* n, const acquire_op_base* op) noexcept {
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
resource_node* pool_impl::try_acquire(error_code& ec, const respool::source_location& where) noexcept {
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

resource_node* pool_impl::acquire_now(error_code& ec, const respool::source_location& where) noexcept {
    if (resource_node* n = take_inline(*this)) return n;
    return acquire_general(ec, where);
}

// A lease free now and in no need of a coroutine check, or nullptr with nothing decided: no error
// reported or counted (the caller's general way, an async_acquire, decides and counts those).
resource_node* pool_impl::take_now_quietly(const respool::source_location& where) noexcept {
    if (!take_now) return nullptr;
    if (resource_node* n = take_inline(*this)) return n;
    error_code ec;
    return acquire_general(ec, where, true);
}

// Steps 1-3 through the core's general take, for a synchronous caller: every check on the way out is
// synchronous here (acquire_inline) and runs inline; a resource a check refuses is destroyed, and
// the caller takes again (a replacement made meanwhile was made for it: no before_acquire).
resource_node* pool_impl::acquire_general(error_code& ec, const respool::source_location& where,
                                          bool only_if_free) noexcept {
    std::uint64_t arrival = core::pool_core::newcomer;
    for (;;) {
        core::pool_core::take_result t;
        {
            guard g(*state_);
            if (only_if_free && !state_->core.lends_now()) return nullptr;  // the general way decides
            if (arrival == core::pool_core::newcomer) arrival = state_->core.arrive();
            if (validate_waits_) {  // a coroutine validation: only the general path can wait for it
                state_->core.set_now(now());
                if (state_->core.next_take_validates()) return nullptr;
            }
            t = state_->core.try_take(arrival, where);
        }
        bool refused = false;
        while (t.r && t.check != core::borrow_check::none) {
            const bool passed = check(kind_of(t.check), *node_of(t.r), hook_reason::on_borrow);
            core::effects fx;
            {
                guard g(*state_);
                t = state_->core.check_done(t.r, passed, now(), fx).t;
            }
            apply(fx);
            refused = !passed;
        }
        if (t.st != core::status::ok) {
            ec = to_error(t.st);
            return nullptr;
        }
        if (refused) continue;  // destroyed: take again
        if (!t.r) return nullptr;
        hand_out(node_of(t.r), nullptr);
        return node_of(t.r);
    }
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
            core_of(op).where = op->where;  // leak reports name it, whichever way it is lent
            t = state_->core.try_take(op->where);
            if (t.r && t.check != core::borrow_check::none) {  // it waits for the verdict, as if parked
                state_->core.wait_for_check(core_of(op), t.r, op->started, op->deadline, op->timeout);
                if (op->deadline) state_->rearm();
            } else if (t.st == core::status::ok && !t.r) {
                expired = op->deadline && *op->deadline <= op->started;
                if (!expired) {
                    st = state_->core.park(core_of(op), op->started, op->deadline, op->timeout, fx);
                    if (st == core::status::ok && op->deadline) state_->rearm();
                }
            }
        }
    }
    // From here on a parked or checking op belongs to the pool: only `fx`, `t` and locals are touched
    // until the core says the op is this call's again.
    if (t.r) return serve(op, t, true);
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
    if (t.r) return serve(op, t, post);
    error_code ec = to_error(t.st);
    if (t.st == core::status::create_failed && op->create_error) ec = op->create_error;
    if (t.st == core::status::timeout) notify(state_->obs, [&](observer& o) { o.on_exhausted(stats()); });
    op->complete(op, ec, nullptr, post);
}

// A resource taken for op: its checks run (the core says which, in order), inline when synchronous,
// through a bounded coroutine otherwise; then it is lent. While a check is due, op waits for the
// verdict in the core, where its deadline, a cancel or close can still end it: then the verdict only
// decides the resource's fate, and op is not touched here again.
void pool_impl::serve(acquire_op_base* op, core::pool_core::take_result t, bool post) noexcept {
    while (t.check != core::borrow_check::none) {
        if (mode_of(t.check) == hook_mode::async) return start_borrow_check(node_of(t.r), t.check);
        const bool passed = check(kind_of(t.check), *node_of(t.r), hook_reason::on_borrow);
        core::effects fx;
        core::pool_core::verdict v;
        {
            guard g(*state_);
            v = state_->core.check_done(t.r, passed, now(), fx);
        }
        apply(fx);
        if (v.w == nullptr) return release_self_if_drained();  // op left; its completion is on its way
        t = v.t;
        if (!t.r) {  // parked again in its arrival position, or failed
            if (t.st != core::status::ok) op->complete(op, to_error(t.st), nullptr, post);
            return;
        }
    }
    hand_out(node_of(t.r), op);
    op->complete(op, {}, node_of(t.r), post);
}

// A coroutine check on the way out, bounded by check_timeout (hook_overdue fails it there).
void pool_impl::start_borrow_check(resource_node* n, core::borrow_check c) noexcept {
    std::shared_ptr<hook_run> run;
    try {
        guard g(*state_);
        run = begin_run_locked(
            c == core::borrow_check::validate ? run_kind::validate : run_kind::before_acquire, n,
            opts_.check_timeout);
        run->ctx = context_of(*n, hook_reason::on_borrow);
    } catch (...) {
        return borrow_verdict(n, false);  // no memory to run it: the check fails
    }
    try {
        hooks_->check_async(
            kind_of(c), *n, run->ctx, executor, run->signal.slot(),
            [self = shared_from_this(), run](bool passed) { self->borrow_check_done(run, passed); });
    } catch (...) {
        borrow_check_done(run, false);
    }
}

// A coroutine check on the way out returned (on the pool's executor).
void pool_impl::borrow_check_done(const std::shared_ptr<hook_run>& run, bool passed) noexcept {
    bool live;
    {
        guard g(*state_);
        live = end_run_locked(*run);
    }
    if (!live) {  // failed at its bound or at close, and counted out then
        destroy_node(run->n, run->why);
        return release_self_if_drained();
    }
    borrow_verdict(run->n, passed);
}

// The verdict of n's check goes to the core; the acquire waiting for it (if it is still there) goes on.
void pool_impl::borrow_verdict(resource_node* n, bool passed) noexcept {
    core::effects fx;
    core::pool_core::verdict v;
    {
        guard g(*state_);
        v = state_->core.check_done(core_of(n), passed, now(), fx);
    }
    apply(fx);
    after_verdict(v);
}

// What the borrower of a checked resource gets: the resource (perhaps with its next check), a failure,
// or nothing here (parked again, or it left: its completion is on its way).
void pool_impl::after_verdict(const core::pool_core::verdict& v) noexcept {
    if (v.w == nullptr) return release_self_if_drained();
    acquire_op_base* op = op_of(v.w);
    if (v.t.r) return serve(op, v.t, true);
    if (v.t.st != core::status::ok) op->complete(op, to_error(v.t.st), nullptr, true);
}

void pool_impl::cancel(acquire_op_base* op) noexcept {
    core::effects fx;
    {
        guard g(*state_);
        if (!state_->core.cancel(core_of(op), fx)) op->cancel_requested = true;  // honoured by its park step
    }
    apply(fx);
}

}  // namespace respool::detail

namespace respool::detail {

resource_node* take_now(pool_impl& p, const respool::source_location& where) noexcept {
    return p.take_now_quietly(where);
}
resource_node* acquire_now(pool_impl& p, error_code& ec, const respool::source_location& where) noexcept {
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
resource_node* try_acquire(pool_impl& p, error_code& ec, const respool::source_location& where) noexcept {
    return p.try_acquire(ec, where);
}

}  // namespace respool::detail

namespace respool::detail {

void init_waiter(acquire_op_base& op) noexcept {
    new (op.core_part) core::waiter{};
}

}  // namespace respool::detail
