// respool::pool<T>: an asynchronous resource pool on Boost.Asio (docs/01-concepts.md,
// docs/02-operations.md).
//
//   respool::pool<conn> p(io.get_executor(), {.min = 2, .max = 16}, {.factory = [] { return conn{}; }});
//   auto lease = co_await p.async_acquire(boost::asio::use_awaitable);    // or a callback, use_future,
//   deferred lease->query("...");                                           // returned when `lease` dies
//
// Every asynchronous operation documents: handler signature, the executor it completes on (never
// inside the initiating call), cancellation, errors, thread-safety. See docs/02-operations.md.
#pragma once

#include <respool/version.h>
#include <respool/circuit_breaker.hpp>
#include <respool/detail/pool_handle.hpp>
#include <respool/error.hpp>
#include <respool/hooks.hpp>
#include <respool/lease.hpp>
#include <respool/observer.hpp>
#include <respool/options.hpp>
#include <respool/stats.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/recycling_allocator.hpp>
#include <boost/system/system_error.hpp>

#include <exception>
#include <memory>
#include <optional>
#include <respool/source_location.hpp>
#include <stdexcept>
#include <utility>

namespace respool {

namespace detail {

inline error_code error_of(const std::exception_ptr& e) noexcept {
    try {
        std::rethrow_exception(e);
    } catch (const boost::system::system_error& se) {
        return se.code() ? se.code() : error_code(errc::create_failed);
    } catch (...) {
        return errc::create_failed;
    }
}

// The library's view of the hooks' callables (private to users).
struct hook_access {
    template <class T>
    static auto& sync(factory_hook<T>& h) noexcept {
        return h.sync_;
    }
    template <class T>
    static auto& async(factory_hook<T>& h) noexcept {
        return h.async_;
    }
    template <class T>
    static auto& sync(check_hook<T>& h) noexcept {
        return h.sync_;
    }
    template <class T>
    static auto& async(check_hook<T>& h) noexcept {
        return h.async_;
    }
    template <class T>
    static bool wants_context(const check_hook<T>& h) noexcept {
        return h.wants_context_;
    }
};

// The user's hooks<T> behind hooks_base.
template <class T>
class typed_hooks final : public hooks_base {
public:
    explicit typed_hooks(hooks<T> h) : h_(std::move(h)) {}

