// The Asio driver. Rules live in the core; this file only (1) takes the lock in thread_safe mode,
// (2) runs hooks outside the lock, (3) turns core effects into posted resumptions, destructor calls
// and strategy reports, and (4) owns the timers.
//
// Lifetime: pool<T> holds a shared_ptr. Leases hold a raw pointer; when the pool object goes away
// while leases are out, the impl keeps itself alive (self) until the last resource is gone, so the
// fast path never touches a reference count. Operations that outlive a call (parked acquires,
// coroutine hooks, timers) hold a shared_ptr or a weak_ptr.
#include <respool/detail/pool_impl.hpp>

#include "conversions.hpp"
#include "core/pool_core.hpp"
#include "duration_text.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <mutex>
#if defined(__GLIBC__)
#include <pthread.h>
#endif
#include <ostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace respool::detail {

namespace {

using clock = std::chrono::steady_clock;

// Timers that must not keep the user's event loop alive (the health check) run on one process-wide
// background thread and only post their tick to the pool's executor. Deliberately never destroyed:
// pools in static storage may still hold timers during static destruction.
asio::io_context& background_context() {
    struct background {
        asio::io_context ctx;
        asio::executor_work_guard<asio::io_context::executor_type> guard{ctx.get_executor()};
        std::thread thread{[this] { ctx.run(); }};
    };
    static background* b = new background;
    return b->ctx;
}

core::config to_config(const pool_options& o, hook_mode before_acquire, hook_mode healthcheck) {
    core::config c;
    c.min = static_cast<std::uint32_t>(o.min);
    c.max = static_cast<std::uint32_t>(o.max);
    c.max_waiters = static_cast<std::uint32_t>(o.max_waiters);
    c.max_concurrent_creations = static_cast<std::uint32_t>(o.max_concurrent_creations);
    c.lifo = o.order == idle_order::lifo;
    c.confirm_takes = before_acquire != hook_mode::none || (o.health_check_on_borrow && healthcheck != hook_mode::none);
    c.idle_ttl = o.idle_ttl;
    c.acquire_ttl = o.acquire_ttl;
    c.validate_on_borrow = o.health_check_on_borrow && healthcheck != hook_mode::none;
    c.validate_after = o.validate_after;
    c.retry_initial = o.create_retry_initial;
    c.retry_max = o.create_retry_max;
    c.lifetimes = o.max_lifetime > duration::zero();
    return c;
}

// Calls the observer, if any; an observer that throws is ignored (events never change outcomes).
template <class F>
void notify(const std::shared_ptr<observer>& obs, F&& f) noexcept {
    if (observer* o = obs.get()) {
        try {
            f(*o);
        } catch (...) {
        }
    }
}

// Posts a one-shot handler with an error code; the handler decides its own executor.
void fire(std::vector<signal_handler>& hs, const error_code& ec) {
    for (auto& h : hs) h(ec);
    hs.clear();
}

}  // namespace

// An acquire whose resource is inside a coroutine check (validation on borrow, before_acquire). Its
// deadline, a cancellation or close complete the acquire at once; the check finishing later then only
// decides the resource's fate (back to idle, or destroyed). `op` is cleared when either side wins.
struct hook_ticket {
    acquire_op_base* op = nullptr;
    resource_node* n = nullptr;
    std::unique_ptr<asio::steady_timer> timer;  // the op's deadline, on the pool's executor
};

// pool_options::thread_affinity. Each thread owns one slot (by a process-wide thread number), which
// holds at most one idle resource that the core still counts as active. A take is an exchange on the
// thread's own cache line, a release a compare-and-swap: no lock and no shared write while `open`.
// `open` mirrors core.uncontended() and only changes under the pool's lock; closing it drains every
// slot into the core. The race between a releaser filling its slot and a waiter parking is settled
// Dekker-style: the releaser stores, then re-reads `open`; the closer stores `open`, then scans the
// slots (all sequentially consistent), so at least one of them sees the other, and the exchange
// decides which one returns the resource to the core.
struct affinity_cache {
    static constexpr unsigned size = 64;
    struct alignas(64) slot {
        std::atomic<resource_node*> node{nullptr};
        std::atomic<std::uint64_t> takes{0};  // leases lent from the cache by the slot's first thread
    };
    alignas(64) std::atomic<bool> open{false};
    std::atomic<clock::rep> coarse_now{0};  // with max_lifetime: the last housekeeping time
    slot slots[size];
    alignas(64) std::atomic<std::uint64_t> shared_takes{0};  // takes by threads numbered size and up

    // This thread's slot. The first call numbers the thread (a seq_cst increment, so a closer that
    // reads used() after closing `open` covers every slot a thread could have filled).
    static unsigned self() noexcept {
        unsigned& index = number();
        if (index == ~0u) index = threads_.fetch_add(1, std::memory_order_seq_cst);
        return index % size;
    }
    // Counts a take made by this thread: the first `size` threads are the only writers of their slot's
    // counter, so a plain load and store (no locked instruction) is exact; later threads share slots
    // and add to one shared counter instead.
    void count_take(unsigned me) noexcept {
        if (number() < size) {
            auto& t = slots[me].takes;
            t.store(t.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        } else {
            shared_takes.fetch_add(1, std::memory_order_relaxed);
        }
    }
    [[nodiscard]] std::uint64_t takes() const noexcept {
        std::uint64_t n = shared_takes.load(std::memory_order_relaxed);
        for (const auto& sl : slots) n += sl.takes.load(std::memory_order_relaxed);
        return n;
    }
    // Slots in use: the scan bound of drains and steals.
    static unsigned used() noexcept {
        const unsigned n = threads_.load(std::memory_order_seq_cst);
        return n < size ? n : size;
    }

private:
    static unsigned& number() noexcept {  // process-wide thread number, ~0u until the first self()
        thread_local unsigned n = ~0u;
        return n;
    }
    static inline std::atomic<unsigned> threads_{0};
};

// The pool's lock in thread_safe mode. On glibc an adaptive mutex: a contender spins briefly before
// it sleeps, so a critical section of a few dozen instructions rarely costs a futex round trip.
class pool_lock {
public:
#if defined(__GLIBC__)
    pool_lock() noexcept {
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
        pthread_mutex_init(&m_, &a);
        pthread_mutexattr_destroy(&a);
    }
    ~pool_lock() { pthread_mutex_destroy(&m_); }
    void lock() noexcept { pthread_mutex_lock(&m_); }
    void unlock() noexcept { pthread_mutex_unlock(&m_); }

private:
    pthread_mutex_t m_;
#else
    void lock() noexcept { m_.lock(); }
    void unlock() noexcept { m_.unlock(); }

private:
    std::mutex m_;
#endif
public:
    pool_lock(const pool_lock&) = delete;
    pool_lock& operator=(const pool_lock&) = delete;
};

struct pool_impl::engine {
    engine(pool_impl* o, const asio::any_io_executor& ex, const core::config& c, bool ts)
        : owner(o), core(c), thread_safe(ts), deadline_timer(ex) {}

