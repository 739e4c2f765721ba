// The facade of the Asio driver: construction, circuit control, settings, stats, close and the
// pool's lifetime. Rules live in the sans-io core; the driver runs hooks, timers and completions
// (the other files of src/asio/, one concept each; docs/03-design.md has the picture).

#include "driver_state.hpp"

#include <string>

namespace respool::detail {

core::config to_config(const pool_options& o, hook_mode before_acquire, hook_mode validate, bool context) {
    core::config c;
    c.min = static_cast<std::uint32_t>(o.min);
    c.max = static_cast<std::uint32_t>(o.max);
    c.max_waiters = static_cast<std::uint32_t>(o.max_waiters);
    c.max_concurrent_creations = static_cast<std::uint32_t>(o.max_concurrent_creations);
    c.lifo = o.order == idle_order::lifo;
    c.before_acquire = before_acquire != hook_mode::none;
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

pool_impl::pool_impl(asio::any_io_executor ex, const pool_options& opts, std::unique_ptr<hooks_base> hooks)
    : pool_facts{ex, asio::prefer(ex, asio::execution::blocking.never), opts.acquire_timeout, true},
      opts_(resolve_defaults(opts)),
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
    state_ =
        std::make_unique<driver_state>(this, executor, to_config(opts_, before_acquire_, validate_, context_),
                                       opts_.thread_safe, opts_.clock ? opts_.clock : default_clock());
    const bool validate = opts_.health_check_on_borrow && validate_ != hook_mode::none;
    acquire_inline = before_acquire_ != hook_mode::async && !(validate && validate_ == hook_mode::async);
    validate_waits_ = validate && validate_ == hook_mode::async;
    take_now = before_acquire_ != hook_mode::async;
    // Housekeeping runs at a quarter of the shortest lifecycle period (at least every 10 ms): that is
    // the precision of idle_ttl, max_lifetime, acquire_ttl and validate_after.
    duration period{};
    for (duration d : {opts_.idle_ttl, opts_.max_lifetime, opts_.acquire_ttl,
                       validate ? opts_.validate_after : duration{}})
        if (d > duration::zero() && (period == duration::zero() || d / 4 < period)) period = d / 4;
    if (validate && opts_.validate_after == duration::zero()) period = std::chrono::milliseconds(10);
    if (period > duration::zero() && period < std::chrono::milliseconds(10))
        period = std::chrono::milliseconds(10);
    housekeeping_period_ = period;
    // Neither lifecycle stamps nor hold times: the inline take/release paths may apply.
    plain_ = opts_.acquire_ttl == duration::zero() && !opts_.record_timings && !context_;
    // The cache lends without checks or stamps: only when no hook runs on the way out or back in.
    if (opts_.thread_affinity && plain_ && before_acquire_ == hook_mode::none &&
        before_release_ == hook_mode::none && !validate)
        state_->cache = std::make_unique<affinity_cache>();
    cache_ = state_->cache.get();
}

// First of all, the context's shutdown must no longer reach this pool (it waits for a shutdown under
// way, which may still be disarming this pool: every member is whole until then).
pool_impl::~pool_impl() {
    if (state_ && state_->context) state_->context->leave(*this);
}

void pool_impl::start() {
    state_->context = pools_of(executor);
    if (!state_->context->join(*this)) context_gone();
    core::effects fx;
    {
        guard g(*state_);
        state_->self = weak_from_this();
        state_->core.set_now(now());
        state_->core.start(fx);  // the pre-warm; its end comes as the ready effect
        if (opts_.healthcheck_interval > duration::zero() && healthcheck_ != hook_mode::none)
            arm_health_timer();
        if (housekeeping_period_ > duration::zero()) arm_housekeeping();
    }
    if (opts_.min > 0) log(log_level::info, "warming up " + std::to_string(opts_.min) + " resources");
    apply(fx);
}

clock::time_point pool_impl::now() const noexcept {
    return state_->clock->now();
}

bool pool_impl::logging(log_level level) const noexcept {
    log_sink* s = state_->sink.get();
    return s && s->enabled(level);
}

void pool_impl::log(log_level level, const std::string& message) noexcept {
    log_sink* s = state_->sink.get();
    if (!s || !s->enabled(level)) return;
    try {
        s->log(level, message);
    } catch (...) {
    }
}

// ---- circuit ---------------------------------------------------------------------------------

circuit_state pool_impl::state() const {
    guard g(*state_);
    return state_->core.circuit_state();
}

void pool_impl::set_circuit(circuit_state s, std::uint32_t probes) noexcept {
    core::effects fx;
    {
        guard g(*state_);
        state_->cancel_timer(state_->recover_timer);  // any explicit change supersedes a scheduled recovery
        state_->core.set_circuit(s, fx, probes);
    }
    apply(fx);
}

void pool_impl::activate() {
    set_circuit(circuit_state::closed, 0);
}
void pool_impl::deactivate() {
    set_circuit(circuit_state::open, 0);
}
void pool_impl::recover() {
    set_circuit(circuit_state::half_open, 0);
}
void pool_impl::recover(std::uint32_t max_probes) {
    set_circuit(circuit_state::half_open, max_probes);
}

void pool_impl::recover_after(duration delay, std::uint32_t max_probes) {
    guard g(*state_);
    if (state_->core.closed()) return;
    state_->cancel_timer(state_->recover_timer);  // the latest schedule wins
    state_->recover_timer = state_->schedule(delay, [this, max_probes] {
        {
            guard g2(*state_);
            state_->recover_timer = {};
            if (state_->core.circuit_state() != core::circuit::open) return;  // someone changed it meanwhile
        }
        set_circuit(circuit_state::half_open, max_probes);
    });
}

void pool_impl::set_log_sink(std::shared_ptr<log_sink> l) {
    guard g(*state_);
    state_->sink.set(std::move(l));
}

void pool_impl::set_strategy(std::shared_ptr<circuit_strategy> s) {
    guard g(*state_);
    const bool reports = s != nullptr;
    state_->strategy.set(std::move(s));  // may throw (out of memory): before anything else changes
    state_->core.set_reports(reports);
}

// Each observer change builds the new list first: a failure to allocate leaves the old one in place.
void pool_impl::set_observer(std::shared_ptr<observer> o) {
    std::vector<std::shared_ptr<observer>> all;
    if (o) all.push_back(std::move(o));
    guard g(*state_);
    publish_observers(std::move(all));
}

void pool_impl::add_observer(std::shared_ptr<observer> o) {
    if (!o) return;
    guard g(*state_);
    auto all = state_->observers;
    all.push_back(std::move(o));
    publish_observers(std::move(all));
}

void pool_impl::remove_observer(const std::shared_ptr<observer>& o) {
    guard g(*state_);
    auto all = state_->observers;
    std::erase(all, o);
    publish_observers(std::move(all));
}

void pool_impl::publish_observers(std::vector<std::shared_ptr<observer>> all) {  // under the lock
    state_->obs.set(fan_out(all));
    state_->observers = std::move(all);
}

pool_stats pool_impl::stats() const noexcept {
    guard g(*state_);
    pool_stats p = to_stats(state_->core.snap());
    if (affinity_cache* c = state_->cache.get()) {  // cached resources are idle, whatever the core counts
        p.acquires += c->takes();
        for (unsigned i = 0; i < affinity_cache::size; ++i) {
            resource_node* n = c->slots[i].node.load(std::memory_order_relaxed);
            if (n && n != closed_mark() && p.active > 0) {
                ++p.idle;
                --p.active;
            }
        }
    }
    p.wait_time = state_->wait_time;
    if (opts_.record_timings) p.wait_time.counts[0] += state_->core.stats().immediate_takes;
    p.hold_time = state_->hold_time;
    p.create_time = state_->create_time;
    p.min = static_cast<std::uint32_t>(opts_.min);
    return p;
}

// ---- close and lifetime ----------------------------------------------------------------------

void pool_impl::close() noexcept {
    core::effects fx;
    std::vector<std::shared_ptr<hook_run>> interrupted;
    {
        guard g(*state_);
        if (!state_->core.close(fx)) return;  // fails every waiter, those awaiting a verdict too
        // No timer outlives close (but async_close's grace): once this returns, nothing rings.
        state_->health_at.reset();
        state_->housekeeping_at.reset();
        state_->retry_at.reset();
        state_->cancel_timer(state_->recover_timer);
        for (auto& run : state_->runs) state_->cancel_timer(run->bound);
        interrupted = state_->runs;
        state_->rearm();
    }
    apply(fx);
    // Hooks under way are interrupted on the pool's executor (their cancellation slots live there).
    if (!interrupted.empty()) {
        try {
            asio::post(executor, [self = shared_from_this(), runs = std::move(interrupted)] {
                for (const auto& r : runs) self->hook_overdue(r);
            });
        } catch (...) {
        }
    }
}

void pool_impl::context_gone() noexcept {
    std::vector<driver_state::close_waiter> closing;
    std::vector<signal_handler> readying;
    {
        guard g(*state_);
        state_->context_gone = true;
        // Handlers of async_close and async_wait_ready would be posted to their executors, which die
        // with the context: like every pending handler of a context that shuts down, they are
        // destroyed unrun (below, outside the lock).
        closing.swap(state_->close_waiters);
        readying.swap(state_->ready_waiters);
        for (auto& w : closing) state_->cancel_timer(w.grace);
        state_->rearm();  // cancels the alarm: a ring under way has finished when this returns
    }
}

void pool_impl::async_close(duration grace, signal_handler done) {
    close();
    {
        guard g(*state_);
        if (!state_->core.drained()) {
            // Completed exactly once, under the lock: by the core's drained effect or by the grace timer.
            const std::uint64_t key = ++state_->close_keys;
            auto h = state_->schedule(grace, [this, key] { close_grace_over(key); });
            state_->close_waiters.push_back({std::move(done), h, key});
            return;
        }
    }
    done({});
}

void pool_impl::close_grace_over(std::uint64_t key) noexcept {
    signal_handler done;
    {
        guard g(*state_);
        auto& v = state_->close_waiters;
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
    guard g(*state_);
    state_->dropped = true;
    if (!state_->core.drained()) state_->keep_alive = shared_from_this();
}

void pool_impl::release_self_if_drained() noexcept {
    std::shared_ptr<pool_impl> last;
    {
        guard g(*state_);
        if (!state_->dropped || !state_->core.drained()) return;
        last = std::move(state_->keep_alive);
    }
    // `last` may be the final reference: *this dies here, and nothing touches it afterwards.
}

}  // namespace respool::detail

namespace respool::detail {

void pool_impl::set_max(std::size_t max) {
    pool_options changed = opts_;
    changed.max = max;
    validate(changed);  // "max (0) must be at least 1", "min (4) must not exceed max (3)", ...
    core::effects fx;
    {
        guard g(*state_);
        opts_.max = max;
        state_->core.set_max(static_cast<std::uint32_t>(max), fx);
    }
    apply(fx);
    release_self_if_drained();
}

void pool_impl::retry_now() noexcept {
    core::effects fx;
    {
        guard g(*state_);
        state_->retry_at.reset();  // its timer, if armed, finds nothing due
        state_->core.retry_now(fx);
        state_->rearm();
    }
    apply(fx);
}

void pool_impl::retire_all() noexcept {
    core::effects fx;
    {
        guard g(*state_);
        state_->core.retire_all(fx);
    }
    if (logging(log_level::info))
        log(log_level::info, "retiring every resource: replaced as each comes back");
    apply(fx);
    release_self_if_drained();
}

}  // namespace respool::detail

// ---- the entry points of <respool/detail/pool_handle.hpp> --------------------------------------

namespace respool::detail {

inline namespace RESPOOL_ASIO_BUILD {  // the Asio build this library was compiled for
std::shared_ptr<pool_impl> make_pool_impl(boost::asio::any_io_executor ex, const pool_options& opts,
                                          std::unique_ptr<hooks_base> hooks) {
    auto p = std::make_shared<pool_impl>(std::move(ex), opts, std::move(hooks));
    p->start();
    return p;
}
}  // namespace RESPOOL_ASIO_BUILD
const pool_facts& facts_of(const pool_impl& p) noexcept {
    return p;
}
const pool_options& options_of(const pool_impl& p) noexcept {
    return p.options();
}
std::shared_ptr<pool_impl> shared_from(pool_impl& p) {
    return p.shared_from_this();
}
void close(pool_impl& p) noexcept {
    p.close();
}
void async_close(pool_impl& p, std::chrono::steady_clock::duration grace, signal_handler done) {
    p.async_close(grace, std::move(done));
}
void async_wait_ready(pool_impl& p, signal_handler done) {
    p.async_wait_ready(std::move(done));
}
void handle_dropped(pool_impl& p) noexcept {
    p.handle_dropped();
}
pool_stats stats(const pool_impl& p) noexcept {
    return p.stats();
}
circuit_breaker& breaker(pool_impl& p) noexcept {
    return p;
}
void set_strategy(pool_impl& p, std::shared_ptr<circuit_strategy> s) {
    p.set_strategy(std::move(s));
}
void set_observer(pool_impl& p, std::shared_ptr<observer> o) {
    p.set_observer(std::move(o));
}
void add_observer(pool_impl& p, std::shared_ptr<observer> o) {
    p.add_observer(std::move(o));
}
void remove_observer(pool_impl& p, const std::shared_ptr<observer>& o) {
    p.remove_observer(o);
}
void set_log_sink(pool_impl& p, std::shared_ptr<log_sink> s) {
    p.set_log_sink(std::move(s));
}
void log(pool_impl& p, log_level level, const std::string& message) noexcept {
    p.log_line(level, message);
}
void set_max(pool_impl& p, std::size_t max) {
    p.set_max(max);
}
void retire_all(pool_impl& p) noexcept {
    p.retire_all();
}
void retry_now(pool_impl& p) noexcept {
    p.retry_now();
}

}  // namespace respool::detail