    hook_mode factory_mode() const noexcept override { return mode_of(h_.factory); }
    hook_mode mode(check_kind k) const noexcept override { return mode_of(pick(k)); }
    bool wants_context() const noexcept override {
        for (auto k : {check_kind::validate, check_kind::before_acquire, check_kind::healthcheck,
                       check_kind::needs_reset, check_kind::before_release})
            if (hook_access::wants_context(pick(k))) return true;
        return false;
    }
    resource_node* create_sync(error_code& ec, std::exception_ptr& error) noexcept override {
        try {
            return new typed_node<T>(hook_access::sync(h_.factory)());
        } catch (...) {
            error = std::current_exception();
            ec = error_of(error);
            return nullptr;
        }
    }
    void create_async(const boost::asio::any_io_executor& ex, boost::asio::cancellation_slot stop,
                      create_done done) override {
        // The result is owned until the pool takes it: a completion destroyed unrun (its io_context
        // torn down) frees the value instead of leaking it. The factory lives in the pool, which the
        // completion keeps alive.
        using owned = std::unique_ptr<typed_node<T>>;
        auto& f = hook_access::async(h_.factory);
        boost::asio::co_spawn(
            ex,
            [&f]() -> boost::asio::awaitable<owned> {
                co_return std::make_unique<typed_node<T>>(co_await f());
            },
            boost::asio::bind_cancellation_slot(stop,
                                                [done = std::move(done)](std::exception_ptr e, owned n) {
                                                    if (e)
                                                        done(error_of(e), e, nullptr);
                                                    else
                                                        done({}, nullptr, n.release());
                                                }));
    }
    bool check_sync(check_kind k, resource_node& n, const hook_context& ctx) noexcept override {
        try {
            return hook_access::sync(pick(k))(static_cast<typed_node<T>&>(n).value, ctx);
        } catch (...) {
            return false;  // hook errors other than the factory's become "no"
        }
    }
    void check_async(check_kind k, resource_node& n, const hook_context& ctx,
                     const boost::asio::any_io_executor& ex, boost::asio::cancellation_slot stop,
                     check_done done) override {
        boost::asio::co_spawn(
            ex, hook_access::async(pick(k))(static_cast<typed_node<T>&>(n).value, ctx),
            boost::asio::bind_cancellation_slot(
                stop, [done = std::move(done)](std::exception_ptr e, bool ok) { done(!e && ok); }));
    }
    bool destroy(resource_node* n) noexcept override {
        auto* t = static_cast<typed_node<T>*>(n);
        bool ok = true;
        if (h_.destructor) {
            try {
                h_.destructor(t->value);
            } catch (...) {
                ok = false;
            }
        }
        delete t;
        return ok;
    }

private:
    template <class H>
    static hook_mode mode_of(H& h) noexcept {
        return hook_access::async(h)  ? hook_mode::async
               : hook_access::sync(h) ? hook_mode::sync
                                      : hook_mode::none;
    }
    check_hook<T>& pick(check_kind k) const noexcept {
        switch (k) {
        case check_kind::validate:
            return h_.validate ? h_.validate : h_.healthcheck;  // healthcheck doubles for it
        case check_kind::before_acquire: return h_.before_acquire;
        case check_kind::healthcheck: return h_.healthcheck;
        case check_kind::needs_reset: return h_.needs_reset;
        case check_kind::before_release: return h_.before_release;
        }
        return h_.before_release;
    }
    mutable hooks<T> h_;  // calling a hook is not a change of the pool's configuration
};

// True when a handler completes on the pool's own executor (then the pool's ready queue serves it).
template <class E>
bool same_executor(const E& a, const boost::asio::any_io_executor& b) noexcept {
    if constexpr (std::is_same_v<E, boost::asio::any_io_executor>)
        return a == b;
    else
        return false;
}

// The state of one parked async_acquire: the handler, a work guard on its executor, and (through
// acquire_op_base) the intrusive waiter node. Allocated with the handler's allocator (Asio's
// recycling allocator by default, so steady-state parking does not reach malloc).
template <class T, class Handler>
class acquire_op final : public acquire_op_base {
public:
    using executor_type = boost::asio::associated_executor_t<Handler, boost::asio::any_io_executor>;
    using work_type = std::decay_t<decltype(boost::asio::prefer(
        std::declval<const executor_type&>(), boost::asio::execution::outstanding_work.tracked,
        boost::asio::execution::blocking.never))>;
    using alloc_type = typename std::allocator_traits<boost::asio::associated_allocator_t<
        Handler, boost::asio::recycling_allocator<void>>>::template rebind_alloc<acquire_op>;

    static acquire_op* create(Handler&& h, std::shared_ptr<pool_impl> owner, const pool_facts& facts,
                              std::optional<duration> limit) {
        alloc_type a(boost::asio::get_associated_allocator(h, boost::asio::recycling_allocator<void>()));
        acquire_op* p = std::allocator_traits<alloc_type>::allocate(a, 1);
        try {
            new (p) acquire_op(std::move(h), std::move(owner), facts, limit);
        } catch (...) {
            std::allocator_traits<alloc_type>::deallocate(a, p, 1);
            throw;
        }
        return p;
    }

    void install_cancellation() {
        auto slot = boost::asio::get_associated_cancellation_slot(handler_);
        if (slot.is_connected()) slot.template emplace<canceller>(this);
    }

private:
    struct canceller {
        explicit canceller(acquire_op_base* o) noexcept : op(o) {}  // (clang 14: no paren-aggregate init)
        acquire_op_base* op;
        void operator()(boost::asio::cancellation_type t) const {
            if (!!(t & (boost::asio::cancellation_type::terminal | boost::asio::cancellation_type::partial |
                        boost::asio::cancellation_type::total)))
                cancel(*op->impl, op);
        }
    };