    pool_impl* const owner;

    core::pool_core core;
    // On its own cache line: lockers hammering the mutex must not steal the lines the holder writes.
    alignas(64) pool_lock mu;
    const bool thread_safe;
    char pad_[64 - sizeof(bool)]{};

    asio::steady_timer deadline_timer;  // one timer for every waiter's deadline
    bool armed = false;
    clock::time_point armed_at{};

    std::unique_ptr<asio::steady_timer> health_timer;  // on the background context
    std::uint64_t tick = 0;
    std::unique_ptr<asio::steady_timer> housekeeping_timer;  // background: lifecycle ticks
    std::unique_ptr<asio::steady_timer> retry_timer;         // background: creation back-off
    std::unique_ptr<asio::steady_timer> recover_timer;       // background: circuit cool-down
    std::uint64_t recover_generation = 0;
    std::minstd_rand rng{std::random_device{}()};

    std::shared_ptr<circuit_strategy> strategy;
    std::shared_ptr<observer> obs;
    std::shared_ptr<log_sink> sink;
    histogram wait_time, hold_time;

    std::shared_ptr<pool_impl> keep_alive;  // set while the pool object is gone but resources remain
    bool dropped = false;

    // Woken direct waiters, FIFO, resumed by one posted drain (drain_posted) in bounded batches.
    acquire_op_base* ready_head = nullptr;
    acquire_op_base* ready_tail = nullptr;
    bool drain_posted = false;

    std::vector<std::shared_ptr<hook_ticket>> in_hook;  // tickets whose op is still waiting

    std::vector<signal_handler> close_waiters;
    std::vector<signal_handler> ready_waiters;
    bool ready = false;
    error_code ready_ec;

    std::unique_ptr<affinity_cache> cache;  // thread_affinity, when the options allow it

