// The Asio driver. Rules live in the core; this file only (1) takes the lock in thread_safe mode,
// (2) runs hooks outside the lock, (3) turns core effects into posted resumptions, destructor calls
// and strategy reports, and (4) owns the timers.
//
// Lifetime: pool<T> holds a shared_ptr. Leases hold a raw pointer; when the pool object goes away
// while leases are out, the impl keeps itself alive (self) until the last resource is gone, so the
// fast path never touches a reference count. Operations that outlive a call (parked acquires,
// coroutine hooks, timers) hold a shared_ptr or a weak_ptr.
#include <respool/detail/pool_impl.hpp>

#include "core/pool_core.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace respool {

const char* to_string(destroy_reason r) noexcept { return core::to_string(static_cast<core::destroy_reason>(r)); }

namespace {

std::string show(duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + "ms";
}

}  // namespace

void validate(const pool_options& o) {
    constexpr std::size_t limit = 0x7fffffff;
    auto fail = [](const std::string& m) { throw std::invalid_argument("respool: " + m); };
    if (o.max == 0) fail("max (0) must be at least 1");
    if (o.max > limit) fail("max (" + std::to_string(o.max) + ") must not exceed " + std::to_string(limit));
    if (o.min > o.max)
        fail("min (" + std::to_string(o.min) + ") must not exceed max (" + std::to_string(o.max) + ")");
    if (o.max_concurrent_creations == 0) fail("max_concurrent_creations (0) must be at least 1");
    if (o.max_concurrent_creations > limit) fail("max_concurrent_creations is too large");
    if (o.max_waiters > limit) fail("max_waiters (" + std::to_string(o.max_waiters) + ") is too large");
    if (o.healthcheck_interval < duration::zero())
        fail("healthcheck_interval (" + show(o.healthcheck_interval) + ") must not be negative");
    if (o.acquire_timeout && *o.acquire_timeout < duration::zero())
        fail("acquire_timeout (" + show(*o.acquire_timeout) + ") must not be negative");
}

}  // namespace respool

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

error_code to_error(core::status s) noexcept {
    switch (s) {
    case core::status::ok: return {};
    case core::status::closed: return errc::closed;
    case core::status::timeout: return errc::timeout;
    case core::status::cancelled: return errc::cancelled;
    case core::status::unavailable: return errc::unavailable;
    case core::status::exhausted: return errc::exhausted;
    case core::status::create_failed: return errc::create_failed;
    }
    return errc::create_failed;
}

pool_stats to_stats(const core::snapshot& s) noexcept {
    pool_stats p;
    p.idle = s.idle;
    p.active = s.active;
    p.total = s.total;
    p.waiting = s.waiting;
    p.max = s.max;
    p.reserved = s.reserved;
    p.creating = s.creating;
    p.acquires = s.c.acquires;
    p.waits = s.c.waits;
    p.timeouts = s.c.timeouts;
    p.cancellations = s.c.cancellations;
    p.creations = s.c.creations;
    p.create_failures = s.c.create_failures;
    p.destructions = s.c.destructions;
    p.poisoned = s.c.poisoned;
    p.unavailable_rejections = s.c.unavailable_rejections;
    p.exhausted_rejections = s.c.exhausted_rejections;
    p.rejected = s.c.rejected;
    p.broken = s.c.broken;
    p.unhealthy = s.c.unhealthy;
    p.circuit = static_cast<circuit_state>(s.circuit_state);
    p.closed = s.closed;
    return p;
}

core::config to_config(const pool_options& o, hook_mode before_acquire) {
    core::config c;
    c.min = static_cast<std::uint32_t>(o.min);
    c.max = static_cast<std::uint32_t>(o.max);
    c.max_waiters = static_cast<std::uint32_t>(o.max_waiters);
    c.max_concurrent_creations = static_cast<std::uint32_t>(o.max_concurrent_creations);
    c.lifo = o.order == idle_order::lifo;
    c.confirm_takes = before_acquire != hook_mode::none;
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

// Wait time of an acquire for the observer (zero when it never parked).
std::chrono::nanoseconds waited(const acquire_op_base* op, clock::time_point now) noexcept {
    return op->started == clock::time_point{} ? std::chrono::nanoseconds(0) : std::chrono::nanoseconds(now - op->started);
}

// Posts a one-shot handler with an error code; the handler decides its own executor.
void fire(std::vector<signal_handler>& hs, const error_code& ec) {
    for (auto& h : hs) h(ec);
    hs.clear();
}

}  // namespace