    acquire_op(Handler&& h, std::shared_ptr<pool_impl> owner, const pool_facts& facts,
               std::optional<duration> limit)
        : handler_(std::move(h)),
          work_(boost::asio::prefer(boost::asio::get_associated_executor(handler_, facts.executor),
                                    boost::asio::execution::outstanding_work.tracked,
                                    boost::asio::execution::blocking.never)) {
        this->direct =
            same_executor(boost::asio::get_associated_executor(handler_, facts.executor), facts.executor);
        this->impl = std::move(owner);
        this->timeout = limit;
        this->complete = &do_complete;
        this->post_resume = &do_post_resume;
        this->destroy = &do_destroy;
        init_waiter(*this);
    }

    static void do_complete(acquire_op_base* base, error_code ec, resource_node* n, bool post) {
        auto* self = static_cast<acquire_op*>(base);
        if (self->diag && ec && ec == self->create_error) {  // the factory failed it: say why
            self->diag->error = self->create_exception;
            self->diag->message = exception_message(self->create_exception, ec);
        }
        lease<T> l = n ? lease_access::adopt<T>(self->impl.get(), n) : lease<T>{};
        if (!post) return finish(self, ec, std::move(l));  // already running on the handler's executor
        // Elsewhere (the pool's executor, after a coroutine check): the handler's cancellation slot is
        // cleared on the handler's own executor, where it is emitted (Asio's slots are not
        // thread-safe). Until then a cancellation finds the acquire decided and changes nothing.
        work_type work(self->work_);
        boost::asio::post(work, posted_completion{owned_op(self), ec, std::move(l)});
    }

    // Destroys the op and its handler unrun: its executor is being torn down (Asio's rule for pending
    // handlers).
    static void do_destroy(acquire_op_base* base) { owned_op discard(static_cast<acquire_op*>(base)); }

    // Clears the cancellation slot, frees the op, then calls the handler with the outcome.
    static void finish(acquire_op* self, error_code ec, lease<T> l) {
        auto slot = boost::asio::get_associated_cancellation_slot(self->handler_);
        if (slot.is_connected()) slot.clear();
        Handler h(std::move(self->handler_));
        work_type work(std::move(self->work_));
        std::shared_ptr<pool_impl> impl = std::move(self->impl);  // outlives the upcall
        alloc_type a(boost::asio::get_associated_allocator(h, boost::asio::recycling_allocator<void>()));
        self->~acquire_op();
        std::allocator_traits<alloc_type>::deallocate(a, self, 1);  // freed before the upcall
        std::move(h)(ec, std::move(l));
    }

    // An op no one will complete any more (its completion was dropped unrun): slot cleared, op freed.
    struct op_deleter {
        void operator()(acquire_op* self) const {
            auto slot = boost::asio::get_associated_cancellation_slot(self->handler_);
            if (slot.is_connected()) slot.clear();
            alloc_type a(boost::asio::get_associated_allocator(self->handler_,
                                                               boost::asio::recycling_allocator<void>()));
            self->~acquire_op();
            std::allocator_traits<alloc_type>::deallocate(a, self, 1);
        }
    };
    using owned_op = std::unique_ptr<acquire_op, op_deleter>;

    // A completion posted to the handler's executor. Members go in reverse order when it is dropped
    // unrun: the lease first (back to the pool, which the op still keeps alive), then the op.
    struct posted_completion {
        owned_op op;
        error_code ec;
        lease<T> l;
        void operator()() { finish(op.release(), ec, std::move(l)); }
    };

    static void do_post_resume(acquire_op_base* base) {
        auto* self = static_cast<acquire_op*>(base);
        self->work_.execute([self] { resume(*self->impl, self, true); });
    }

