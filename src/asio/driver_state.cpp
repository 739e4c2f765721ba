// The driver state's own work: its alarm, and keeping the affinity cache in line with the core.

#include "driver_state.hpp"

namespace respool::detail {

const char* to_string(run_kind k) noexcept {
    switch (k) {
    case run_kind::create: return "factory";
    case run_kind::validate: return "validation";
    case run_kind::before_acquire: return "before_acquire";
    case run_kind::healthcheck: return "healthcheck";
    case run_kind::before_release: return "before_release";
    }
    return "hook";
}

unsigned pool_impl::driver_state::drain_cache_locked(core::effects& fx, bool close) noexcept {
    unsigned n = 0;
    resource_node* const after = close ? closed_mark() : nullptr;
    for (unsigned i = 0, used = affinity_cache::used(); i < used; ++i) {
        auto& sl = cache->slots[i];
        // A closed slot stays closed: only opening the cache (open_slots) empties it, or a releaser
        // that read `open` before the close could still fill it.
        resource_node* r = sl.node.load(std::memory_order_seq_cst);
        if (r == closed_mark() || (!r && !close)) continue;
        r = sl.node.exchange(after, std::memory_order_seq_cst);
        if (r && r != closed_mark()) {
            core.release(core_of(r), core::pool_core::release_kind::ok, fx);
            ++n;
        }
    }
    return n;
}

// Opens the slots a close left closed (lock held; only lock holders close them).
static void open_slots(affinity_cache& c) noexcept {
    for (unsigned i = 0, used = affinity_cache::used(); i < used; ++i) {
        resource_node* was = closed_mark();
        c.slots[i].node.compare_exchange_strong(was, nullptr, std::memory_order_seq_cst,
                                                std::memory_order_relaxed);
    }
}

void pool_impl::driver_state::unlock_cached() noexcept {
    const bool want = !obs && core.uncontended();
    if (want == cache->open.load(std::memory_order_relaxed)) return mu.unlock();  // the common case
    if (want) open_slots(*cache);  // before `open`: a releaser that reads it true finds its slot open
    cache->open.store(want, std::memory_order_seq_cst);
    core::effects fx;
    const bool emptied = !want && drain_cache_locked(fx, true) != 0;
    unlock_then_apply(fx, emptied);
}

void pool_impl::driver_state::unlock_then_apply(core::effects& fx, bool emptied) noexcept {
    const bool closed = core.closed();
    mu.unlock();
    if (!emptied) return;
    owner->apply(fx);  // a parked waiter gets its resource; a closed pool destroys them
    if (closed) owner->release_self_if_drained();
}

void pool_impl::driver_state::rearm() noexcept {
    auto next = core.next_deadline();
    for (const auto& t : {timers.next(), health_at, housekeeping_at, retry_at})
        if (t && (!next || *t < *next)) next = t;
    if (!next ||
        context_gone) {  // also after a ring: the cancel orders that ring's post before whatever follows
        clock->cancel(*this);
        alarm_set = false;
        return;
    }
    if (alarm_set && alarm_at <= *next) return;  // an earlier ring re-arms for the rest
    try {
        clock->set(*this, *next);
        alarm_set = true;
        alarm_at = *next;
    } catch (...) {  // a clock of the user's that failed: the next timer change tries again
    }
}

// On the clock's thread: only a post. The timer work runs on the pool's executor.
void pool_impl::driver_state::ring() noexcept {
    try {
        asio::post(alarm_ex, [weak = self] {
            if (auto p = weak.lock()) p->on_alarm();
        });
    } catch (...) {
    }
}

}  // namespace respool::detail
