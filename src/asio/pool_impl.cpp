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
#include "timer_list.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

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

core::config to_config(const pool_options& o, hook_mode before_acquire, hook_mode validate, bool context) {
    core::config c;
    c.min = static_cast<std::uint32_t>(o.min);
    c.max = static_cast<std::uint32_t>(o.max);
    c.max_waiters = static_cast<std::uint32_t>(o.max_waiters);
    c.max_concurrent_creations = static_cast<std::uint32_t>(o.max_concurrent_creations);
    c.lifo = o.order == idle_order::lifo;
    c.confirm_takes = before_acquire != hook_mode::none || (o.health_check_on_borrow && validate != hook_mode::none);
    c.idle_ttl = o.idle_ttl;
    c.acquire_ttl = o.acquire_ttl;
    c.validate_on_borrow = o.health_check_on_borrow && validate != hook_mode::none;
    c.stamp_idle = context;  // hooks read idle times (the core adds its own reasons)
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

// Several observers behind one: each event goes to each, in the order they were added; one that throws
// does not keep the event from the others.
class fan_out_observer final : public observer {
public:
    explicit fan_out_observer(std::vector<std::shared_ptr<observer>> all) : all_(std::move(all)) {}
    void on_created() override { each([](observer& o) { o.on_created(); }); }
    void on_create_failed(const error_code& ec) override { each([&](observer& o) { o.on_create_failed(ec); }); }
    void on_destroyed(destroy_reason r) override { each([&](observer& o) { o.on_destroyed(r); }); }
    void on_poisoned() override { each([](observer& o) { o.on_poisoned(); }); }
    void on_taken(std::chrono::nanoseconds w) override { each([&](observer& o) { o.on_taken(w); }); }
    void on_released(std::chrono::nanoseconds h) override { each([&](observer& o) { o.on_released(h); }); }
    void on_exhausted(const pool_stats& s) override { each([&](observer& o) { o.on_exhausted(s); }); }
    void on_circuit_changed(circuit_state c) override { each([&](observer& o) { o.on_circuit_changed(c); }); }
    void on_leak_suspected(std::chrono::nanoseconds h, const std::source_location& w) override {
        each([&](observer& o) { o.on_leak_suspected(h, w); });
    }
    void on_leak_returned(std::chrono::nanoseconds h, const std::source_location& w) override {
        each([&](observer& o) { o.on_leak_returned(h, w); });
    }
    void on_creation_retry(const error_code& ec, std::chrono::nanoseconds d) override {
        each([&](observer& o) { o.on_creation_retry(ec, d); });
    }

private:
    template <class F>
    void each(F f) {
        for (auto& o : all_) {
            try {
                f(*o);
            } catch (...) {
            }
        }
    }
    std::vector<std::shared_ptr<observer>> all_;
};

std::shared_ptr<observer> fan_out(const std::vector<std::shared_ptr<observer>>& all) {
    if (all.empty()) return nullptr;
    if (all.size() == 1) return all.front();
    return std::make_shared<fan_out_observer>(all);
}

// Posts a one-shot handler with an error code; the handler decides its own executor.
void fire(std::vector<signal_handler>& hs, const error_code& ec) {
    for (auto& h : hs) h(ec);
    hs.clear();
}

}  // namespace

// One coroutine hook under way (factory, check, reset). Whichever comes first decides its outcome:
// the coroutine's completion, or its bound / close(). The bound and close count it as a failure of
// the hook at once and emit a terminal cancellation; the coroutine still owns its resource until it
// returns, and the resource is destroyed then. A borrow check also carries the acquire waiting for
// its verdict: that acquire's own deadline, a cancellation or close complete it at once, and the
// verdict then only decides the resource's fate. `op` is cleared when either side wins.
struct hook_run {
    run_kind what{};
    resource_node* n = nullptr;     // the resource it works on; none for a creation
    acquire_op_base* op = nullptr;  // borrow checks: the acquire waiting for the verdict
    asio::cancellation_signal signal;
    timer_list::handle bound;        // create_timeout / check_timeout / reset_timeout
    timer_list::handle op_deadline;  // borrow checks: the acquire's own deadline
    hook_context ctx;                // what the hook was told (its coroutine may hold the reference)
    destroy_reason why = destroy_reason::closed;  // decided: what its resource dies of
    bool decided = false;  // past its bound or interrupted by close: the failure is counted
};

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