    Handler handler_;
    work_type work_;
};

// What one async_acquire asks for: its deadline (relative or absolute, or the pool's default) and
// where to put the factory's error detail.
struct acquire_request {
    std::optional<duration> timeout;
    std::optional<std::chrono::steady_clock::time_point> deadline;
    diagnostics* diag = nullptr;
    respool::source_location where{};
};

template <class T>
struct initiate_acquire {
    pool_impl* impl;
    const pool_facts* facts;
    template <class Handler>
    void operator()(Handler&& handler, std::optional<duration> timeout,
                    respool::source_location where = {}) const {
        (*this)(std::forward<Handler>(handler), acquire_request{timeout, std::nullopt, nullptr, where});
    }
    template <class Handler>
    void operator()(Handler&& handler, acquire_request req) const {
        using H = std::decay_t<Handler>;
        if (!impl) {  // a moved-from pool: closed, through the handler's own executor
            auto ex = boost::asio::get_associated_executor(handler);
            boost::asio::post(ex, boost::asio::append(std::forward<Handler>(handler),
                                                      make_error_code(errc::closed), lease<T>{}));
            return;
        }
        if (facts->take_now) {
            error_code ec;
            resource_node* n = acquire_now(*impl, ec, req.where);
            if (n || ec) {  // decided now; completes through the handler's executor, never inline
                auto ex = boost::asio::get_associated_executor(handler, facts->executor);
                lease<T> l = n ? lease_access::adopt<T>(impl, n) : lease<T>{};
                if (same_executor(ex, facts->executor)) {
                    facts->post_executor.execute(
                        [h = H(std::forward<Handler>(handler)), ec, l = std::move(l)]() mutable {
                            std::move(h)(ec, std::move(l));
                        });
                } else {
                    boost::asio::post(ex,
                                      boost::asio::append(std::forward<Handler>(handler), ec, std::move(l)));
                }
                return;
            }
        }
        auto* op = acquire_op<T, H>::create(H(std::forward<Handler>(handler)), shared_from(*impl), *facts,
                                            req.timeout);
        op->deadline = req.deadline;
        op->diag = req.diag;
        op->where = req.where;
        op->install_cancellation();
        start_acquire(*impl, op);
    }
};

struct initiate_signal {
    pool_impl* impl;
    const pool_facts* facts;
    template <class Handler>
    void operator()(Handler&& handler, bool close, duration grace) const {
        using H = std::decay_t<Handler>;
        if (!impl) {  // a moved-from pool: nothing to close; never ready
            auto ex = boost::asio::get_associated_executor(handler);
            boost::asio::post(ex, boost::asio::append(std::forward<Handler>(handler),
                                                      close ? error_code{} : make_error_code(errc::closed)));
            return;
        }
        auto ex = boost::asio::get_associated_executor(handler, facts->executor);
        auto work = boost::asio::prefer(ex, boost::asio::execution::outstanding_work.tracked);
        auto h = std::make_shared<H>(std::forward<Handler>(handler));
        signal_handler done = [h, work](error_code ec) {
            boost::asio::post(work, boost::asio::append(std::move(*h), ec));
        };
        if (close)
            async_close(*impl, grace, std::move(done));
        else
            async_wait_ready(*impl, std::move(done));
    }
};

struct pool_access;

}  // namespace detail

template <class T>
class pool {
public:
    using value_type = T;
    using executor_type = boost::asio::any_io_executor;
    using lease_type = lease<T>;

    // Validates `opts` (std::invalid_argument naming the option) before anything is created, then
    // pre-warms `min` resources: created before this returns with a synchronous factory, started
    // with a coroutine factory (async_wait_ready tells when they are in).
    pool(executor_type ex, pool_options opts, hooks<T> h)
        : impl_(make(std::move(ex), opts, std::move(h))), facts_(&detail::facts_of(*impl_)) {}

