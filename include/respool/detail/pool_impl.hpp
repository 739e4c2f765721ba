// The Asio driver behind pool<T>: compiled once in src/asio/pool_impl.cpp, type-erased over T. It
// turns sans-io core decisions into posted resumptions, timers and hook calls. The templates in
// pool.hpp only allocate operation states and bind the user's hooks.
#pragma once

#include <respool/circuit_breaker.hpp>
#include <respool/detail/core_nodes.hpp>
#include <respool/error.hpp>
#include <respool/hooks.hpp>
#include <respool/observer.hpp>
#include <respool/options.hpp>
#include <respool/stats.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <source_location>
#include <string>

namespace respool::core {
class effects;
struct effect;
}

namespace respool::detail {

namespace asio = boost::asio;

// A resource as the pool owns it: the core's header plus the typed value (typed_node<T>).
struct resource_node : core::resource {
    std::chrono::steady_clock::time_point taken_at{};  // precise; stamped only when hold times are wanted
    std::source_location acquired_at{};                // the acquire call that holds it (leak reports)
    std::uint64_t uses = 0;                            // leases handed out (only when a hook reads it)
};

template <class T>
struct typed_node final : resource_node {
    template <class... Args>
    explicit typed_node(Args&&... args) : value(std::forward<Args>(args)...) {}
    T value;
};

enum class check_kind : std::uint8_t { validate, before_acquire, healthcheck, needs_reset, before_release };
enum class hook_mode : std::uint8_t { none, sync, async };
// What a coroutine hook run is doing (its bound and what its failure means).
enum class run_kind : std::uint8_t { create, validate, before_acquire, healthcheck, before_release };

// The factory's outcome: a node, or its error code and what it threw (message, driver error object).
using create_done = std::function<void(error_code, std::exception_ptr, resource_node*)>;
using check_done = std::function<void(bool)>;

// The user's hooks behind one vtable. Synchronous calls never throw (exceptions become failures);
// asynchronous ones run as coroutines on the pool's executor, bound to `stop` (the pool emits a
// terminal cancellation there when the hook is past its bound or the pool closes), and call `done`
// exactly once.
class hooks_base {
public:
    virtual ~hooks_base() = default;
    virtual hook_mode factory_mode() const noexcept = 0;
    virtual hook_mode mode(check_kind) const noexcept = 0;
    virtual bool wants_context() const noexcept = 0;  // a check reads its hook_context
    virtual resource_node* create_sync(error_code& ec, std::exception_ptr& error) noexcept = 0;
    virtual void create_async(const asio::any_io_executor& ex, asio::cancellation_slot stop, create_done done) = 0;
    virtual bool check_sync(check_kind, resource_node&, const hook_context&) noexcept = 0;
    // `ctx` stays valid until `done` runs (the coroutine may hold the reference).
    virtual void check_async(check_kind, resource_node&, const hook_context& ctx, const asio::any_io_executor& ex,
                             asio::cancellation_slot stop, check_done done) = 0;
    // Runs the destructor hook, then frees the node. false when the destructor hook threw.
    virtual bool destroy(resource_node*) noexcept = 0;
};

class pool_impl;
struct hook_run;        // src/asio/pool_impl.cpp
struct affinity_cache;  // src/asio/pool_impl.cpp

// The part of an acquire operation the driver sees. The typed operation (pool.hpp) derives from it
// and owns the handler; the waiter node is the base, so parking never allocates beyond the op itself.
struct acquire_op_base : core::waiter {
    std::shared_ptr<pool_impl> impl;
    std::optional<core::duration> timeout;
    std::optional<core::time_point> deadline;  // set when it starts (timeout), or given absolute
    error_code create_error;                         // the factory's error, when it failed this waiter
    std::exception_ptr create_exception;             // and what it threw
    diagnostics* diag = nullptr;                     // the caller's, filled when it fails with that error
    std::chrono::steady_clock::time_point started{};  // only with an observer
    struct hook_run* check = nullptr;      // a coroutine check runs on a resource taken for this op
    bool cancel_requested = false;         // cancellation that arrived while not parked
    // The handler runs on the pool's own executor: its resumption goes through the pool's ready
    // queue (one posted drain for many hand-offs) instead of a post of its own.
    bool direct = false;
    acquire_op_base* ready_next = nullptr;
    std::source_location where{};  // the async_acquire call site
    // Completes the op exactly once and frees it; `post` when not already on the handler's executor.
    void (*complete)(acquire_op_base*, error_code, resource_node*, bool post) = nullptr;
    // Posts impl->resume(this) to the handler's executor (ops that are not `direct`).
    void (*post_resume)(acquire_op_base*) = nullptr;
};

// One-shot completion of close/ready waiters: type-erased, posted to the waiter's own executor.
using signal_handler = std::function<void(error_code)>;

class pool_impl final : public std::enable_shared_from_this<pool_impl>, public circuit_breaker {
public:
    pool_impl(asio::any_io_executor ex, const pool_options& opts, std::unique_ptr<hooks_base> hooks);
    ~pool_impl();
    pool_impl(const pool_impl&) = delete;
    pool_impl& operator=(const pool_impl&) = delete;