pool_impl::stage first_stage(const core::pool_core::take_result& t) noexcept;
core::pool_core::take_result reject_and_retry_locked(pool_impl::engine& s, acquire_op_base* op, resource_node* n,
                                                     core::effects& fx);

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

struct pool_impl::engine final : pool_clock::alarm {
    engine(pool_impl* o, const asio::any_io_executor& ex, const core::config& c, bool ts,
           std::shared_ptr<pool_clock> clk)
        : owner(o), core(c), thread_safe(ts), clock(std::move(clk)), alarm_ex(ex) {}
    // A ring may be under way on the clock's thread: cancel waits for it, and no other follows.
    ~engine() { clock->cancel(*this); }

    pool_impl* const owner;

    core::pool_core core;
    // On its own cache line: lockers hammering the mutex must not steal the lines the holder writes.
    alignas(64) pool_lock mu;
    const bool thread_safe;
    char pad_[64 - sizeof(bool)]{};

    // Timers: the core's waiter deadlines and `timers`, behind one alarm on the pool's clock.
    const std::shared_ptr<pool_clock> clock;
    timer_list timers;
    bool alarm_set = false;
    clock::time_point alarm_at{};
    std::weak_ptr<pool_impl> self;  // what a ring posts to (set by start())
    asio::any_io_executor alarm_ex;
    timer_list::handle health_timer, housekeeping_timer, retry_timer, recover_timer;
    std::uint64_t tick = 0;
    std::minstd_rand rng{std::random_device{}()};

    std::shared_ptr<circuit_strategy> strategy;
    std::vector<std::shared_ptr<observer>> observers;
    std::shared_ptr<observer> obs;  // what events go to: the one observer, a fan-out of several, or none
    std::shared_ptr<log_sink> sink;
    histogram wait_time, hold_time;

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
    bool ready = false;
    error_code ready_ec;

    std::unique_ptr<affinity_cache> cache;  // thread_affinity, when the options allow it

    // The alarm at the earliest timer or waiter deadline; cancelled when there is none (lock held).
    void rearm() noexcept;
    // Adds a timer running `f` on the pool's executor after `d` (lock held). Timer callbacks run from
    // on_alarm, which holds a reference to the pool: they may capture the pool_impl.
    timer_list::handle schedule(duration d, timer_list::callback f) {
        auto h = timers.add(time_after(clock->now(), d), std::move(f));
        rearm();
        return h;
    }
    void cancel_timer(timer_list::handle& h) noexcept { timers.cancel(h); }
    void ring() noexcept override;
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

void pool_impl::engine::rearm() noexcept {
    auto next = core.next_deadline();
    if (auto t = timers.next(); t && (!next || *t < *next)) next = t;
    if (!next) {  // also after a ring: the cancel orders that ring's post before whatever follows
        clock->cancel(*this);
        alarm_set = false;
        return;
    }
    if (alarm_set && alarm_at <= *next) return;  // an earlier ring re-arms for the rest
    try {
        clock->set(*this, *next);
        alarm_set = true;
        alarm_at = *next;
    } catch (...) {  // out of memory in the clock: the next timer change tries again
    }
}

// On the clock's thread: only a post. The timer work runs on the pool's executor.
void pool_impl::engine::ring() noexcept {
    try {
        asio::post(alarm_ex, [weak = self] {
            if (auto p = weak.lock()) p->on_alarm();
        });
    } catch (...) {
    }
}

pool_impl::pool_impl(asio::any_io_executor ex, const pool_options& opts, std::unique_ptr<hooks_base> hooks)
    : ex_(std::move(ex)),
      post_ex_(asio::prefer(ex_, asio::execution::blocking.never)),
      opts_(opts),
      hooks_(std::move(hooks)),
      factory_(hooks_->factory_mode()),
      validate_(hooks_->mode(check_kind::validate)),
      before_acquire_(hooks_->mode(check_kind::before_acquire)),
      healthcheck_(hooks_->mode(check_kind::healthcheck)),
      needs_reset_(hooks_->mode(check_kind::needs_reset)),
      before_release_(hooks_->mode(check_kind::before_release)),
      context_(hooks_->wants_context()) {
    validate(opts_);
    if (factory_ == hook_mode::none) throw std::invalid_argument("respool: factory hook is required");
    s_ = std::make_unique<engine>(this, ex_, to_config(opts_, before_acquire_, validate_, context_), opts_.thread_safe,
                                  opts_.clock ? opts_.clock : default_clock());
    const bool validate = opts_.health_check_on_borrow && validate_ != hook_mode::none;
    inline_ok_ = before_acquire_ != hook_mode::async && !(validate && validate_ == hook_mode::async);
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
    plain_ = opts_.acquire_ttl == duration::zero() && !opts_.record_timings && !context_;
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
        s_->self = weak_from_this();
        s_->core.set_now(now());
        s_->core.replenish(fx);
        check_ready_locked();
        if (opts_.healthcheck_interval > duration::zero() && healthcheck_ != hook_mode::none) arm_health_timer();
        if (housekeeping_period_ > duration::zero()) arm_housekeeping();
    }
    if (opts_.min > 0) log(log_level::info, "warming up " + std::to_string(opts_.min) + " resources");
    apply(fx);
}