    // A moved-from pool is empty (valid() is false): it acts as a closed pool with nothing in it.
    // try_acquire and async_acquire fail with errc::closed (async ones complete through the handler's
    // associated executor, the system executor when it has none), async_wait_ready with errc::closed,
    // async_close succeeds; close(), retire_all() and the circuit controls do nothing; stats() says
    // closed and empty; options() are the defaults and get_executor() an empty executor. The setters
    // (circuit strategy, observers, log sink, set_max) throw std::logic_error; breaker() requires a
    // valid pool. Assigning a pool to it makes it valid again.
    pool(pool&& o) noexcept : impl_(std::move(o.impl_)), facts_(std::exchange(o.facts_, nullptr)) {}
    pool& operator=(pool&& o) noexcept {
        if (this != &o) {
            drop();
            impl_ = std::move(o.impl_);
            facts_ = std::exchange(o.facts_, nullptr);
        }
        return *this;
    }
    pool(const pool&) = delete;
    pool& operator=(const pool&) = delete;
    // Closes the pool. Leases still out stay valid; their release destroys the resource.
    ~pool() { drop(); }

    // False for a moved-from pool (see the move constructor).
    [[nodiscard]] bool valid() const noexcept { return impl_ != nullptr; }

    [[nodiscard]] executor_type get_executor() const noexcept {
        return facts_ ? facts_->executor : executor_type{};
    }
    [[nodiscard]] const pool_options& options() const noexcept {
        static const pool_options defaults{};
        return impl_ ? detail::options_of(*impl_) : defaults;
    }