struct pool_impl::engine {
    engine(const asio::any_io_executor& ex, const core::config& c, bool ts)
        : core(c), thread_safe(ts), deadline_timer(ex) {}

    core::pool_core core;
    std::mutex mu;
    const bool thread_safe;

    asio::steady_timer deadline_timer;  // one timer for every waiter's deadline
    bool armed = false;
    clock::time_point armed_at{};

    std::unique_ptr<asio::steady_timer> health_timer;  // on the background context
    std::uint64_t tick = 0;

    std::shared_ptr<circuit_strategy> strategy;
    std::shared_ptr<observer> obs;

    std::shared_ptr<pool_impl> keep_alive;  // set while the pool object is gone but resources remain
    bool dropped = false;

    // Woken direct waiters, FIFO, resumed by one posted drain (drain_posted) in bounded batches.
    acquire_op_base* ready_head = nullptr;
    acquire_op_base* ready_tail = nullptr;
    bool drain_posted = false;

    std::vector<signal_handler> close_waiters;
    std::vector<signal_handler> ready_waiters;
    bool ready = false;
    error_code ready_ec;

    void arm_deadline(const std::weak_ptr<pool_impl>& weak);
};

namespace {

// Locks only in thread_safe mode: the default pool lives on one executor and pays nothing.
class guard {
public:
    explicit guard(pool_impl::engine& s) : m_(s.thread_safe ? &s.mu : nullptr) {
        if (m_) m_->lock();
    }
    ~guard() { unlock(); }
    void unlock() {
        if (m_) {
            m_->unlock();
            m_ = nullptr;
        }
    }
    guard(const guard&) = delete;
    guard& operator=(const guard&) = delete;

private:
    std::mutex* m_;
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
    s_ = std::make_unique<engine>(ex_, to_config(opts_, before_acquire_), opts_.thread_safe);
}

pool_impl::~pool_impl() = default;

void pool_impl::start() {
    core::effects fx;
    {
        guard g(*s_);
        s_->core.replenish(fx);
        check_ready_locked();
    }
    if (opts_.healthcheck_interval > duration::zero() && healthcheck_ != hook_mode::none) {
        s_->health_timer = std::make_unique<asio::steady_timer>(background_context());
        guard g(*s_);
        arm_health_timer();
    }
    apply(fx);
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
            destroy_node(static_cast<resource_node*>(e.r), static_cast<destroy_reason>(e.reason));
            break;
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
                                    ? (create_ec ? create_ec : error_code(errc::create_failed))
                                : e.reason == core::destroy_reason::poisoned ? error_code(errc::poisoned)
                                                                             : error_code(errc::broken);
                try {
                    st->report_failure(*this, ec);
                } catch (...) {
                }
            }
            break;
        case core::effect::kind::circuit_changed:
            notify(s_->obs, [&](observer& o) { o.on_circuit_changed(state()); });
            break;
        }
    }
    fx.clear();
    return creates;
}

void pool_impl::apply(core::effects& fx, const error_code& create_ec) noexcept {
    const int creates = process(fx, create_ec);
    if (creates) start_creations(creates);
}

