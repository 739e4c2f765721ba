// The driver's state behind pool_impl (state_): the core, the lock, the timers, the hooks under way,
// the observers, the ready queue, the close waiters. And the few helpers every driver file shares.
//
// Lifetime: pool<T> holds a shared_ptr. Leases hold a raw pointer; when the pool object goes away
// while leases are out, the impl keeps itself alive (keep_alive) until the last resource is gone, so
// the fast path never touches a reference count. Operations that outlive a call (parked acquires,
// coroutine hooks, timer work) hold a shared_ptr or a weak_ptr.
#pragma once

#include "asio/pool_impl.hpp"

#include "affinity_cache.hpp"
#include "alarm_schedule.hpp"
#include "context_service.hpp"
#include "conversions.hpp"
#include "core/pool_core.hpp"
#include "hook_run.hpp"
#include "pool_lock.hpp"
#include "published.hpp"
#include "timer_list.hpp"

#include <boost/asio/post.hpp>

#include <memory>
#include <random>
#include <vector>

namespace respool::detail {

using clock = std::chrono::steady_clock;

struct pool_impl::driver_state final : scheduled_alarm {
    driver_state(pool_impl* o, const asio::any_io_executor& ex, const core::config& c, bool ts,
                 std::shared_ptr<pool_clock> clk)
        : owner(o), thread_safe(ts), core(c), clock(std::move(clk)), alarm_ex(ex) {}
    // A ring may be under way on the clock's thread: cancel waits for it, and no other follows.
    ~driver_state() { clock->cancel(*this); }

    pool_impl* const owner;
    // Read before every lock, so not on the lock's line: a read there would fetch the line shared and
    // the lock's write would then have to fetch it again.
    const bool thread_safe;

    core::pool_core core;
    // On its own cache line: lockers hammering the mutex must not steal the lines the holder writes.
    alignas(64) pool_lock mu;
    char pad_[64 - sizeof(pool_lock) % 64]{};

    // Timers: the core's waiter deadlines and `timers`, behind one alarm on the pool's clock.
    const std::shared_ptr<pool_clock> clock;
    timer_list timers;
    bool alarm_set = false;
    clock::time_point alarm_at{};
    // The pools of the executor's execution context (set by start()); once that context has shut
    // down (context_gone), the alarm is never set again: a ring would post into a dead context.
    std::shared_ptr<context_pools> context;
    bool context_gone = false;
    std::weak_ptr<pool_impl> self;  // what a ring posts to (set by start())
    asio::any_io_executor alarm_ex;
    // The recurring timers (health check, housekeeping, creation retry) are a due time each, kept
    // here rather than in `timers`: arming one allocates nothing and cannot fail, so running out of
    // memory never ends them (the alarm itself is a scheduled_alarm: re-setting it allocates nothing).
    std::optional<clock::time_point> health_at, housekeeping_at, retry_at;
    timer_list::handle recover_timer;
    std::minstd_rand rng{std::random_device{}()};

    published<circuit_strategy> strategy;
    std::vector<std::shared_ptr<observer>> observers;
    published<observer> obs;  // what events go to: the one observer, a fan-out of several, or none
    published<log_sink> sink;
    histogram wait_time, hold_time, create_time;

    std::shared_ptr<pool_impl> keep_alive;  // set while the pool object is gone but resources remain
    bool dropped = false;

    // Woken direct waiters, FIFO, resumed by one posted drain (drain_posted) in bounded batches.
    acquire_op_base* ready_head = nullptr;
    acquire_op_base* ready_tail = nullptr;
    bool drain_posted = false;

    std::vector<std::shared_ptr<hook_run>> runs;  // coroutine hooks under way, undecided

    struct close_waiter {
        signal_handler done;
        timer_list::handle grace;
        std::uint64_t key;
    };
    std::vector<close_waiter> close_waiters;
    std::uint64_t close_keys = 0;
    std::vector<signal_handler> ready_waiters;
    bool ready = false;  // the core's ready effect has run: ready_ec is its outcome
    error_code ready_ec;

    std::unique_ptr<affinity_cache> cache;  // thread_affinity, when the options allow it

    // The alarm at the earliest timer or waiter deadline; cancelled when there is none (lock held).
    void rearm() noexcept;
    // Adds a timer running `f` on the pool's executor after `d` (lock held). Timer callbacks run from
    // on_alarm, which holds a reference to the pool: they may capture the pool_impl.
    timer_list::handle schedule(duration d, timer_list::callback f) {
        auto h = timers.add(core::deadline_after(clock->now(), d), std::move(f));
        rearm();
        return h;
    }
    void cancel_timer(timer_list::handle& h) noexcept { timers.cancel(h); }
    // Arms a recurring timer `d` from now (lock held). Never allocates.
    void arm(std::optional<clock::time_point>& timer, duration d) noexcept {
        timer = core::deadline_after(clock->now(), d);
        rearm();
    }
    void ring() noexcept override;
    // Every resource in the cache back to the core (lock held). Returns how many. With `close`, the
    // slots are left closed (the cache is closing); otherwise empty (housekeeping, health checks).
    unsigned drain_cache_locked(core::effects& fx, bool close = false) noexcept;
    // Unlocks mu, first opening or closing the cache to match the core; a close drains it.
    void unlock_cached() noexcept;
    // Its end: unlocks, then applies what taking the resources back decided (`emptied`: any).
    void unlock_then_apply(core::effects& fx, bool emptied) noexcept;
};

// Locks only in thread_safe mode: the default pool lives on one executor and pays nothing.
class guard {
public:
    explicit guard(pool_impl::driver_state& s) : state_(s.thread_safe ? &s : nullptr) {
        if (state_) state_->mu.lock();
    }
    ~guard() { unlock(); }
    [[gnu::always_inline]] void unlock() {
        if (state_) release(std::exchange(state_, nullptr));
    }
    // With the thread-affinity cache, every unlock first brings it in line with the core.
    static void release(pool_impl::driver_state* s) noexcept {
        if (s->cache)
            s->unlock_cached();
        else
            s->mu.unlock();
    }
    guard(const guard&) = delete;
    guard& operator=(const guard&) = delete;

private:
    pool_impl::driver_state* state_;  // null: a pool on one executor locks nothing
};

// The fast paths' lock when the pool has no thread-affinity cache: the same as a guard then, without
// the branch on the cache at unlock (a guard there made one-thread take + release cycles on a shared
// pool about 3 % slower, measured side by side).
class plain_guard {
public:
    explicit plain_guard(pool_impl::driver_state& s) : m_(s.thread_safe ? &s.mu : nullptr) {
        if (m_) m_->lock();
    }
    ~plain_guard() {
        if (m_) m_->unlock();
    }
    plain_guard(const plain_guard&) = delete;
    plain_guard& operator=(const plain_guard&) = delete;

private:
    pool_lock* m_;
};

core::config to_config(const pool_options& o, hook_mode before_acquire, hook_mode validate, bool context);

// Calls the observer, if any; an observer that throws is ignored (events never change outcomes).
template <class F>
void notify(const published<observer>& obs, F&& f) noexcept {
    if (observer* o = obs.get()) {
        try {
            f(*o);
        } catch (...) {
        }
    }
}

// Calls each one-shot handler with an error code, then forgets them (each decides its own executor).
void fire(std::vector<signal_handler>& hs, const error_code& ec);

// One observer for events: the only one, a fan-out of several, or none.
std::shared_ptr<observer> fan_out(const std::vector<std::shared_ptr<observer>>& all);

}  // namespace respool::detail