    // Acquire with the pool's default deadline (pool_options::acquire_timeout).
    //  Handler:      void(error_code, lease<T>); the lease is empty exactly when the error is set.
    //  Executor:     the handler's associated executor (the pool's by default); never called inside
    //                async_acquire itself. The pool's own work stays on the pool's executor.
    //  Cancellation: terminal, partial and total (the acquire fails with errc::cancelled; a place
    //                reserved for it moves on to the next waiter; a lease never reaches a cancelled op).
    //  Errors:       closed, timeout, unavailable (circuit open), exhausted (max_waiters), cancelled,
    //                the factory's own error (or create_failed, hook_timeout) when a creation made for
    //                this acquire failed.
    //  Threads:      from the pool's executor, or any thread with pool_options::thread_safe.
    // `where` (the call site, captured by default) names the acquirer in leak reports.
    template <class CompletionToken = boost::asio::deferred_t>
    requires(!std::is_convertible_v<CompletionToken, duration> &&
             !std::is_convertible_v<CompletionToken, std::chrono::steady_clock::time_point> &&
             !std::is_same_v<std::decay_t<CompletionToken>,
                             diagnostics>) auto async_acquire(CompletionToken&& token = {},
                                                              respool::source_location where =
                                                                  respool::source_location::current()) {
        return initiate(token, {facts_->acquire_timeout, std::nullopt, nullptr, where});
    }
    // As above, with this call's own timeout (overrides the default; zero fails at once when nothing is
    // free now) or absolute deadline on the pool's clock (pool_options::clock; the steady clock by
    // default). Deadlines of any mix of values cost O(log n) each.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire(duration timeout, CompletionToken&& token = {},
                       respool::source_location where = respool::source_location::current()) {
        return initiate(token, {timeout, std::nullopt, nullptr, where});
    }
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire(std::chrono::steady_clock::time_point deadline, CompletionToken&& token = {},
                       respool::source_location where = respool::source_location::current()) {
        return initiate(token, {std::nullopt, deadline, nullptr, where});
    }
    // The same three, filling `diag` with the factory's message and error object when the acquire fails
    // because a creation made for it failed. `diag` must outlive the operation.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire(diagnostics& diag, CompletionToken&& token = {},
                       respool::source_location where = respool::source_location::current()) {
        return initiate(token, {facts_->acquire_timeout, std::nullopt, &diag, where});
    }
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire(duration timeout, diagnostics& diag, CompletionToken&& token = {},
                       respool::source_location where = respool::source_location::current()) {
        return initiate(token, {timeout, std::nullopt, &diag, where});
    }
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire(std::chrono::steady_clock::time_point deadline, diagnostics& diag,
                       CompletionToken&& token = {},
                       respool::source_location where = respool::source_location::current()) {
        return initiate(token, {std::nullopt, deadline, &diag, where});
    }

    // Never waits. An empty lease when closed, circuit open, or nothing is free for the caller
    // (reserved places belong to waiters). Creates inline with a synchronous factory and a free place.
    lease<T> try_acquire(respool::source_location where = respool::source_location::current()) noexcept {
        error_code ec;
        return try_acquire(ec, where);
    }
    // As above; ec says why it is empty: closed, unavailable, exhausted, the factory's error, or
    // not_supported when a check on the way out (before_acquire, validation on borrow) is a coroutine.
    lease<T> try_acquire(error_code& ec,
                         respool::source_location where = respool::source_location::current()) noexcept {
        ec = {};
        if (!impl_) {
            ec = errc::closed;  // a moved-from pool
            return {};
        }
        detail::resource_node* n = detail::take_inline(*impl_);  // the common case, before the general path
        if (!n) n = detail::try_acquire(*impl_, ec, where);
        return n ? detail::lease_access::adopt<T>(impl_.get(), n) : lease<T>{};
    }

    // Idempotent: waiters fail with closed, idle resources are destroyed, coroutine hooks under way are
    // interrupted, timers stop (nothing of them touches the executor once this returns), leases die on
    // release. From the pool's executor, or any thread with thread_safe.
    void close() noexcept {
        if (impl_) detail::close(*impl_);
    }

    // Closes, then completes once every resource is gone (leases returned, creations finished or
    // interrupted), or after `grace` with errc::timeout (leases still out die on release).
    //  Handler:      void(error_code), exactly once.
    //  Executor:     the handler's associated executor (the pool's by default); never inline.
    //  Cancellation: none (the grace period bounds it).
    //  Errors:       timeout (grace passed with resources left).
    //  Threads:      as close().
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_close(duration grace, CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            detail::initiate_signal{impl_.get(), facts_}, token, true, grace);
    }

    // Completes when the pre-warm of `min` resources is done.
    //  Handler:      void(error_code): success, the first creation error, or closed.
    //  Executor:     the handler's associated executor; never inline.
    //  Cancellation: none. Threads: as close().
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_wait_ready(CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code)>(
            detail::initiate_signal{impl_.get(), facts_}, token, false, duration{});
    }

    // Circuit breaker, manual control (circuit_breaker.hpp).
    [[nodiscard]] circuit_state state() const {
        return impl_ ? detail::breaker(*impl_).state() : circuit_state::closed;
    }
    void activate() {
        if (impl_) detail::breaker(*impl_).activate();
    }
    void deactivate() {
        if (impl_) detail::breaker(*impl_).deactivate();
    }
    void recover() {
        if (impl_) detail::breaker(*impl_).recover();
    }
    void recover(std::uint32_t max_probes) {
        if (impl_) detail::breaker(*impl_).recover(max_probes);
    }
    // Called on every accepted release (success) and broken/poisoned release or failed creation.
    void set_circuit_strategy(std::shared_ptr<circuit_strategy> s) {
        detail::set_strategy(valid_impl(), std::move(s));
    }
    // Observers (several may watch one pool: the user's and a metrics exporter, say); with none
    // installed events cost nothing. set_observer replaces them all (nullptr removes them all). Any
    // time, from any thread: an event under way may still reach a replaced observer, which the pool
    // keeps alive until it is destroyed (so is a replaced strategy or log sink).
    void set_observer(std::shared_ptr<observer> o) { detail::set_observer(valid_impl(), std::move(o)); }
    void add_observer(std::shared_ptr<observer> o) { detail::add_observer(valid_impl(), std::move(o)); }
    void remove_observer(const std::shared_ptr<observer>& o) { detail::remove_observer(valid_impl(), o); }
    // Logging (default: none). make_ostream_log_sink(std::cerr) writes human-readable lines.
    void set_log_sink(std::shared_ptr<log_sink> s) { detail::set_log_sink(valid_impl(), std::move(s)); }
    // A line of a layer above (a database pool's own events) into the same sink; nothing without one.
    void log(log_level level, const std::string& message) noexcept {
        if (impl_) detail::log(*impl_, level, message);
    }
    // The pool's circuit breaker, for strategies and tools. Requires valid().
    circuit_breaker& breaker() noexcept { return detail::breaker(*impl_); }

    [[nodiscard]] pool_stats stats() const noexcept {
        if (impl_) return detail::stats(*impl_);
        pool_stats s;  // a moved-from pool: closed, nothing in it
        s.closed = true;
        return s;
    }

    // Runtime controls (the database layers use them). From the pool's executor, or any thread when
    // thread_safe.
    // A new cap on total resources, validated as the option is (std::invalid_argument naming it). A
    // higher one serves parked waiters at once; a lower one destroys idle resources beyond it now and
    // lent ones as they come back (stats().surplus), never taking one from its holder.
    void set_max(std::size_t max) { detail::set_max(valid_impl(), max); }
    // Soft eviction (after a failover, a credential rotation): every resource that exists now is
    // destroyed when next idle or returned (idle ones at once; stats().replaced), and new ones replace
    // them, up to min and for the queue. Holders keep theirs until they return them.
    void retire_all() noexcept {
        if (impl_) detail::retire_all(*impl_);
    }
    // The resources' source is known to be back (a monitor of the caller's reached the database): a
    // creation back-off under way ends now, and the next failure starts from create_retry_initial
    // again. The circuit is left as it is (breaker() controls it).
    void retry_now() noexcept {
        if (impl_) detail::retry_now(*impl_);
    }