    // Pre-warm and start the health timer. Called once, right after construction.
    void start();

    [[nodiscard]] const asio::any_io_executor& executor() const noexcept { return ex_; }
    // ex_ with blocking.never already applied: posting through it skips per-call prefer() copies.
    [[nodiscard]] const asio::any_io_executor& post_executor() const noexcept { return post_ex_; }
    [[nodiscard]] const pool_options& options() const noexcept { return opts_; }

    // Synchronous acquire: a node ready for the caller, or nullptr with ec set.
    resource_node* try_acquire(error_code& ec, const std::source_location& where = {}) noexcept;
    // The common take (no checks, stamps or observer; an unreserved idle resource): nullptr otherwise.
    resource_node* take_plain() noexcept;
    // The immediate part of async_acquire: a node, an error, or (nullptr, no error) = must wait.
    // Only when no check on the way out is a coroutine (can_acquire_inline()).
    resource_node* acquire_now(error_code& ec, const std::source_location& where = {}) noexcept;
    [[nodiscard]] bool can_acquire_inline() const noexcept { return inline_ok_; }
    // Slow path: steps 1-3 again, then park. Completion is posted.
    void start_acquire(acquire_op_base* op) noexcept;
    // A woken waiter, running on the pool's executor or (thread_safe pools) on its handler's.
    void resume(acquire_op_base* op, bool on_handler_executor) noexcept;
    // Asio cancellation of a pending acquire.
    void cancel(acquire_op_base* op) noexcept;

    // A lease comes back (the lease may outlive the pool object).
    void release(resource_node* n, bool poisoned) noexcept;

    void close() noexcept;
    // Completes when every resource is gone (leases returned, creations finished) or after `grace`
    // (errc::timeout). Closes first.
    void async_close(duration grace, signal_handler done);
    // Completes when the pre-warm is done (first creation error otherwise).
    void async_wait_ready(signal_handler done);
    // The pool<T> object is gone: close, and keep this alive until the last lease returns.
    void handle_dropped() noexcept;

    [[nodiscard]] pool_stats stats() const noexcept;
    void set_strategy(std::shared_ptr<circuit_strategy> s);
    void set_observer(std::shared_ptr<observer> o);
    void add_observer(std::shared_ptr<observer> o);
    void remove_observer(const std::shared_ptr<observer>& o);
    void set_log_sink(std::shared_ptr<log_sink> l);

    // circuit_breaker
    circuit_state state() const override;
    void activate() override;
    void deactivate() override;
    void recover() override;
    void recover(std::uint32_t max_probes) override;
    void recover_after(duration delay, std::uint32_t max_probes) override;

    struct engine;  // core, lock, timers (src/asio/pool_impl.cpp)