void pool_impl::destroy_node(resource_node* n, destroy_reason why) noexcept {
    hooks_->destroy(n);
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
        guard g(*s_);
        if (n) {
            n->created_at = clock::now();
            s_->core.creation_succeeded(n, fx);
        } else {
            core::waiter* w = s_->core.creation_failed(fx);
            if (w) static_cast<acquire_op_base*>(w)->create_error = ec ? ec : error_code(errc::create_failed);
            if (!s_->ready) {
                s_->ready = true;
                s_->ready_ec = ec ? ec : error_code(errc::create_failed);
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

resource_node* pool_impl::try_acquire(error_code& ec) noexcept {
    if (before_acquire_ == hook_mode::async) {
        ec = errc::not_supported;
        return nullptr;
    }
    for (;;) {
        resource_node* n = acquire_now(ec);
        if (n || ec) return n;
        if (factory_ != hook_mode::sync) break;
        // Inline creation: only a place nobody waits for.
        {
            guard g(*s_);
            if (!s_->core.begin_inline_creation()) break;
        }
        error_code cec;
        resource_node* fresh = hooks_->create_sync(cec);
        core::effects fx;
        core::status st;
        {
            guard g(*s_);
            if (fresh) {
                fresh->created_at = clock::now();
                st = s_->core.inline_created(fresh, fx);
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
            ec = cec ? cec : error_code(errc::create_failed);
            return nullptr;
        }
        if (st != core::status::ok) {
            after_change();
            ec = to_error(st);
            return nullptr;
        }
        if (before_acquire_ == hook_mode::sync) {  // a fresh resource skips before_acquire
            guard g(*s_);
            st = s_->core.confirm_take(fresh, fx);
        }
        apply(fx);
        if (st != core::status::ok) {
            ec = to_error(st);
            return nullptr;
        }
        if (s_->obs) {
            fresh->taken_at = clock::now();
            notify(s_->obs, [](observer& o) { o.on_taken(std::chrono::nanoseconds(0)); });
        }
        return fresh;
    }
    ec = errc::exhausted;
    return nullptr;
}

resource_node* pool_impl::acquire_now(error_code& ec) noexcept {
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
        if (before_acquire_ == hook_mode::sync) {
            const bool ok = hooks_->check_sync(check_kind::before_acquire, *n);
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
        if (s_->obs) {
            n->taken_at = clock::now();
            notify(s_->obs, [](observer& o) { o.on_taken(std::chrono::nanoseconds(0)); });
        }
        return n;
    }
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
            t = s_->core.try_take();
            if (t.st == core::status::ok && !t.r) {
                const bool timed = op->timeout || s_->obs;
                const auto now = timed ? clock::now() : clock::time_point{};
                op->started = now;  // before park: once parked, another thread may complete the op
                st = s_->core.park(*op, now, op->timeout, fx);
                if (st == core::status::ok && op->timeout) s_->arm_deadline(weak_from_this());
            }
        }
    }
    // From here on a parked op belongs to the pool: only `fx` and locals are touched.
    if (t.r) return handle_taken(op, static_cast<resource_node*>(t.r), true);
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
    if (t.r) return handle_taken(op, static_cast<resource_node*>(t.r), false);
    error_code ec = to_error(t.st);
    if (t.st == core::status::create_failed && op->create_error) ec = op->create_error;
    if (t.st == core::status::timeout) {
        notify(s_->obs, [&](observer& o) { o.on_exhausted(stats()); });
    }
    op->complete(op, ec, nullptr, false);
}

void pool_impl::handle_taken(acquire_op_base* op, resource_node* n, bool post) noexcept {
    for (;;) {
        if (before_acquire_ == hook_mode::async) {
            {
                guard g(*s_);
                op->in_hook = true;
            }
            try {
                hooks_->check_async(check_kind::before_acquire, *n, ex_,
                                    [self = op->impl, op, n](bool ok) { self->after_async_check(op, n, ok); });
            } catch (...) {
                after_async_check(op, n, false);
            }
            return;
        }
        if (before_acquire_ == hook_mode::sync) {
            const bool ok = hooks_->check_sync(check_kind::before_acquire, *n);
            core::effects fx;
            core::pool_core::take_result t;
            core::status st = core::status::ok;
            {
                guard g(*s_);
                if (ok) {
                    st = s_->core.confirm_take(n, fx);
                } else {
                    s_->core.reject(n, fx);
                    t = s_->core.retry(*op, op->timeout ? clock::now() : clock::time_point{}, fx);
                    if (t.st == core::status::ok && !t.r && op->timeout) s_->arm_deadline(weak_from_this());
                }
            }
            apply(fx);
            if (!ok) {
                if (t.r) {
                    n = static_cast<resource_node*>(t.r);
                    continue;
                }
                if (t.st != core::status::ok) op->complete(op, to_error(t.st), nullptr, post);
                return;  // re-parked in its arrival position
            }
            if (st != core::status::ok) {
                after_change();
                return op->complete(op, to_error(st), nullptr, post);
            }
        }
        if (s_->obs) {
            n->taken_at = clock::now();
            notify(s_->obs, [&](observer& o) { o.on_taken(waited(op, n->taken_at)); });
        }
        return op->complete(op, {}, n, post);
    }
}

// A coroutine before_acquire finished (on the pool's executor): deliver, or hand back, or retry.
void pool_impl::after_async_check(acquire_op_base* op, resource_node* n, bool ok) noexcept {
    core::effects fx;
    core::pool_core::take_result t;
    core::status st = core::status::ok;
    bool cancelled;
    {
        guard g(*s_);
        op->in_hook = false;
        cancelled = op->cancel_requested;
        if (cancelled) {
            if (ok) s_->core.give_back(n, fx);
            else s_->core.reject(n, fx);
        } else if (ok) {
            st = s_->core.confirm_take(n, fx);
        } else {
            s_->core.reject(n, fx);
            t = s_->core.retry(*op, op->timeout ? clock::now() : clock::time_point{}, fx);
            if (t.st == core::status::ok && !t.r && op->timeout) s_->arm_deadline(weak_from_this());
        }
    }
    apply(fx);
    if (cancelled) {
        after_change();
        return op->complete(op, errc::cancelled, nullptr, true);
    }
    if (ok) {
        if (st != core::status::ok) {
            after_change();
            return op->complete(op, to_error(st), nullptr, true);
        }
        if (s_->obs) {
            n->taken_at = clock::now();
            notify(s_->obs, [&](observer& o) { o.on_taken(waited(op, n->taken_at)); });
        }
        return op->complete(op, {}, n, true);
    }
    if (t.r) return handle_taken(op, static_cast<resource_node*>(t.r), true);
    if (t.st != core::status::ok) op->complete(op, to_error(t.st), nullptr, true);
}

void pool_impl::cancel(acquire_op_base* op) noexcept {
    core::effects fx;
    {
        guard g(*s_);
        if (s_->core.cancel(*op, fx)) {
            if (s_->armed) s_->arm_deadline(weak_from_this());
        } else {
            op->cancel_requested = true;  // not parked: honoured when its hook or park step runs
        }
    }
    apply(fx);
}

void pool_impl::on_deadline_timer() noexcept {
    core::effects fx;
    {
        guard g(*s_);
        s_->armed = false;
        s_->core.expire(clock::now(), fx);
        s_->arm_deadline(weak_from_this());
    }
    apply(fx);
}

// ---- release ---------------------------------------------------------------------------------

void release_node(pool_impl* impl, resource_node* n, bool poisoned) noexcept { impl->release(n, poisoned); }

void pool_impl::release(resource_node* n, bool poisoned) noexcept {
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
    notify(s_->obs, [n](observer& o) {
        const auto held = n->taken_at == clock::time_point{} ? clock::duration::zero() : clock::now() - n->taken_at;
        o.on_released(std::chrono::nanoseconds(held));
    });
    core::effects fx;
    bool closed;
    {
        guard g(*s_);
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
    {
        guard g(*s_);
        ++s_->tick;
    }
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
    return static_cast<circuit_state>(s_->core.circuit_state());
}

void pool_impl::set_circuit(circuit_state s) noexcept {
    core::effects fx;
    {
        guard g(*s_);
        s_->core.set_circuit(static_cast<core::circuit>(s), fx);
    }
    apply(fx);
}

void pool_impl::activate() { set_circuit(circuit_state::closed); }
void pool_impl::deactivate() { set_circuit(circuit_state::open); }
void pool_impl::recover() { set_circuit(circuit_state::half_open); }

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
    return to_stats(s_->core.snap());
}

// ---- close and lifetime ----------------------------------------------------------------------

void pool_impl::close() noexcept {
    core::effects fx;
    std::vector<signal_handler> ready;
    {
        guard g(*s_);
        if (!s_->core.close(fx)) return;
        if (s_->armed) {
            s_->armed = false;
            s_->deadline_timer.cancel();
        }
        if (s_->health_timer) s_->health_timer->cancel();
        if (!s_->ready) {
            s_->ready = true;
            s_->ready_ec = errc::closed;
        }
        ready.swap(s_->ready_waiters);
    }
    fire(ready, errc::closed);
    apply(fx);
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