    void arm_deadline(const std::weak_ptr<pool_impl>& weak);
    // Every resource in the cache back to the core (lock held). Returns how many.
    unsigned drain_cache_locked(core::effects& fx) noexcept;
    // Unlocks mu, first opening or closing the cache to match the core; a close drains it.
    void unlock_cached() noexcept;
};

unsigned pool_impl::engine::drain_cache_locked(core::effects& fx) noexcept {
    unsigned n = 0;
    for (unsigned i = 0, used = affinity_cache::used(); i < used; ++i) {
        auto& sl = cache->slots[i];
        if (!sl.node.load(std::memory_order_seq_cst)) continue;
        if (resource_node* r = sl.node.exchange(nullptr, std::memory_order_seq_cst)) {
            core.release(r, core::pool_core::release_kind::ok, fx);
            ++n;
        }
    }
    return n;
}

void pool_impl::engine::unlock_cached() noexcept {
    const bool want = !obs && core.uncontended();
    if (want == cache->open.load(std::memory_order_relaxed)) return mu.unlock();  // the common case
    cache->open.store(want, std::memory_order_seq_cst);
    core::effects fx;
    const bool drained = !want && drain_cache_locked(fx) != 0;
    const bool closed = core.closed();
    mu.unlock();
    if (!drained) return;
    owner->apply(fx);  // a parked waiter gets its resource; a closed pool destroys them
    if (closed) owner->after_change();
}

namespace {

// Locks only in thread_safe mode: the default pool lives on one executor and pays nothing.
class guard {
public:
    explicit guard(pool_impl::engine& s) : s_(s.thread_safe ? &s : nullptr) {
        if (s_) s_->mu.lock();
    }
    ~guard() { unlock(); }
    [[gnu::always_inline]] void unlock() {
        if (s_) release(std::exchange(s_, nullptr));
    }
    // With the thread-affinity cache, every unlock first brings the cache in line with the core.
    static void release(pool_impl::engine* s) noexcept {
        if (s->cache) s->unlock_cached();
        else s->mu.unlock();
    }
    guard(const guard&) = delete;
    guard& operator=(const guard&) = delete;

private:
    pool_impl::engine* s_;  // null: a pool on one executor locks nothing
};

// The fast paths' lock when the pool has no thread-affinity cache: nothing to bring in line on unlock.
class plain_guard {
public:
    explicit plain_guard(pool_impl::engine& s) : m_(s.thread_safe ? &s.mu : nullptr) {
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

}  // namespace

// Keeps one Asio timer armed at the earliest waiter deadline, and disarmed when nobody has one, so a
// served waiter's timeout never keeps the event loop running.
void pool_impl::engine::arm_deadline(const std::weak_ptr<pool_impl>& weak) {
    const auto next = core.next_deadline();
    if (!next) {
        if (armed) {
            armed = false;
            deadline_timer.cancel();
        }
        return;
    }
    if (armed && armed_at <= *next) return;
    armed = true;
    armed_at = *next;
    deadline_timer.expires_at(*next);
    deadline_timer.async_wait([weak](const error_code& ec) {
        if (ec == asio::error::operation_aborted) return;
        if (auto self = weak.lock()) self->on_deadline_timer();
    });
}

pool_impl::pool_impl(asio::any_io_executor ex, const pool_options& opts, std::unique_ptr<hooks_base> hooks)
    : ex_(std::move(ex)),
      post_ex_(asio::prefer(ex_, asio::execution::blocking.never)),
      opts_(opts),
      hooks_(std::move(hooks)),
      factory_(hooks_->factory_mode()),
      before_acquire_(hooks_->mode(check_kind::before_acquire)),
      before_release_(hooks_->mode(check_kind::before_release)),
      healthcheck_(hooks_->mode(check_kind::healthcheck)) {
    validate(opts_);
    if (factory_ == hook_mode::none) throw std::invalid_argument("respool: factory hook is required");
    s_ = std::make_unique<engine>(this, ex_, to_config(opts_, before_acquire_, healthcheck_), opts_.thread_safe);
    const bool validate = opts_.health_check_on_borrow && healthcheck_ != hook_mode::none;
    inline_ok_ = before_acquire_ != hook_mode::async && !(validate && healthcheck_ == hook_mode::async);
    // Housekeeping runs at a quarter of the shortest lifecycle period (at least every 10 ms): that is
    // the precision of idle_ttl, max_lifetime, acquire_ttl and validate_after.
    duration period{};
    for (duration d : {opts_.idle_ttl, opts_.max_lifetime, opts_.acquire_ttl,
                       validate ? opts_.validate_after : duration{}})
        if (d > duration::zero() && (period == duration::zero() || d / 4 < period)) period = d / 4;
    if (validate && opts_.validate_after == duration::zero()) period = std::chrono::milliseconds(10);
    if (period > duration::zero() && period < std::chrono::milliseconds(10)) period = std::chrono::milliseconds(10);
    housekeeping_period_ = period;
    // Neither lifecycle stamps nor hold times: the inline take/release paths may apply.
    plain_ = opts_.acquire_ttl == duration::zero() && !opts_.record_timings;
    // The cache lends without checks or stamps: only when no hook runs on the way out or back in.
    if (opts_.thread_affinity && plain_ && before_acquire_ == hook_mode::none &&
        before_release_ == hook_mode::none && !validate)
        s_->cache = std::make_unique<affinity_cache>();
    cache_ = s_->cache.get();
}

pool_impl::~pool_impl() = default;

void pool_impl::start() {
    core::effects fx;
    {
        guard g(*s_);
        s_->core.replenish(fx);
        check_ready_locked();
    }
    s_->retry_timer = std::make_unique<asio::steady_timer>(background_context());
    s_->recover_timer = std::make_unique<asio::steady_timer>(background_context());
    if (opts_.healthcheck_interval > duration::zero() && healthcheck_ != hook_mode::none) {
        s_->health_timer = std::make_unique<asio::steady_timer>(background_context());
        guard g(*s_);
        arm_health_timer();
    }
    if (housekeeping_period_ > duration::zero()) {
        s_->housekeeping_timer = std::make_unique<asio::steady_timer>(background_context());
        guard g(*s_);
        s_->core.set_now(clock::now());
        arm_housekeeping();
    }
    if (opts_.min > 0) log(log_level::info, "warming up " + std::to_string(opts_.min) + " resources");
    apply(fx);
}

// ---- lifecycle timers (background thread; the work itself runs on the pool's executor) ---------

namespace {
// Arms `t` (a background timer) to post `f` to the pool's executor after `d`, if the pool still exists.
template <class F>
void after(asio::steady_timer& t, duration d, std::weak_ptr<pool_impl> weak, const asio::any_io_executor& ex, F f) {
    t.expires_after(d);
    t.async_wait([weak = std::move(weak), ex, f = std::move(f)](const error_code& ec) mutable {
        if (ec) return;
        if (auto self = weak.lock()) asio::post(ex, [self = std::move(self), f = std::move(f)]() mutable { f(*self); });
    });
}
}  // namespace

void pool_impl::arm_housekeeping() noexcept {
    if (!s_->housekeeping_timer || s_->core.closed()) return;
    after(*s_->housekeeping_timer, housekeeping_period_, weak_from_this(), ex_,
          [](pool_impl& self) { self.housekeep_tick(); });
}

void pool_impl::housekeep_tick() noexcept {
    core::effects fx;
    {
        guard g(*s_);
        const auto now = clock::now();
        s_->core.set_now(now);
        if (s_->cache) {  // cached resources age and expire in the core's idle set
            s_->cache->coarse_now.store(now.time_since_epoch().count(), std::memory_order_relaxed);
            s_->drain_cache_locked(fx);
        }
        s_->core.housekeep(now, fx);
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
    after(*s_->retry_timer, delay, weak_from_this(), ex_, [](pool_impl& self) {
        core::effects fx;
        {
            guard g2(*self.s_);
            self.s_->core.backoff_elapsed(fx);
        }
        self.apply(fx);
    });
}

void pool_impl::stamp_new(resource_node* n) noexcept {
    n->created_at = clock::now();
    if (opts_.max_lifetime > duration::zero()) {
        std::uniform_real_distribution<double> jitter(0.0, 0.025);  // up to 2.5 % earlier
        guard g(*s_);
        const auto life = opts_.max_lifetime - std::chrono::duration_cast<duration>(opts_.max_lifetime * jitter(s_->rng));
        n->expires_at = n->created_at + life;
    }
}

bool pool_impl::logging(log_level level) const noexcept { return s_->sink && s_->sink->enabled(level); }

void pool_impl::log(log_level level, const std::string& message) noexcept {
    if (!logging(level)) return;
    try {
        s_->sink->log(level, message);
    } catch (...) {
    }
}

// ---- effects ---------------------------------------------------------------------------------

int pool_impl::process(core::effects& fx, const error_code& create_ec) noexcept {
    int creates = 0;
    for (std::size_t i = 0; i < fx.size(); ++i) {
        const core::effect& e = fx[i];
        switch (e.what) {
        case core::effect::kind::wake: {
            auto* op = static_cast<acquire_op_base*>(e.w);
            if (op->direct) make_ready(op);
            else op->post_resume(op);
            break;
        }
        case core::effect::kind::create: ++creates; break;
        case core::effect::kind::destroy:
            destroy_node(static_cast<resource_node*>(e.r), to_public(e.reason));
            break;
        default: process_rare(e, create_ec); break;
        }
    }
    fx.clear();
    return creates;
}

// Reports, circuit changes, back-offs and leaks: rare, and kept out of the hot loop's frame.
void pool_impl::process_rare(const core::effect& e, const error_code& create_ec) noexcept {
    switch (e.what) {
        case core::effect::kind::report_success:
            if (auto* st = s_->strategy.get()) {
                try {
                    st->report_success(*this);
                } catch (...) {
                }
            }
            break;
        case core::effect::kind::report_failure:
            if (auto* st = s_->strategy.get()) {
                error_code ec = e.st == core::status::create_failed
                                    ? creation_error(create_ec)
                                : e.reason == core::destroy_reason::poisoned ? error_code(errc::poisoned)
                                                                             : error_code(errc::broken);
                try {
                    st->report_failure(*this, ec);
                } catch (...) {
                }
            }
            break;
        case core::effect::kind::circuit_changed: {
            const circuit_state cs = state();
            notify(s_->obs, [&](observer& o) { o.on_circuit_changed(cs); });
            log(cs == circuit_state::open ? log_level::warning : log_level::info,
                std::string("circuit ") + (cs == circuit_state::open ? "open: acquires fail fast"
                                           : cs == circuit_state::half_open ? "half-open: probing"
                                                                            : "closed: normal operation"));
            break;
        }
        case core::effect::kind::retry_after: {
            const error_code cause = creation_error(create_ec);
            notify(s_->obs, [&](observer& o) { o.on_creation_retry(cause, e.d); });
            if (logging(log_level::warning))
                log(log_level::warning, "creation failed (" + cause.message() + "); next attempt in about " +
                                            duration_text(e.d));
            arm_retry(e.d);
            break;
        }
        case core::effect::kind::leak_suspected:
        case core::effect::kind::leak_returned: {
            auto* n = static_cast<resource_node*>(e.r);
            const auto held = std::chrono::nanoseconds(clock::now() - n->leased_at);
            const bool back = e.what == core::effect::kind::leak_returned;
            notify(s_->obs, [&](observer& o) {
                if (back) o.on_leak_returned(held, n->acquired_at);
                else o.on_leak_suspected(held, n->acquired_at);
            });
            if (logging(back ? log_level::info : log_level::warning)) {
                std::ostringstream m;
                m << (back ? "leaked lease returned after " : "leak suspected: lease held for ") << duration_text(held)
                  << ", acquired at " << (n->acquired_at.file_name()[0] ? n->acquired_at.file_name() : "?") << ':'
                  << n->acquired_at.line() << " (" << n->acquired_at.function_name() << ')';
                log(back ? log_level::info : log_level::warning, m.str());
            }
            break;
        }
    default: break;
    }
}

void pool_impl::apply(core::effects& fx, const error_code& create_ec) noexcept {
    const int creates = process(fx, create_ec);
    if (creates) start_creations(creates);
}

void pool_impl::destroy_node(resource_node* n, destroy_reason why) noexcept {
    if (!hooks_->destroy(n)) log(log_level::warning, std::string("destructor hook failed (") + to_string(why) + ")");
    else if (why == destroy_reason::idle_timeout || why == destroy_reason::lifetime)
        log(log_level::debug, std::string("destroyed an idle resource: ") + to_string(why));
    notify(s_->obs, [&](observer& o) {
        if (why == destroy_reason::poisoned) o.on_poisoned();
        o.on_destroyed(why);
    });
}

// ---- ready queue ----------------------------------------------------------------------------

void pool_impl::make_ready(acquire_op_base* op) noexcept {
    bool post;
    {
        guard g(*s_);
        op->ready_next = nullptr;
        if (s_->ready_tail) s_->ready_tail->ready_next = op;
        else s_->ready_head = op;
        s_->ready_tail = op;
        post = !s_->drain_posted;
        s_->drain_posted = true;
    }
    if (post) post_ex_.execute([self = shared_from_this()] { self->drain_ready(); });
}

// Resumes woken waiters in wake order. A hand-off made by a resumed handler (it released its lease)
// joins the same drain: steady-state hand-offs cost no post at all. Bounded so other handlers on the
// executor are not starved; the rest is re-posted.
void pool_impl::drain_ready() noexcept {
    constexpr int batch = 64;
    for (int i = 0;; ++i) {
        acquire_op_base* op;
        {
            guard g(*s_);
            op = s_->ready_head;
            if (!op) {
                s_->drain_posted = false;
                return;
            }
            if (i == batch) break;
            s_->ready_head = op->ready_next;
            if (!s_->ready_head) s_->ready_tail = nullptr;
        }
        resume(op);
    }
    post_ex_.execute([self = shared_from_this()] { self->drain_ready(); });
}

// ---- creation --------------------------------------------------------------------------------

void pool_impl::start_creations(int n) noexcept {
    if (factory_ == hook_mode::async) {
        for (int i = 0; i < n; ++i) {
            try {
                hooks_->create_async(ex_, [self = shared_from_this()](error_code ec, resource_node* node) {
                    const int more = self->settle_creation(ec, node);
                    if (more) self->start_creations(more);
                    self->after_change();
                });
            } catch (...) {
                const int more = settle_creation(errc::create_failed, nullptr);
                if (more) start_creations(more);
            }
        }
        return;
    }
    // Synchronous factory: run the creations here, iteratively (a long pre-warm does not recurse).
    while (n-- > 0) {
        error_code ec;
        resource_node* node = hooks_->create_sync(ec);
        n += settle_creation(ec, node);
    }
}

int pool_impl::settle_creation(const error_code& ec, resource_node* n) noexcept {
    core::effects fx;
    std::vector<signal_handler> ready;
    {
        if (n) stamp_new(n);
        guard g(*s_);
        if (n) {
            s_->core.creation_succeeded(n, fx);
        } else {
            core::waiter* w = s_->core.creation_failed(fx);
            if (w) static_cast<acquire_op_base*>(w)->create_error = creation_error(ec);
            if (!s_->ready) {
                s_->ready = true;
                s_->ready_ec = creation_error(ec);
            }
        }
        check_ready_locked();
        if (s_->ready) ready.swap(s_->ready_waiters);
    }
    notify(s_->obs, [&](observer& o) {
        if (n) o.on_created();
        else o.on_create_failed(ec);
    });
    fire(ready, s_->ready_ec);
    return process(fx, ec);
}

void pool_impl::check_ready_locked() noexcept {
    if (!s_->ready && s_->core.creating() == 0) s_->ready = true;
}

void pool_impl::async_wait_ready(signal_handler done) {
    {
        guard g(*s_);
        if (!s_->ready) {
            s_->ready_waiters.push_back(std::move(done));
            return;
        }
    }
    done(s_->ready_ec);
}

// ---- acquire ---------------------------------------------------------------------------------

// The synchronous verdict of one check stage on a taken resource (true = lend it).
bool pool_impl::check_inline(stage at, resource_node* n) noexcept {
    if (at == stage::validate) return hooks_->check_sync(check_kind::healthcheck, *n);
    return hooks_->check_sync(check_kind::before_acquire, *n);
}

// A resource leaves the pool for a caller: stamps for leak reports, hold times, the observer.
void pool_impl::hand_out(resource_node* n, const std::source_location& where, const acquire_op_base* op) noexcept {
    if (opts_.acquire_ttl > duration::zero()) n->acquired_at = where;  // only leak reports read it
    const bool timed = opts_.record_timings || s_->obs;
    if (timed) n->taken_at = clock::now();
    if (!timed) return;
    if (op && op->started != clock::time_point{}) {
        const auto waited_for = std::chrono::nanoseconds(n->taken_at - op->started);
        if (opts_.record_timings) {
            guard g(*s_);
            s_->wait_time.record(waited_for);
        }
        notify(s_->obs, [&](observer& o) { o.on_taken(waited_for); });
    } else {  // immediate: counted by the core in bucket 0 (no clock, no lock here)
        notify(s_->obs, [](observer& o) { o.on_taken(std::chrono::nanoseconds(0)); });
    }
}

resource_node* pool_impl::try_acquire(error_code& ec, const std::source_location& where) noexcept {
    if (resource_node* n = take_plain()) return n;
    if (!inline_ok_) {
        ec = errc::not_supported;
        return nullptr;
    }
    for (;;) {
        resource_node* n = acquire_now(ec, where);
        if (n || ec) return n;
        if (factory_ != hook_mode::sync) break;
        // Inline creation: only a place nobody waits for.
        {
            guard g(*s_);
            if (!s_->core.begin_inline_creation()) break;
        }
        error_code cec;
        resource_node* fresh = hooks_->create_sync(cec);
        if (fresh) stamp_new(fresh);
        core::effects fx;
        core::status st;
        {
            guard g(*s_);
            if (fresh) {
                st = s_->core.inline_created(fresh, fx);
                if (st == core::status::ok && s_->core.cfg().confirm_takes) st = s_->core.confirm_take(fresh, fx);
            } else {
                s_->core.inline_failed(fx);
                st = core::status::create_failed;
            }
        }
        notify(s_->obs, [&](observer& o) {
            if (fresh) o.on_created();
            else o.on_create_failed(cec);
        });
        apply(fx, cec);
        if (!fresh) {
            ec = creation_error(cec);
            return nullptr;
        }
        if (st != core::status::ok) {  // closed meanwhile: destroyed
            after_change();
            ec = to_error(st);
            return nullptr;
        }
        hand_out(fresh, where, nullptr);  // a fresh resource skips the checks
        return fresh;
    }
    ec = errc::exhausted;
    return nullptr;
}

resource_node* pool_impl::acquire_now(error_code& ec, const std::source_location& where) noexcept {
    if (resource_node* n = take_plain()) return n;
    for (;;) {
        core::pool_core::take_result t;
        {
            guard g(*s_);
            t = s_->core.try_take();
        }
        if (t.st != core::status::ok) {
            ec = to_error(t.st);
            return nullptr;
        }
        if (!t.r) return nullptr;
        auto* n = static_cast<resource_node*>(t.r);
        if (s_->core.cfg().confirm_takes) {  // synchronous checks only here (inline_ok_)
            const bool ok = t.fresh || ((!t.validate || check_inline(stage::validate, n)) &&
                                        (before_acquire_ == hook_mode::none || check_inline(stage::before_acquire, n)));
            core::effects fx;
            core::status st = core::status::ok;
            {
                guard g(*s_);
                if (ok) st = s_->core.confirm_take(n, fx);
                else s_->core.reject(n, fx);
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

// Where the checks on the way out start: none for a fresh resource, validation when it idled too long.
static pool_impl::stage first_stage(const core::pool_core::take_result& t) noexcept {
    return t.fresh ? pool_impl::stage::done : t.validate ? pool_impl::stage::validate : pool_impl::stage::before_acquire;
}

void pool_impl::start_acquire(acquire_op_base* op) noexcept {
    core::effects fx;
    core::pool_core::take_result t;
    core::status st = core::status::ok;
    {
        guard g(*s_);
        if (op->cancel_requested) {
            t.st = core::status::cancelled;
        } else {
            // The clock only when something needs it: a deadline, wait times, the observer.
            if (op->timeout || opts_.record_timings || s_->obs) {
                const auto now = clock::now();
                op->started = now;  // before park: once parked, another thread may complete the op
                s_->core.set_now(now);
            }
            t = s_->core.try_take();
            if (t.st == core::status::ok && !t.r) {
                st = s_->core.park(*op, op->started, op->timeout, fx);
                if (st == core::status::ok && op->timeout) s_->arm_deadline(weak_from_this());
            }
        }
    }
    // From here on a parked op belongs to the pool: only `fx` and locals are touched.
    if (t.r) return handle_taken(op, static_cast<resource_node*>(t.r), true, first_stage(t));
    if (t.st != core::status::ok) return op->complete(op, to_error(t.st), nullptr, true);
    apply(fx);
    if (st != core::status::ok) op->complete(op, to_error(st), nullptr, true);
}

void pool_impl::resume(acquire_op_base* op) noexcept {
    core::pool_core::take_result t;
    core::effects fx;
    {
        guard g(*s_);
        t = s_->core.resume(*op, fx);
        if (s_->armed) s_->arm_deadline(weak_from_this());
    }
    if (!fx.empty()) apply(fx);
    if (t.r) return handle_taken(op, static_cast<resource_node*>(t.r), false, first_stage(t));
    error_code ec = to_error(t.st);
    if (t.st == core::status::create_failed && op->create_error) ec = op->create_error;
    if (t.st == core::status::timeout) notify(s_->obs, [&](observer& o) { o.on_exhausted(stats()); });
    op->complete(op, ec, nullptr, false);
}

// A check said no: destroy the resource and run steps 1-3 again for the waiter (it re-parks in its
// arrival position when nothing is free). Called with the lock held.
static core::pool_core::take_result reject_and_retry_locked(pool_impl::engine& s, acquire_op_base* op,
                                                            resource_node* n, core::effects& fx,
                                                            const std::weak_ptr<pool_impl>& weak) {
    s.core.reject(n, fx);
    const auto now = clock::now();
    s.core.set_now(now);
    auto t = s.core.retry(*op, now, fx);
    if (t.st == core::status::ok && !t.r && op->timeout) s.arm_deadline(weak);
    return t;
}

// A resource taken for a waiter passes the checks from `from` on (validation on borrow, then
// before_acquire), inline when synchronous, through a coroutine otherwise; a "no" destroys it and the
// waiter retries in its arrival position.
void pool_impl::handle_taken(acquire_op_base* op, resource_node* n, bool post, stage from) noexcept {
    for (;;) {
        stage at = from;
        if (at == stage::before_acquire && before_acquire_ == hook_mode::none) at = stage::done;
        bool ok = true;
        while (at != stage::done) {
            const hook_mode mode = at == stage::validate ? healthcheck_ : before_acquire_;
            if (mode == hook_mode::async) {
                auto ticket = std::make_shared<hook_ticket>();
                ticket->op = op;
                ticket->n = n;
                {
                    guard g(*s_);
                    op->ticket = ticket.get();
                    s_->in_hook.push_back(ticket);
                    if (op->timeout) {  // the deadline bounds the check too
                        ticket->timer = std::make_unique<asio::steady_timer>(ex_, op->started + *op->timeout);
                        ticket->timer->async_wait(
                            [self = op->impl, weak = std::weak_ptr<hook_ticket>(ticket)](const error_code& ec) {
                                if (ec) return;
                                if (auto t = weak.lock()) self->abandon_ticket(t.get(), errc::timeout);
                            });
                    }
                }
                try {
                    hooks_->check_async(at == stage::validate ? check_kind::healthcheck : check_kind::before_acquire, *n,
                                        ex_, [self = op->impl, ticket, at](bool pass) { self->after_async_check(ticket, pass, at); });
                } catch (...) {
                    after_async_check(ticket, false, at);
                }
                return;
            }
            ok = check_inline(at, n);
            if (!ok) break;
            at = at == stage::validate && before_acquire_ != hook_mode::none ? stage::before_acquire : stage::done;
        }
        if (ok && !s_->core.cfg().confirm_takes) {  // no checks configured: lend it as it is
            hand_out(n, op->where, op);
            return op->complete(op, {}, n, post);
        }
        core::effects fx;
        core::pool_core::take_result t;
        core::status st = core::status::ok;
        {
            guard g(*s_);
            if (ok) {
                st = s_->core.confirm_take(n, fx);
            } else {
                t = reject_and_retry_locked(*s_, op, n, fx, weak_from_this());
            }
        }
        apply(fx);
        if (!ok) {
            if (t.r) {
                n = static_cast<resource_node*>(t.r);
                from = first_stage(t);
                continue;
            }
            if (t.st != core::status::ok) op->complete(op, to_error(t.st), nullptr, post);
            return;  // re-parked in its arrival position
        }
        if (st != core::status::ok) {
            after_change();
            return op->complete(op, to_error(st), nullptr, post);
        }
        hand_out(n, op->where, op);
        return op->complete(op, {}, n, post);
    }
}

// Detaches a ticket from its op (the lock is held): the op is then completed by whoever detached it.
static acquire_op_base* detach_locked(pool_impl::engine& s, hook_ticket* t) {
    acquire_op_base* op = t->op;
    if (!op) return nullptr;
    t->op = nullptr;
    op->ticket = nullptr;
    if (t->timer) t->timer->cancel();
    auto& v = s.in_hook;
    for (auto it = v.begin(); it != v.end(); ++it)
        if (it->get() == t) {
            v.erase(it);
            break;
        }
    return op;
}

// Deadline, cancellation or close while a coroutine check runs: the acquire completes now.
void pool_impl::abandon_ticket(hook_ticket* t, error_code ec) noexcept {
    acquire_op_base* op;
    {
        guard g(*s_);
        op = detach_locked(*s_, t);
        if (op && ec == errc::timeout) s_->core.count_timeout();
        if (op && ec == errc::cancelled) s_->core.count_cancellation();
    }
    if (op) op->complete(op, ec, nullptr, true);
}

// A coroutine check finished (on the pool's executor): go on with the next stage, or retry; when the
// acquire was already abandoned, only the resource's fate is decided.
void pool_impl::after_async_check(const std::shared_ptr<hook_ticket>& ticket, bool ok, stage at) noexcept {
    resource_node* n = ticket->n;
    acquire_op_base* op;
    core::effects fx;
    {
        guard g(*s_);
        op = detach_locked(*s_, ticket.get());
        if (!op) {
            if (ok) s_->core.give_back(n, fx);
            else s_->core.reject(n, fx);
        }
    }
    if (!op) {
        apply(fx);
        after_change();
        return;
    }
    if (ok && at == stage::validate && before_acquire_ != hook_mode::none)
        return handle_taken(op, n, true, stage::before_acquire);
    if (ok) return handle_taken(op, n, true, stage::done);
    core::pool_core::take_result t;
    {
        guard g(*s_);
        t = reject_and_retry_locked(*s_, op, n, fx, weak_from_this());
    }
    apply(fx);
    if (t.r) return handle_taken(op, static_cast<resource_node*>(t.r), true, first_stage(t));
    if (t.st != core::status::ok) op->complete(op, to_error(t.st), nullptr, true);
}

void pool_impl::cancel(acquire_op_base* op) noexcept {
    core::effects fx;
    hook_ticket* ticket = nullptr;
    {
        guard g(*s_);
        if (s_->core.cancel(*op, fx)) {
            if (s_->armed) s_->arm_deadline(weak_from_this());
        } else if (op->ticket) {
            ticket = op->ticket;  // inside a coroutine check: complete now
        } else {
            op->cancel_requested = true;  // not parked yet: honoured by its park step
        }
    }
    apply(fx);
    if (ticket) abandon_ticket(ticket, errc::cancelled);
}

void pool_impl::on_deadline_timer() noexcept {
    core::effects fx;
    {
        guard g(*s_);
        s_->armed = false;
        const auto now = clock::now();
        s_->core.set_now(now);
        s_->core.expire(now, fx);
        s_->arm_deadline(weak_from_this());
    }
    apply(fx);
}

// ---- release ---------------------------------------------------------------------------------

void release_node(pool_impl* impl, resource_node* n, bool poisoned) noexcept { impl->release(n, poisoned); }

// The fast paths: small functions with small frames, tried before the general ones.
resource_node* pool_impl::take_plain() noexcept {
    if (cache_) return take_affine();
    if (!plain_ || s_->obs) return nullptr;  // nothing to check, stamp or report
    plain_guard g(*s_);
    return static_cast<resource_node*>(s_->core.take_fast());
}

// Takes the resource in slot `from` (counted for this thread, slot `me`). The second look at `open`
// makes a take that raced with a waiter parking give the resource to the core (the waiter's, then).
[[gnu::always_inline]] inline resource_node* pool_impl::cache_take(unsigned from, unsigned me) noexcept {
    affinity_cache& c = *cache_;
    auto& sl = c.slots[from];
    if (!c.open.load(std::memory_order_acquire) || !sl.node.load(std::memory_order_relaxed)) return nullptr;
    resource_node* n = sl.node.exchange(nullptr, std::memory_order_seq_cst);
    if (!n) return nullptr;
    if (c.open.load(std::memory_order_seq_cst)) {
        c.count_take(me);
        return n;
    }
    finish_release(n, false, false);
    return nullptr;
}

// take_plain with the thread-affinity cache: this thread's slot first, without the lock.
resource_node* pool_impl::take_affine() noexcept {
    const unsigned me = affinity_cache::self();
    if (resource_node* n = cache_take(me, me)) return n;
    return take_cached(me);
}

// take_affine with this thread's slot empty: the core, then the other threads' slots. (The cache
// exists only when plain_; an observer closes it.)
[[gnu::noinline]] resource_node* pool_impl::take_cached(unsigned me) noexcept {
    if (s_->obs) return nullptr;
    resource_node* n;
    {
        guard g(*s_);
        n = static_cast<resource_node*>(s_->core.take_fast());
    }
    for (unsigned i = 1, used = affinity_cache::used(); i < used && !n; ++i) n = cache_take((me + i) % used, me);
    return n;
}

void pool_impl::release(resource_node* n, bool poisoned) noexcept {
    if (affinity_cache* c = cache_) {  // keep it in this thread's slot while nobody waits
        if (!poisoned && c->open.load(std::memory_order_acquire) &&
            (n->expires_at == clock::time_point{} ||
             n->expires_at.time_since_epoch().count() > c->coarse_now.load(std::memory_order_relaxed))) {
            auto& sl = c->slots[affinity_cache::self()];
            resource_node* empty = nullptr;
            // Fails when the slot is full (two leases on this thread, or a thread sharing the slot).
            if (sl.node.compare_exchange_strong(empty, n, std::memory_order_seq_cst, std::memory_order_relaxed)) {
                if (!c->open.load(std::memory_order_seq_cst)) reclaim(sl.node);
                return;
            }
        }  // else: poisoned, past max_lifetime (the core retires it), or the cache is closed
    } else if (plain_ && !poisoned && before_release_ == hook_mode::none && !s_->obs) {
        plain_guard g(*s_);
        if (s_->core.release_fast(n)) return;
    }
    release_general(n, poisoned);
}

// The cache closed while a release filled its slot (a waiter parked, the circuit opened, the pool
// closed): whoever empties the slot first hands the resource to the core.
void pool_impl::reclaim(std::atomic<resource_node*>& slot) noexcept {
    if (resource_node* r = slot.exchange(nullptr, std::memory_order_seq_cst)) finish_release(r, false, false);
}

[[gnu::noinline]] void pool_impl::release_general(resource_node* n, bool poisoned) noexcept {
    if (!poisoned && before_release_ == hook_mode::async) {
        try {
            auto self = shared_from_this();
            hooks_->check_async(check_kind::before_release, *n, ex_,
                                [self, n](bool ok) { self->finish_release(n, false, !ok); });
            return;
        } catch (...) {
            return finish_release(n, false, true);
        }
    }
    const bool broken =
        !poisoned && before_release_ == hook_mode::sync && !hooks_->check_sync(check_kind::before_release, *n);
    finish_release(n, poisoned, broken);
}

void pool_impl::finish_release(resource_node* n, bool poisoned, bool broken) noexcept {
    std::chrono::nanoseconds held{};
    const bool timed = opts_.record_timings || s_->obs;  // otherwise the node is not even read
    if (timed && n->taken_at != clock::time_point{}) held = clock::now() - n->taken_at;
    if (timed) notify(s_->obs, [held](observer& o) { o.on_released(held); });
    core::effects fx;
    bool closed;
    {
        guard g(*s_);
        if (opts_.record_timings) s_->hold_time.record(held);
        s_->core.release(n,
                         poisoned ? core::pool_core::release_kind::poisoned
                         : broken ? core::pool_core::release_kind::broken
                                  : core::pool_core::release_kind::ok,
                         fx);
        closed = s_->core.closed();
    }
    if (!fx.empty()) apply(fx);
    if (closed) after_change();  // may be the last resource of a dropped pool: may free *this
}

// ---- health check ----------------------------------------------------------------------------

void pool_impl::arm_health_timer() noexcept {
    if (!s_->health_timer || s_->core.closed()) return;
    s_->health_timer->expires_after(opts_.healthcheck_interval);
    s_->health_timer->async_wait([weak = weak_from_this()](const error_code& ec) {
        if (ec) return;
        if (auto self = weak.lock()) {
            auto ex = self->ex_;
            asio::post(ex, [self = std::move(self)] { self->health_tick(); });
        }
    });
}

void pool_impl::health_tick() noexcept {
    core::effects fx;
    {
        guard g(*s_);
        ++s_->tick;
        s_->core.set_now(clock::now());
        if (s_->cache) s_->drain_cache_locked(fx);  // cached resources are idle: they are checked too
    }
    apply(fx);
    health_step();
}

// One resource at a time, so acquirers keep finding the rest of the idle set.
void pool_impl::health_step() noexcept {
    for (;;) {
        core::resource* r;
        std::uint64_t tick;
        {
            guard g(*s_);
            tick = s_->tick;
            r = s_->core.begin_check(tick);
        }
        if (!r) break;
        auto* n = static_cast<resource_node*>(r);
        if (healthcheck_ == hook_mode::async) {
            try {
                hooks_->check_async(check_kind::healthcheck, *n, ex_, [self = shared_from_this(), n](bool ok) {
                    core::effects fx;
                    {
                        guard g(*self->s_);
                        self->s_->core.end_check(n, ok, fx);
                    }
                    self->apply(fx);
                    self->health_step();
                });
                return;
            } catch (...) {
                core::effects fx;
                {
                    guard g(*s_);
                    s_->core.end_check(n, false, fx);
                }
                apply(fx);
                continue;
            }
        }
        const bool ok = hooks_->check_sync(check_kind::healthcheck, *n);
        core::effects fx;
        {
            guard g(*s_);
            s_->core.end_check(n, ok, fx);
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

// ---- circuit ---------------------------------------------------------------------------------

circuit_state pool_impl::state() const {
    guard g(*s_);
    return to_public(s_->core.circuit_state());
}

void pool_impl::set_circuit(circuit_state s, std::uint32_t probes) noexcept {
    core::effects fx;
    {
        guard g(*s_);
        ++s_->recover_generation;  // any explicit change supersedes a scheduled recovery
        s_->core.set_circuit(to_core(s), fx, probes);
    }
    apply(fx);
}

void pool_impl::activate() { set_circuit(circuit_state::closed, 0); }
void pool_impl::deactivate() { set_circuit(circuit_state::open, 0); }
void pool_impl::recover() { set_circuit(circuit_state::half_open, 0); }
void pool_impl::recover(std::uint32_t max_probes) { set_circuit(circuit_state::half_open, max_probes); }

void pool_impl::recover_after(duration delay, std::uint32_t max_probes) {
    guard g(*s_);
    if (s_->core.closed() || !s_->recover_timer) return;
    const std::uint64_t generation = ++s_->recover_generation;
    after(*s_->recover_timer, delay, weak_from_this(), ex_, [generation, max_probes](pool_impl& self) {
        {
            guard g2(*self.s_);
            if (self.s_->recover_generation != generation || self.s_->core.circuit_state() != core::circuit::open)
                return;  // someone changed the state meanwhile
        }
        self.set_circuit(circuit_state::half_open, max_probes);
    });
}

void pool_impl::set_log_sink(std::shared_ptr<log_sink> l) {
    guard g(*s_);
    s_->sink = std::move(l);
}

void pool_impl::set_strategy(std::shared_ptr<circuit_strategy> s) {
    guard g(*s_);
    s_->core.set_reports(s != nullptr);
    s_->strategy = std::move(s);
}

void pool_impl::set_observer(std::shared_ptr<observer> o) {
    guard g(*s_);
    s_->obs = std::move(o);
}

pool_stats pool_impl::stats() const noexcept {
    guard g(*s_);
    pool_stats p = to_stats(s_->core.snap());
    if (affinity_cache* c = s_->cache.get()) {  // cached resources are idle, whatever the core counts
        p.acquires += c->takes();
        for (unsigned i = 0; i < affinity_cache::size; ++i) {
            if (c->slots[i].node.load(std::memory_order_relaxed) && p.active > 0) {
                ++p.idle;
                --p.active;
            }
        }
    }
    p.wait_time = s_->wait_time;
    if (opts_.record_timings) p.wait_time.counts[0] += s_->core.stats().immediate_takes;
    p.hold_time = s_->hold_time;
    return p;
}

// ---- close and lifetime ----------------------------------------------------------------------

void pool_impl::close() noexcept {
    core::effects fx;
    std::vector<signal_handler> ready;
    std::vector<acquire_op_base*> abandoned;
    {
        guard g(*s_);
        if (!s_->core.close(fx)) return;
        while (!s_->in_hook.empty()) abandoned.push_back(detach_locked(*s_, s_->in_hook.back().get()));
        if (s_->armed) {
            s_->armed = false;
            s_->deadline_timer.cancel();
        }
        for (auto* t : {s_->health_timer.get(), s_->housekeeping_timer.get(), s_->retry_timer.get(),
                        s_->recover_timer.get()})
            if (t) t->cancel();
        if (!s_->ready) {
            s_->ready = true;
            s_->ready_ec = errc::closed;
        }
        ready.swap(s_->ready_waiters);
    }
    fire(ready, errc::closed);
    apply(fx);
    for (auto* op : abandoned) op->complete(op, errc::closed, nullptr, true);
}

void pool_impl::async_close(duration grace, signal_handler done) {
    close();
    auto timer = std::make_shared<asio::steady_timer>(ex_, grace);
    auto shared_done = std::make_shared<signal_handler>(std::move(done));
    auto once = std::make_shared<bool>(false);
    // Completed by whichever comes first: the drain (after_change) or the grace timer.
    signal_handler finish = [timer, shared_done, once](error_code ec) {
        if (*once) return;
        *once = true;
        timer->cancel();
        // Moved out so the handler (and its work guard) dies now, not when the drain happens.
        signal_handler d = std::move(*shared_done);
        *shared_done = nullptr;
        d(ec);
    };
    bool drained;
    {
        guard g(*s_);
        drained = s_->core.total() == 0;
        if (!drained) s_->close_waiters.push_back(finish);
    }
    if (drained) return finish({});
    timer->async_wait([finish](const error_code& ec) {
        if (ec != asio::error::operation_aborted) finish(errc::timeout);
    });
}

void pool_impl::handle_dropped() noexcept {
    close();
    guard g(*s_);
    s_->dropped = true;
    if (s_->core.total() != 0) s_->keep_alive = shared_from_this();
}

// Called after anything that may have destroyed the last resource of a closed pool.
void pool_impl::after_change() noexcept {
    std::vector<signal_handler> waiters;
    std::shared_ptr<pool_impl> last;
    {
        guard g(*s_);
        if (!s_->core.closed() || s_->core.total() != 0) return;
        waiters.swap(s_->close_waiters);
        if (s_->dropped) last = std::move(s_->keep_alive);
    }
    fire(waiters, {});
    // `last` may be the final reference: *this dies here, and nothing touches it afterwards.
}

}  // namespace respool::detail