    // The checks on the way out: validation (then before_acquire, unless the resource was never lent).
    enum class stage : std::uint8_t { validate, validate_only, before_acquire, done };

private:
    void handle_taken(acquire_op_base* op, resource_node* n, bool post, stage from) noexcept;
    void check_done(const std::shared_ptr<hook_run>& run, bool ok, stage at) noexcept;
    void abandon_check(hook_run& run, error_code ec) noexcept;
    std::shared_ptr<hook_run> begin_run_locked(run_kind kind, resource_node* n, duration limit);
    bool end_run_locked(hook_run& run) noexcept;
    void hook_overdue(const std::shared_ptr<hook_run>& run) noexcept;
    void creation_done(const std::shared_ptr<hook_run>& run, error_code ec, std::exception_ptr error,
                       resource_node* n) noexcept;
    void health_done(const std::shared_ptr<hook_run>& run, bool ok) noexcept;
    void reset_done(const std::shared_ptr<hook_run>& run, bool ok) noexcept;
    resource_node* create_inline(error_code& ec, const std::source_location& where,
                                 std::exception_ptr* error = nullptr) noexcept;
    [[nodiscard]] std::chrono::steady_clock::time_point now() const noexcept;
    void on_alarm() noexcept;
    void close_grace_over(std::uint64_t key) noexcept;
    bool check_inline(stage at, resource_node* n) noexcept;  // sync verdict of a stage (true = pass)
    [[nodiscard]] stage next_stage(stage at) const noexcept;
    void hand_out(resource_node* n, const std::source_location& where, const acquire_op_base* op) noexcept;
    void housekeep_tick() noexcept;
    void arm_housekeeping() noexcept;
    void arm_retry(duration d) noexcept;
    void log(log_level level, const std::string& message) noexcept;
    [[nodiscard]] bool logging(log_level level) const noexcept;
    void stamp_new(resource_node* n) noexcept;
    void finish_release(resource_node* n, bool poisoned, bool broken, const resource_node* keep = nullptr) noexcept;
    void release_general(resource_node* n, bool poisoned) noexcept;
    resource_node* take_affine() noexcept;
    resource_node* take_cached(unsigned me) noexcept;
    resource_node* cache_take(unsigned from, unsigned me) noexcept;
    void reclaim(std::atomic<resource_node*>& slot) noexcept;
    void arm_health_timer() noexcept;
    void health_tick() noexcept;
    void health_step() noexcept;
    void set_circuit(circuit_state s, std::uint32_t probes) noexcept;
    void check_ready_locked() noexcept;
    void after_change() noexcept;
    // Runs the effects of a core call. `keep`: a resource a hook still works on; its destroy effect is
    // left to the hook's completion.
    void apply(core::effects& fx, const error_code& create_ec = {}, const resource_node* keep = nullptr) noexcept;
    int process(core::effects& fx, const error_code& create_ec, const resource_node* keep = nullptr) noexcept;
    void process_rare(const core::effect& e, const error_code& create_ec) noexcept;
    void start_creations(int n) noexcept;
    // Returns how many creations to start next.
    int settle_creation(const error_code& ec, resource_node* n, const std::exception_ptr& error = {}) noexcept;
    [[nodiscard]] hook_context context_of(const resource_node& n, hook_reason why) const noexcept;
    bool check(check_kind k, resource_node& n, hook_reason why) noexcept;  // a synchronous check
    void destroy_node(resource_node* n, destroy_reason why) noexcept;
    void make_ready(acquire_op_base* op) noexcept;
    void drain_ready() noexcept;

    asio::any_io_executor ex_;
    asio::any_io_executor post_ex_;
    pool_options opts_;
    std::unique_ptr<hooks_base> hooks_;
    hook_mode factory_, validate_, before_acquire_, healthcheck_, needs_reset_, before_release_;
    bool context_ = false;  // a check reads its hook_context: stamp uses and idle times
    bool inline_ok_ = true;       // no coroutine check between taking a resource and lending it
    bool plain_ = true;           // no per-lease stamps wanted: core take_fast/release_fast may serve
    affinity_cache* cache_ = nullptr;  // thread_affinity (owned by the engine), or none
    duration housekeeping_period_{};
    std::unique_ptr<engine> s_;  // core, lock, timers: kept out of this header
};

// The text of what a hook threw, or the error code's message.
std::string exception_message(const std::exception_ptr& e, const error_code& ec);

// The lease's way back (keeps lease.hpp free of the driver).
void release_node(pool_impl* impl, resource_node* n, bool poisoned) noexcept;

}  // namespace respool::detail
