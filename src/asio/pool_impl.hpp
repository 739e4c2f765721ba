// The Asio driver behind pool<T>: compiled once, type-erased over T. It turns sans-io core decisions
// into posted resumptions, timers and hook calls; the templates in pool.hpp reach it only through
// the functions of <respool/detail/pool_handle.hpp>. Private to the library.
#pragma once

#include <respool/detail/pool_handle.hpp>

#include "core/pool_core.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

namespace respool::detail {

namespace asio = boost::asio;  // the library's own shorthand; public headers spell boost::asio

struct affinity_cache;
struct hook_run;  // one coroutine hook under way (hook_run.hpp)

// What a coroutine hook run is doing (its bound and what its failure means).
enum class run_kind : std::uint8_t { create, validate, before_acquire, healthcheck, before_release };

// The core's nodes live in the opaque room the public structs reserve for them.
static_assert(std::is_standard_layout_v<resource_node> && offsetof(resource_node, core_part) == 0);
static_assert(std::is_standard_layout_v<acquire_op_base> && offsetof(acquire_op_base, core_part) == 0);
static_assert(sizeof(core::resource) <= resource_node::core_size && alignof(core::resource) <= 8);
static_assert(sizeof(core::waiter) <= acquire_op_base::core_size && alignof(core::waiter) <= 8);
static_assert(std::is_trivially_destructible_v<core::resource> &&
              std::is_trivially_destructible_v<core::waiter>);

inline core::resource* core_of(resource_node* n) noexcept {
    return std::launder(reinterpret_cast<core::resource*>(n->core_part));
}
inline resource_node* node_of(core::resource* r) noexcept {
    return reinterpret_cast<resource_node*>(r);
}
// What a thread-affinity slot holds while closed: a value that is never a node's address.
inline resource_node* closed_mark() noexcept {
    return reinterpret_cast<resource_node*>(std::uintptr_t{1});
}
inline core::waiter& core_of(acquire_op_base* op) noexcept {
    return *std::launder(reinterpret_cast<core::waiter*>(op->core_part));
}
inline acquire_op_base* op_of(core::waiter* w) noexcept {
    return reinterpret_cast<acquire_op_base*>(w);
}

class pool_impl final : public pool_facts,
                        public std::enable_shared_from_this<pool_impl>,
                        public circuit_breaker {
public:
    pool_impl(boost::asio::any_io_executor ex, const pool_options& opts, std::unique_ptr<hooks_base> hooks);
    ~pool_impl();
    pool_impl(const pool_impl&) = delete;
    pool_impl& operator=(const pool_impl&) = delete;

    // Pre-warm and start the health timer. Called once, right after construction.
    void start();

    [[nodiscard]] const pool_options& options() const noexcept { return opts_; }

    // Synchronous acquire: a node ready for the caller, or nullptr with ec set.
    resource_node* try_acquire(error_code& ec, const respool::source_location& where = {}) noexcept;
    // The common take (no checks, stamps or observer; an unreserved idle resource): nullptr otherwise.
    friend resource_node* take_inline(pool_impl& p) noexcept;
    // The immediate part of async_acquire: a node, an error, or (nullptr, no error) = must wait.
    // Only when no check on the way out but validation is a coroutine (pool_facts::take_now).
    resource_node* acquire_now(error_code& ec, const respool::source_location& where = {}) noexcept;
    // only_if_free: nothing when the core would not lend an idle resource now (closed, circuit not
    // closed, nothing idle for a newcomer), without counting a rejection.
    resource_node* acquire_general(error_code& ec, const respool::source_location& where,
                                   bool only_if_free = false) noexcept;
    resource_node* take_now_quietly(const respool::source_location& where) noexcept;

    // Slow path: steps 1-3 again, then park. Completion is posted.
    void start_acquire(acquire_op_base* op) noexcept;
    // A woken waiter, running on the pool's executor or (thread_safe pools) on its handler's.
    void resume(acquire_op_base* op, bool on_handler_executor) noexcept;
    // Asio cancellation of a pending acquire.
    void cancel(acquire_op_base* op) noexcept;

    // A lease comes back (the lease may outlive the pool object).
    void release(resource_node* n, bool poisoned) noexcept;

    void close() noexcept;
    // The execution context of the executor shuts down: the alarm is cancelled and never set again,
    // so nothing of the pool's timers posts into the context after it is gone (context_service.hpp).
    void context_gone() noexcept;
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
    void set_max(std::size_t max);
    void retire_all() noexcept;
    void retry_now() noexcept;
    void add_observer(std::shared_ptr<observer> o);
    void remove_observer(const std::shared_ptr<observer>& o);
    void publish_observers(std::vector<std::shared_ptr<observer>> all);
    void set_log_sink(std::shared_ptr<log_sink> l);
    void log_line(log_level level, const std::string& message) noexcept { log(level, message); }

    // circuit_breaker
    circuit_state state() const override;
    void activate() override;
    void deactivate() override;
    void recover() override;
    void recover(std::uint32_t max_probes) override;
    void recover_after(duration delay, std::uint32_t max_probes) override;

    struct driver_state;  // core, lock, timers (src/asio/pool_impl.cpp)

    // Completions that may run after their executor is gone (ready_queue.cpp, creation.cpp).
    void drain_ready() noexcept;
    void abandon_ready() noexcept;
    void creation_done(const std::shared_ptr<hook_run>& run, error_code ec, std::exception_ptr error,
                       resource_node* n) noexcept;
    void creation_abandoned(const std::shared_ptr<hook_run>& run) noexcept;

private:
    void serve(acquire_op_base* op, core::pool_core::take_result t, bool post) noexcept;
    void start_borrow_check(resource_node* n, core::borrow_check c) noexcept;
    void borrow_check_done(const std::shared_ptr<hook_run>& run, bool passed) noexcept;
    void borrow_verdict(resource_node* n, bool passed) noexcept;
    void after_verdict(const core::pool_core::verdict& v) noexcept;
    [[nodiscard]] hook_mode mode_of(core::borrow_check c) const noexcept;
    std::shared_ptr<hook_run> begin_run_locked(run_kind kind, resource_node* n, duration limit);
    bool end_run_locked(hook_run& run) noexcept;
    void hook_overdue(const std::shared_ptr<hook_run>& run) noexcept;
    void health_done(const std::shared_ptr<hook_run>& run, bool ok) noexcept;
    void reset_done(const std::shared_ptr<hook_run>& run, bool ok) noexcept;
    resource_node* create_inline(error_code& ec, const respool::source_location& where,
                                 std::exception_ptr* error = nullptr) noexcept;
    [[nodiscard]] std::chrono::steady_clock::time_point now() const noexcept;
    void on_alarm() noexcept;
    void close_grace_over(std::uint64_t key) noexcept;
    void hand_out(resource_node* n, const acquire_op_base* op) noexcept;
    void housekeep_tick() noexcept;
    void arm_housekeeping() noexcept;
    void arm_retry(duration d) noexcept;
    void retry_elapsed() noexcept;
    void log(log_level level, const std::string& message) noexcept;
    [[nodiscard]] bool logging(log_level level) const noexcept;
    void stamp_new(resource_node* n) noexcept;
    void finish_release(resource_node* n, bool poisoned, bool broken,
                        const resource_node* keep = nullptr) noexcept;
    void release_general(resource_node* n, bool poisoned) noexcept;
    resource_node* take_own_slot() noexcept;
    resource_node* take_elsewhere(unsigned me) noexcept;
    resource_node* take_from_slot(unsigned from, unsigned me) noexcept;
    void arm_health_timer() noexcept;
    void health_tick() noexcept;
    void health_step() noexcept;
    void set_circuit(circuit_state s, std::uint32_t probes) noexcept;
    // A dropped pool (pool<T> gone) lets go of itself once the core says it is drained. Called at the
    // end of whatever may have destroyed the last resource: it may free *this.
    void release_self_if_drained() noexcept;
    // Runs the effects of a core call. `keep`: a resource a hook still works on; its destroy effect is
    // left to the hook's completion.
    void apply(core::effects& fx, const error_code& create_ec = {},
               const resource_node* keep = nullptr) noexcept;
    int process(core::effects& fx, const error_code& create_ec, const resource_node* keep = nullptr) noexcept;
    void process_rare(const core::effect& e, const error_code& create_ec) noexcept;
    void start_creations(int n) noexcept;
    // Returns how many creations to start next. `started`: when the factory was called, with
    // record_timings (the creation time is recorded); the epoch otherwise.
    int settle_creation(const error_code& ec, resource_node* n, const std::exception_ptr& error = {},
                        std::chrono::steady_clock::time_point started = {}) noexcept;
    // When a creation starts: now with record_timings, else the epoch (no clock read).
    [[nodiscard]] std::chrono::steady_clock::time_point creation_start() const noexcept;
    [[nodiscard]] hook_context context_of(const resource_node& n, hook_reason why) const noexcept;
    bool check(check_kind k, resource_node& n, hook_reason why) noexcept;  // a synchronous check
    void destroy_node(resource_node* n, destroy_reason why) noexcept;
    void make_ready(acquire_op_base* op) noexcept;

    pool_options opts_;
    std::unique_ptr<hooks_base> hooks_;
    hook_mode factory_, validate_, before_acquire_, healthcheck_, needs_reset_, before_release_;
    bool context_ = false;             // a check reads its hook_context: stamp uses and idle times
    bool plain_ = true;                // no per-lease stamps wanted: core take_fast/release_fast may serve
    bool validate_waits_ = false;      // validation on borrow is a coroutine: acquire_now leaves it to ops
    affinity_cache* cache_ = nullptr;  // thread_affinity (owned by the driver state), or none
    duration housekeeping_period_{};
    std::unique_ptr<driver_state> state_;  // core, lock, timers: kept out of this header
};

}  // namespace respool::detail
