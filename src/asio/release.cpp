// Release and the fast take/release paths (the thread-affinity cache, the core's inline ones).

#include "driver_state.hpp"

namespace respool::detail {

// ---- release ---------------------------------------------------------------------------------

void release_node(pool_impl* impl, resource_node* n, bool poisoned) noexcept {
    impl->release(n, poisoned);
}

// The fast paths: small functions with small frames, tried before the general ones.
// The common take, called by pool<T>::try_acquire itself: this thread's cached resource, or the core's
// inline take; nullptr when checks, stamps or an observer need the general path.
resource_node* take_inline(pool_impl& p) noexcept {
    if (p.cache_) return p.take_own_slot();
    if (!p.plain_ || p.state_->obs) return nullptr;  // nothing to check, stamp or report
    plain_guard g(*p.state_);
    return node_of(p.state_->core.take_fast());
}

// Takes the resource in slot `from` (counted for this thread, slot `me`). The second look at `open`
// makes a take that raced with a waiter parking give the resource to the core (the waiter's, then).
[[gnu::always_inline]] inline resource_node* pool_impl::take_from_slot(unsigned from, unsigned me) noexcept {
    affinity_cache& c = *cache_;
    auto& sl = c.slots[from];
    if (!c.open.load(std::memory_order_acquire)) return nullptr;
    resource_node* n = sl.node.load(std::memory_order_relaxed);
    if (!n || n == closed_mark() ||
        !sl.node.compare_exchange_strong(n, nullptr, std::memory_order_seq_cst, std::memory_order_relaxed))
        return nullptr;
    if (c.open.load(std::memory_order_seq_cst)) {
        c.count_take(me);
        return n;
    }
    finish_release(n, false, false);
    return nullptr;
}

// take_inline with the thread-affinity cache: this thread's slot first, without the lock.
resource_node* pool_impl::take_own_slot() noexcept {
    const unsigned me = affinity_cache::self();
    if (resource_node* n = take_from_slot(me, me)) return n;
    return take_elsewhere(me);
}

// take_own_slot with this thread's slot empty: the core, then the other threads' slots. (The cache
// exists only when plain_; an observer closes it.)
[[gnu::noinline]] resource_node* pool_impl::take_elsewhere(unsigned me) noexcept {
    if (state_->obs) return nullptr;
    resource_node* n;
    {
        guard g(*state_);
        n = node_of(state_->core.take_fast());
    }
    for (unsigned i = 1, used = affinity_cache::used(); i < used && !n; ++i)
        n = take_from_slot((me + i) % used, me);
    return n;
}

void pool_impl::release(resource_node* n, bool poisoned) noexcept {
    if (affinity_cache* c = cache_) {                // keep it in this thread's slot while nobody waits
        const unsigned me = affinity_cache::self();  // numbered before `open` is read
        if (!poisoned && c->open.load(std::memory_order_seq_cst) &&
            (core_of(n)->expires_at == clock::time_point{} ||
             core_of(n)->expires_at.time_since_epoch().count() >
                 c->coarse_now.load(std::memory_order_relaxed))) {
            resource_node* empty = nullptr;
            // Fails when the slot is full (two leases on this thread, or a thread sharing the slot)
            // or closed. Once it succeeds the pool may be gone the next moment: nothing follows.
            if (c->slots[me].node.compare_exchange_strong(empty, n, std::memory_order_seq_cst,
                                                          std::memory_order_relaxed))
                return;
        }  // else: poisoned, past max_lifetime (the core retires it), or the cache is closed
    } else if (plain_ && !poisoned && !state_->obs &&
               (before_release_ == hook_mode::none ||
                (needs_reset_ == hook_mode::sync &&
                 !check(check_kind::needs_reset, *n, hook_reason::on_release)))) {
        // Once the unlock has freed the lock, another thread may close and free the pool; the unlock
        // touches nothing of it after that (pool_lock::unlock).
        plain_guard g(*state_);
        if (state_->core.release_fast(core_of(n))) return;
    }
    release_general(n, poisoned);
}

[[gnu::noinline]] void pool_impl::release_general(resource_node* n, bool poisoned) noexcept {
    // A clean resource (needs_reset said no) skips before_release, coroutine or not.
    const bool reset =
        !poisoned && before_release_ != hook_mode::none &&
        (needs_reset_ == hook_mode::none || check(check_kind::needs_reset, *n, hook_reason::on_release));
    if (reset && before_release_ == hook_mode::async) {
        std::shared_ptr<hook_run> run;
        try {
            {
                guard g(*state_);
                run = begin_run_locked(run_kind::before_release, n, opts_.reset_timeout);
                run->ctx = context_of(*n, hook_reason::on_release);
            }
            hooks_->check_async(check_kind::before_release, *n, run->ctx, executor, run->signal.slot(),
                                [self = shared_from_this(), run](bool ok) { self->reset_done(run, ok); });
            return;
        } catch (...) {
            if (run) return reset_done(run, false);
            return finish_release(n, false, true);
        }
    }
    const bool broken = reset && !check(check_kind::before_release, *n, hook_reason::on_release);
    finish_release(n, poisoned, broken);
}

void pool_impl::reset_done(const std::shared_ptr<hook_run>& run, bool ok) noexcept {
    bool live;
    {
        guard g(*state_);
        live = end_run_locked(*run);
    }
    if (live) return finish_release(run->n, false, !ok);
    destroy_node(run->n, run->why);  // failed at reset_timeout or close, and counted out then
    release_self_if_drained();
}

void pool_impl::finish_release(resource_node* n, bool poisoned, bool broken,
                               const resource_node* keep) noexcept {
    std::chrono::nanoseconds held{};
    const bool timed = opts_.record_timings || state_->obs;  // otherwise the node is not even read
    if (timed && n->taken_at != clock::time_point{}) held = now() - n->taken_at;
    if (timed) notify(state_->obs, [held](observer& o) { o.on_released(held); });
    core::effects fx;
    bool closed;
    std::shared_ptr<pool_impl> self;
    {
        guard g(*state_);
        if (opts_.record_timings) state_->hold_time.record(held);
        // A lease reported as leaked is reported again as it comes back, with how long it was held:
        // the clock is read for those (rare) leases only, not on every release.
        if (core_of(n)->leak_reported) state_->core.set_now(now());
        state_->core.release(core_of(n),
                             poisoned ? core::pool_core::release_kind::poisoned
                             : broken ? core::pool_core::release_kind::broken
                                      : core::pool_core::release_kind::ok,
                             fx);
        closed = state_->core.closed();
        // In a thread_safe pool another thread may drop the pool object as soon as this section
        // ends, and a closed pool lives only until its count is zero: keep it for the rest of this
        // call (destructor hook, strategy, drain). Taken under the lock, while something holds it.
        if (closed || (state_->thread_safe && !fx.empty())) self = shared_from_this();
    }
    if (!fx.empty()) apply(fx, {}, keep);
    if (closed) release_self_if_drained();  // may be the last resource of a dropped pool: may free *this
}

}  // namespace respool::detail