clock::time_point pool_impl::now() const noexcept { return s_->clock->now(); }

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

void pool_impl::stamp_new(resource_node* n) noexcept {
    n->created_at = now();
    if (opts_.max_lifetime > duration::zero()) {
        std::uniform_real_distribution<double> jitter(0.0, 0.025);  // up to 2.5 % earlier
        guard g(*s_);
        const auto life = opts_.max_lifetime - std::chrono::duration_cast<duration>(opts_.max_lifetime * jitter(s_->rng));
        n->expires_at = time_after(n->created_at, life);
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

int pool_impl::process(core::effects& fx, const error_code& create_ec, const resource_node* keep) noexcept {
    int creates = 0;
    for (std::size_t i = 0; i < fx.size(); ++i) {
        const core::effect& e = fx[i];
        switch (e.what) {
        case core::effect::kind::wake: {
            // A pool on one executor resumes every waiter there (its state is touched nowhere else); a
            // thread_safe one may resume a waiter on the waiter's own executor, saving a hop.
            auto* op = static_cast<acquire_op_base*>(e.w);
            if (op->direct || !s_->thread_safe) make_ready(op);
            else op->post_resume(op);
            break;
        }
        case core::effect::kind::create: ++creates; break;
        case core::effect::kind::destroy:
            if (e.r != keep) destroy_node(static_cast<resource_node*>(e.r), to_public(e.reason));
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
            const auto held = std::chrono::nanoseconds(now() - n->leased_at);
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

void pool_impl::apply(core::effects& fx, const error_code& create_ec, const resource_node* keep) noexcept {
    const int creates = process(fx, create_ec, keep);
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
        resume(op, op->direct);
    }
    post_ex_.execute([self = shared_from_this()] { self->drain_ready(); });
}

// ---- creation --------------------------------------------------------------------------------

void pool_impl::start_creations(int n) noexcept {
    if (factory_ == hook_mode::async) {
        for (int i = 0; i < n; ++i) {
            try {
                std::shared_ptr<hook_run> run;
                {
                    guard g(*s_);
                    run = begin_run_locked(run_kind::create, nullptr, opts_.create_timeout);
                }
                hooks_->create_async(
                    ex_, run->signal.slot(),
                    [self = shared_from_this(), run](error_code ec, std::exception_ptr error, resource_node* node) {
                        self->creation_done(run, ec, std::move(error), node);
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
        std::exception_ptr error;
        resource_node* node = hooks_->create_sync(ec, error);
        n += settle_creation(ec, node, error);
    }
}

void pool_impl::creation_done(const std::shared_ptr<hook_run>& run, error_code ec, std::exception_ptr error,
                              resource_node* node) noexcept {
    bool live;
    {
        guard g(*s_);
        live = end_run_locked(*run);
    }
    if (!live) {  // past create_timeout (or closed): its slot was freed then; the late resource goes
        if (node && !hooks_->destroy(node)) log(log_level::warning, "destructor hook failed (late creation)");
        return;
    }
    const int more = settle_creation(ec, node, error);
    if (more) start_creations(more);
    after_change();
}

// ---- coroutine hook runs: bounded, interruptible ---------------------------------------------

// Registers a coroutine hook run (lock held): bounded by `limit`, listed for close() to interrupt.
std::shared_ptr<hook_run> pool_impl::begin_run_locked(run_kind kind, resource_node* n, duration limit) {
    auto run = std::make_shared<hook_run>();
    run->what = kind;
    run->n = n;
    run->bound = s_->schedule(limit, [this, weak = std::weak_ptr<hook_run>(run)] {
        if (auto r = weak.lock()) hook_overdue(r);
    });
    s_->runs.push_back(run);
    return run;
}

// The run's coroutine returned (lock held). False when its outcome was decided before (bound, close).
bool pool_impl::end_run_locked(hook_run& run) noexcept {
    s_->cancel_timer(run.bound);
    s_->cancel_timer(run.op_deadline);
    if (run.decided) return false;
    auto& v = s_->runs;
    for (auto it = v.begin(); it != v.end(); ++it)
        if (it->get() == &run) {
            v.erase(it);
            break;
        }
    return true;
}

// Detaches the acquire waiting for a borrow check (lock held); the caller completes it.
static acquire_op_base* detach_op_locked(pool_impl::engine& s, hook_run& run) noexcept {
    acquire_op_base* op = run.op;
    if (!op) return nullptr;
    run.op = nullptr;
    op->check = nullptr;
    s.cancel_timer(run.op_deadline);
    return op;
}

// A hook past its bound, or interrupted by close(): it fails now. Its coroutine is asked to stop; the
// resource it holds is counted out here and destroyed when the coroutine returns (end_run_locked).
void pool_impl::hook_overdue(const std::shared_ptr<hook_run>& run) noexcept {
    core::effects fx;
    acquire_op_base* op = nullptr;
    core::pool_core::take_result next;
    {
        guard g(*s_);
        if (run->decided) return;
        auto& v = s_->runs;
        auto it = v.begin();
        while (it != v.end() && it->get() != run.get()) ++it;
        if (it == v.end()) return;  // it returned meanwhile
        v.erase(it);
        run->decided = true;
        s_->cancel_timer(run->bound);
        switch (run->what) {
        case run_kind::create: break;  // settled below, like any failed creation
        case run_kind::validate:
        case run_kind::before_acquire:
            run->why = destroy_reason::rejected;
            op = detach_op_locked(*s_, *run);
            if (op) next = reject_and_retry_locked(*s_, op, run->n, fx);
            else s_->core.reject(run->n, fx);
            break;
        case run_kind::healthcheck:
            run->why = destroy_reason::unhealthy;
            s_->core.end_check(run->n, false, fx);
            break;
        case run_kind::before_release:
            run->why = destroy_reason::broken;
            s_->core.release(run->n, core::pool_core::release_kind::broken, fx);
            break;
        }
    }
    run->signal.emit(asio::cancellation_type::terminal);
    if (logging(log_level::warning))
        log(log_level::warning, std::string(to_string(run->what)) + " hook " +
                                    (s_->core.closed() ? "interrupted by close" : "timed out") + ": cancelled");
    if (run->what == run_kind::create) {
        const int more = settle_creation(errc::hook_timeout, nullptr);
        if (more) start_creations(more);
        after_change();
        return;
    }
    apply(fx, {}, run->n);
    if (op) {
        if (next.r) return handle_taken(op, static_cast<resource_node*>(next.r), true, first_stage(next));
        if (next.st != core::status::ok) op->complete(op, to_error(next.st), nullptr, true);
    }
    if (run->what == run_kind::healthcheck) return health_step();
    after_change();
}

int pool_impl::settle_creation(const error_code& ec, resource_node* n, const std::exception_ptr& error) noexcept {
    core::effects fx;
    std::vector<signal_handler> ready;
    if (!n && logging(log_level::warning))
        log(log_level::warning, "creation failed: " + exception_message(error, creation_error(ec)));
    {
        if (n) stamp_new(n);
        guard g(*s_);
        if (n) {
            s_->core.creation_succeeded(n, fx);
        } else {
            if (auto* op = static_cast<acquire_op_base*>(s_->core.creation_failed(fx))) {
                op->create_error = creation_error(ec);
                op->create_exception = error;
            }
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
    return check(at == stage::validate ? check_kind::validate : check_kind::before_acquire, *n, hook_reason::on_borrow);
}

hook_context pool_impl::context_of(const resource_node& n, hook_reason why) const noexcept {
    hook_context c;
    c.reason = why;
    if (!context_) return c;  // no hook reads it: no clock read
    const auto t = now();
    c.age = t - n.created_at;
    if (why != hook_reason::on_release) c.idle_for = t - n.idle_since;
    c.uses = n.uses;
    return c;
}

bool pool_impl::check(check_kind k, resource_node& n, hook_reason why) noexcept {
    return hooks_->check_sync(k, n, context_of(n, why));
}

// A resource leaves the pool for a caller: stamps for leak reports, hold times, the observer.
void pool_impl::hand_out(resource_node* n, const std::source_location& where, const acquire_op_base* op) noexcept {
    if (opts_.acquire_ttl > duration::zero()) n->acquired_at = where;  // only leak reports read it
    if (context_) ++n->uses;
    const bool timed = opts_.record_timings || s_->obs;
    if (timed) n->taken_at = now();
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
    resource_node* n = acquire_now(ec, where);
    if (n || ec) return n;
    n = create_inline(ec, where);
    if (!n && !ec) ec = errc::exhausted;
    return n;
}

// A synchronous factory creates for the caller, in a place nobody waits for (try_acquire, and an
// acquire whose deadline has already passed). nullptr without error: no such place.
resource_node* pool_impl::create_inline(error_code& ec, const std::source_location& where,
                                        std::exception_ptr* error_out) noexcept {
    if (factory_ != hook_mode::sync) return nullptr;
    {
        guard g(*s_);
        if (!s_->core.begin_inline_creation()) return nullptr;
    }
    error_code cec;
    std::exception_ptr error;
    resource_node* fresh = hooks_->create_sync(cec, error);
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
        if (logging(log_level::warning)) log(log_level::warning, "creation failed: " + exception_message(error, ec));
        if (error_out) *error_out = error;
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
pool_impl::stage first_stage(const core::pool_core::take_result& t) noexcept {
    return t.fresh ? pool_impl::stage::done : t.validate ? pool_impl::stage::validate : pool_impl::stage::before_acquire;
}

void pool_impl::start_acquire(acquire_op_base* op) noexcept {
    core::effects fx;
    core::pool_core::take_result t;
    core::status st = core::status::ok;
    bool expired = false;
    {
        guard g(*s_);
        if (op->cancel_requested) {
            t.st = core::status::cancelled;
        } else {
            // The clock only when something needs it: a deadline, wait times, the observer.
            if (op->timeout || op->deadline || opts_.record_timings || s_->obs) {
                const auto t0 = now();
                op->started = t0;  // before park: once parked, another thread may complete the op
                if (op->timeout && !op->deadline) op->deadline = time_after(t0, *op->timeout);
                s_->core.set_now(t0);
            }
            t = s_->core.try_take();
            if (t.st == core::status::ok && !t.r) {
                expired = op->deadline && *op->deadline <= op->started;
                if (!expired) {
                    std::optional<duration> left;
                    if (op->deadline) left = *op->deadline - op->started;
                    st = s_->core.park(*op, op->started, left, fx);
                    if (st == core::status::ok && op->deadline) s_->rearm();
                }
            }
        }
    }
    // From here on a parked op belongs to the pool: only `fx` and locals are touched.
    if (t.r) return handle_taken(op, static_cast<resource_node*>(t.r), true, first_stage(t));
    if (t.st != core::status::ok) return op->complete(op, to_error(t.st), nullptr, true);
    if (expired) {  // no time to wait: only a place that is free now (a synchronous creation) serves
        error_code ec;
        resource_node* n = create_inline(ec, op->where, &op->create_exception);
        if (ec) op->create_error = ec;
        if (!n && !ec) {
            guard g(*s_);
            s_->core.count_timeout();
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
        guard g(*s_);
        t = s_->core.resume(*op, fx);
    }
    if (!fx.empty()) apply(fx);
    const bool post = !on_handler_executor;
    if (t.r) return handle_taken(op, static_cast<resource_node*>(t.r), post, first_stage(t));
    error_code ec = to_error(t.st);
    if (t.st == core::status::create_failed && op->create_error) ec = op->create_error;
    if (t.st == core::status::timeout) notify(s_->obs, [&](observer& o) { o.on_exhausted(stats()); });
    op->complete(op, ec, nullptr, post);
}

// A check said no: destroy the resource and run steps 1-3 again for the waiter (it re-parks in its
// arrival position when nothing is free). Called with the lock held.
core::pool_core::take_result reject_and_retry_locked(pool_impl::engine& s, acquire_op_base* op, resource_node* n,
                                                     core::effects& fx) {
    s.core.reject(n, fx);
    const auto t0 = s.clock->now();
    s.core.set_now(t0);
    auto t = s.core.retry(*op, t0, fx);
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
            const hook_mode mode = at == stage::validate ? validate_ : before_acquire_;
            if (mode == hook_mode::async) {
                std::shared_ptr<hook_run> run;
                try {
                    guard g(*s_);
                    run = begin_run_locked(at == stage::validate ? run_kind::validate : run_kind::before_acquire, n,
                                           opts_.check_timeout);
                    run->op = op;
                    run->ctx = context_of(*n, hook_reason::on_borrow);
                    op->check = run.get();
                    if (op->deadline)  // the acquire's own deadline ends the wait, not the check
                        run->op_deadline = s_->schedule(*op->deadline - now(), [this, weak = std::weak_ptr<hook_run>(run)] {
                            if (auto r = weak.lock()) abandon_check(*r, errc::timeout);
                        });
                } catch (...) {
                    ok = false;
                    break;
                }
                try {
                    hooks_->check_async(at == stage::validate ? check_kind::validate : check_kind::before_acquire, *n,
                                        run->ctx, ex_, run->signal.slot(),
                                        [self = op->impl, run, at](bool pass) { self->check_done(run, pass, at); });
                } catch (...) {
                    check_done(run, false, at);
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
            if (ok) st = s_->core.confirm_take(n, fx);
            else t = reject_and_retry_locked(*s_, op, n, fx);
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

// The acquire waiting for a borrow check ends now (its deadline passed, or it was cancelled); the
// check goes on and decides the resource's fate.
void pool_impl::abandon_check(hook_run& run, error_code ec) noexcept {
    acquire_op_base* op;
    {
        guard g(*s_);
        op = detach_op_locked(*s_, run);
        if (op && ec == errc::timeout) s_->core.count_timeout();
        if (op && ec == errc::cancelled) s_->core.count_cancellation();
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
        guard g(*s_);
        live = end_run_locked(*run);
        if (live) {
            op = detach_op_locked(*s_, *run);
            if (!op) {
                if (ok) s_->core.give_back(n, fx);
                else s_->core.reject(n, fx);
            }
        }
    }
    if (!live) {  // failed at its bound or at close, and counted out then
        destroy_node(n, run->why);
        return after_change();
    }
    if (!op) {
        apply(fx);
        return after_change();
    }
    if (ok && at == stage::validate && before_acquire_ != hook_mode::none)
        return handle_taken(op, n, true, stage::before_acquire);
    if (ok) return handle_taken(op, n, true, stage::done);
    core::pool_core::take_result t;
    {
        guard g(*s_);
        t = reject_and_retry_locked(*s_, op, n, fx);
    }
    apply(fx);
    if (t.r) return handle_taken(op, static_cast<resource_node*>(t.r), true, first_stage(t));
    if (t.st != core::status::ok) op->complete(op, to_error(t.st), nullptr, true);
}

void pool_impl::cancel(acquire_op_base* op) noexcept {
    core::effects fx;
    acquire_op_base* abandoned = nullptr;
    {
        guard g(*s_);
        if (s_->core.cancel(*op, fx)) {
        } else if (op->check) {  // inside a coroutine check: complete now
            abandoned = detach_op_locked(*s_, *op->check);
            s_->core.count_cancellation();
        } else {
            op->cancel_requested = true;  // not parked yet: honoured by its park step
        }
    }
    apply(fx);
    if (abandoned) abandoned->complete(abandoned, errc::cancelled, nullptr, true);
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
    } else if (plain_ && !poisoned && !s_->obs &&
               (before_release_ == hook_mode::none ||
                (needs_reset_ == hook_mode::sync && !check(check_kind::needs_reset, *n, hook_reason::on_release)))) {
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
    // A clean resource (needs_reset said no) skips before_release, coroutine or not.
    const bool reset = !poisoned && before_release_ != hook_mode::none &&
                       (needs_reset_ == hook_mode::none || check(check_kind::needs_reset, *n, hook_reason::on_release));
    if (reset && before_release_ == hook_mode::async) {
        std::shared_ptr<hook_run> run;
        try {
            {
                guard g(*s_);
                run = begin_run_locked(run_kind::before_release, n, opts_.reset_timeout);
                run->ctx = context_of(*n, hook_reason::on_release);
            }
            hooks_->check_async(check_kind::before_release, *n, run->ctx, ex_, run->signal.slot(),
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
        guard g(*s_);
        live = end_run_locked(*run);
    }
    if (live) return finish_release(run->n, false, !ok);
    destroy_node(run->n, run->why);  // failed at reset_timeout or close, and counted out then
    after_change();
}

void pool_impl::finish_release(resource_node* n, bool poisoned, bool broken, const resource_node* keep) noexcept {
    std::chrono::nanoseconds held{};
    const bool timed = opts_.record_timings || s_->obs;  // otherwise the node is not even read
    if (timed && n->taken_at != clock::time_point{}) held = now() - n->taken_at;
    if (timed) notify(s_->obs, [held](observer& o) { o.on_released(held); });
    core::effects fx;
    bool closed;
    std::shared_ptr<pool_impl> self;
    {
        guard g(*s_);
        if (opts_.record_timings) s_->hold_time.record(held);
        s_->core.release(n,
                         poisoned ? core::pool_core::release_kind::poisoned
                         : broken ? core::pool_core::release_kind::broken
                                  : core::pool_core::release_kind::ok,
                         fx);
        closed = s_->core.closed();
        // In a thread_safe pool another thread may drop the pool object as soon as this section
        // ends, and a closed pool lives only until its count is zero: keep it for the rest of this
        // call (destructor hook, strategy, drain). Taken under the lock, while something holds it.
        if (closed || (s_->thread_safe && !fx.empty())) self = shared_from_this();
    }
    if (!fx.empty()) apply(fx, {}, keep);
    if (closed) after_change();  // may be the last resource of a dropped pool: may free *this
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
            n = static_cast<resource_node*>(s_->core.begin_check(s_->tick));
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

void pool_impl::health_done(const std::shared_ptr<hook_run>& run, bool ok) noexcept {
    core::effects fx;
    bool live;
    {
        guard g(*s_);
        live = end_run_locked(*run);
        if (live) s_->core.end_check(run->n, ok, fx);
    }
    if (!live) {  // failed at check_timeout or close: the round went on then
        destroy_node(run->n, run->why);
        return after_change();
    }
    apply(fx);
    health_step();
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
        s_->cancel_timer(s_->recover_timer);  // any explicit change supersedes a scheduled recovery
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
    if (s_->core.closed()) return;
    s_->cancel_timer(s_->recover_timer);  // the latest schedule wins
    s_->recover_timer = s_->schedule(delay, [this, max_probes] {
        {
            guard g2(*s_);
            s_->recover_timer = {};
            if (s_->core.circuit_state() != core::circuit::open) return;  // someone changed it meanwhile
        }
        set_circuit(circuit_state::half_open, max_probes);
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
    s_->observers.clear();
    if (o) s_->observers.push_back(std::move(o));
    s_->obs = fan_out(s_->observers);
}

void pool_impl::add_observer(std::shared_ptr<observer> o) {
    if (!o) return;
    guard g(*s_);
    s_->observers.push_back(std::move(o));
    s_->obs = fan_out(s_->observers);
}

void pool_impl::remove_observer(const std::shared_ptr<observer>& o) {
    guard g(*s_);
    std::erase(s_->observers, o);
    s_->obs = fan_out(s_->observers);
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
    std::vector<std::shared_ptr<hook_run>> interrupted;
    {
        guard g(*s_);
        if (!s_->core.close(fx)) return;
        // No timer outlives close (but async_close's grace): once this returns, nothing rings.
        for (auto* t : {&s_->health_timer, &s_->housekeeping_timer, &s_->retry_timer, &s_->recover_timer})
            s_->cancel_timer(*t);
        for (auto& run : s_->runs) {
            s_->cancel_timer(run->bound);
            if (acquire_op_base* op = detach_op_locked(*s_, *run)) abandoned.push_back(op);
        }
        interrupted = s_->runs;
        s_->rearm();
        if (!s_->ready) {
            s_->ready = true;
            s_->ready_ec = errc::closed;
        }
        ready.swap(s_->ready_waiters);
    }
    fire(ready, errc::closed);
    apply(fx);
    for (auto* op : abandoned) op->complete(op, errc::closed, nullptr, true);
    // Hooks under way are interrupted on the pool's executor (their cancellation slots live there).
    if (!interrupted.empty()) {
        try {
            asio::post(ex_, [self = shared_from_this(), runs = std::move(interrupted)] {
                for (const auto& r : runs) self->hook_overdue(r);
            });
        } catch (...) {
        }
    }
}

void pool_impl::async_close(duration grace, signal_handler done) {
    close();
    {
        guard g(*s_);
        if (s_->core.total() != 0) {
            // Completed exactly once, under the lock: by the drain (after_change) or by the grace timer.
            const std::uint64_t key = ++s_->close_keys;
            auto h = s_->schedule(grace, [this, key] { close_grace_over(key); });
            s_->close_waiters.push_back({std::move(done), h, key});
            return;
        }
    }
    done({});
}

void pool_impl::close_grace_over(std::uint64_t key) noexcept {
    signal_handler done;
    {
        guard g(*s_);
        auto& v = s_->close_waiters;
        for (auto it = v.begin(); it != v.end(); ++it)
            if (it->key == key) {
                done = std::move(it->done);
                v.erase(it);
                break;
            }
    }
    if (done) done(errc::timeout);
}

void pool_impl::handle_dropped() noexcept {
    close();
    guard g(*s_);
    s_->dropped = true;
    if (s_->core.total() != 0) s_->keep_alive = shared_from_this();
}

// Called after anything that may have destroyed the last resource of a closed pool.
void pool_impl::after_change() noexcept {
    std::vector<engine::close_waiter> waiters;
    std::shared_ptr<pool_impl> last;
    {
        guard g(*s_);
        if (!s_->core.closed() || s_->core.total() != 0) return;
        waiters.swap(s_->close_waiters);
        for (auto& w : waiters) s_->cancel_timer(w.grace);
        s_->rearm();
        if (s_->dropped) last = std::move(s_->keep_alive);
    }
    for (auto& w : waiters) w.done({});
    // `last` may be the final reference: *this dies here, and nothing touches it afterwards.
}

}  // namespace respool::detail