private:
    static std::shared_ptr<detail::pool_impl> make(executor_type ex, const pool_options& opts, hooks<T> h) {
        validate(opts);
        if (!h.factory) throw std::invalid_argument("respool: factory hook is required");
        if (detail::hook_access::async(h.needs_reset))
            throw std::invalid_argument(
                "respool: needs_reset must be synchronous (it decides whether a coroutine runs)");
        return detail::make_pool_impl(std::move(ex), opts,
                                      std::make_unique<detail::typed_hooks<T>>(std::move(h)));
    }
    detail::pool_impl& valid_impl() const {
        if (!impl_) throw std::logic_error("respool: this pool is empty (moved from)");
        return *impl_;
    }
    void drop() noexcept {
        if (impl_) {
            detail::handle_dropped(*impl_);
            impl_.reset();
        }
    }

    template <class CompletionToken>
    auto initiate(CompletionToken& token, detail::acquire_request req) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, lease<T>)>(
            detail::initiate_acquire<T>{impl_.get(), facts_}, token, req);
    }

    friend struct detail::pool_access;
    std::shared_ptr<detail::pool_impl> impl_;
    const detail::pool_facts* facts_ = nullptr;  // lives in *impl_
};

namespace detail {
// For the layers that borrow on their callers' behalf inside an operation of their own (the database
// pools' async_query): the part of async_acquire that needs no waiting, without a completion of its
// own. An empty lease when the acquire would have to wait or fail; then nothing was decided or
// counted, and async_acquire is the way.
struct pool_access {
    template <class T>
    static lease<T> take_now(pool<T>& p,
                             respool::source_location where = respool::source_location::current()) noexcept {
        if (!p.impl_) return {};
        resource_node* n = detail::take_now(*p.impl_, where);
        return n ? lease_access::adopt<T>(p.impl_.get(), n) : lease<T>{};
    }
};
}  // namespace detail

}  // namespace respool
