// What the inline templates of pool.hpp and lease.hpp need from the compiled driver, and nothing more:
// an incomplete pool_impl reached through the functions below, the node a resource lives in, the
// state an acquire parks in, and the interface the typed hooks implement. The sans-io core's node
// layouts stay inside the library: these structs reserve opaque, aligned room for them (the library
// checks the sizes), so parking an acquire or storing a resource still never allocates.
#pragma once

#include <respool/circuit_breaker.hpp>
#include <respool/detail/asio_build.hpp>
#include <respool/error.hpp>
#include <respool/hooks.hpp>
#include <respool/observer.hpp>
#include <respool/options.hpp>
#include <respool/stats.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <respool/source_location.hpp>
#include <string>

namespace respool::detail {

class pool_impl;

// A resource as the pool owns it: room for the core's bookkeeping, the driver's stamps, and (in
// typed_node<T>) the value. Standard layout, the core's part first.
struct resource_node {
    static constexpr std::size_t core_size = 88 + sizeof(respool::source_location);
    alignas(8) unsigned char core_part[core_size];     // the core's header (constructed by the library)
    std::chrono::steady_clock::time_point taken_at{};  // precise; stamped only when hold times are wanted
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
    virtual void create_async(const boost::asio::any_io_executor& ex, boost::asio::cancellation_slot stop,
                              create_done done) = 0;
    virtual bool check_sync(check_kind, resource_node&, const hook_context&) noexcept = 0;
    // `ctx` stays valid until `done` runs (the coroutine may hold the reference).
    virtual void check_async(check_kind, resource_node&, const hook_context& ctx,
                             const boost::asio::any_io_executor& ex, boost::asio::cancellation_slot stop,
                             check_done done) = 0;
    // Runs the destructor hook, then frees the node. false when the destructor hook threw.
    virtual bool destroy(resource_node*) noexcept = 0;
};

// The part of an acquire operation the driver sees. The typed operation (pool.hpp) derives from it and
// owns the handler; the core's waiter node lives in `core_part`, so parking allocates nothing beyond
// the operation itself. Standard layout, the core's part first.
struct acquire_op_base {
    static constexpr std::size_t core_size = 72 + sizeof(respool::source_location);
    alignas(8) unsigned char core_part[core_size];  // the core's waiter (constructed by the library)
    std::shared_ptr<pool_impl> impl;
    std::optional<std::chrono::steady_clock::duration> timeout;
    std::optional<std::chrono::steady_clock::time_point> deadline;  // set when it starts, or given absolute
    error_code create_error;                          // the factory's error, when it failed this waiter
    std::exception_ptr create_exception;              // and what it threw
    diagnostics* diag = nullptr;                      // the caller's, filled when it fails with that error
    std::chrono::steady_clock::time_point started{};  // only with a deadline, timings or an observer
    bool cancel_requested = false;                    // cancellation that arrived while not parked
    // The handler runs on the pool's own executor: its resumption goes through the pool's ready
    // queue (one posted drain for many hand-offs) instead of a post of its own.
    bool direct = false;
    acquire_op_base* ready_next = nullptr;
    respool::source_location where{};  // the async_acquire call site
    // Completes the op exactly once and frees it; `post` when not already on the handler's executor.
    void (*complete)(acquire_op_base*, error_code, resource_node*, bool post) = nullptr;
    // Posts the resumption to the handler's executor (thread_safe pools, ops that are not `direct`).
    void (*post_resume)(acquire_op_base*) = nullptr;
    // Frees the op and its handler without running it (the executor it waited on is being destroyed).
    void (*destroy)(acquire_op_base*) = nullptr;
};

// Constructs the core's waiter in a new operation's core_part (its constructor calls this).
void init_waiter(acquire_op_base& op) noexcept;

// One-shot completion of close/ready waiters: type-erased, posted to the waiter's own executor.
using signal_handler = std::function<void(error_code)>;

// What the templates read on every acquire, fixed when the pool is made: read in place, not through a
// call. The driver (pool_impl) is one of these.
struct pool_facts {
    boost::asio::any_io_executor executor;
    boost::asio::any_io_executor post_executor;  // with blocking.never: a post without a prefer() copy
    std::optional<std::chrono::steady_clock::duration> acquire_timeout;  // pool_options::acquire_timeout
    bool acquire_inline = true;  // no coroutine check between taking a resource and lending it
    // async_acquire decides at once (acquire_now) before it makes an operation: with acquire_inline,
    // or when validation is the only coroutine check (acquire_now then takes nothing while the
    // resource next in line is due for it).
    bool take_now = true;
};
const pool_facts& facts_of(const pool_impl& p) noexcept;

// The driver's entry points for the templates (src/asio/).

// The Asio build of the calling program is part of the mangled name of the function that makes a pool.
// respool::respool is compiled for header-only Asio, respool::respool_asio_separate for programs that
// define BOOST_ASIO_SEPARATE_COMPILATION: a program linked against the other one fails to link, with
// an undefined respool::detail::<its mode>::make_pool_impl, instead of mixing two builds of Asio.
inline namespace RESPOOL_ASIO_BUILD {  // respool/detail/asio_build.hpp
std::shared_ptr<pool_impl> make_pool_impl(boost::asio::any_io_executor ex, const pool_options& opts,
                                          std::unique_ptr<hooks_base> hooks);
}
const pool_options& options_of(const pool_impl& p) noexcept;
std::shared_ptr<pool_impl> shared_from(pool_impl& p);

// The immediate part of async_acquire (pool_facts::take_now): a node, an error, or (nullptr, no error)
// = must wait (nothing free, or the resource next in line is due for a coroutine validation).
resource_node* acquire_now(pool_impl& p, error_code& ec, const respool::source_location& where) noexcept;
// A free resource lent now when no coroutine check is due on it, else nullptr with nothing decided or
// counted (pool_access::take_now).
resource_node* take_now(pool_impl& p, const respool::source_location& where) noexcept;
// The waiting path: steps 1-3 again, then park. Completion is posted.
void start_acquire(pool_impl& p, acquire_op_base* op) noexcept;
void resume(pool_impl& p, acquire_op_base* op, bool on_handler_executor) noexcept;
void cancel(pool_impl& p, acquire_op_base* op) noexcept;
// The common take (no checks, stamps or observer; an unreserved idle resource): nullptr otherwise.
resource_node* take_inline(pool_impl& p) noexcept;
// try_acquire after take_inline found nothing.
resource_node* try_acquire(pool_impl& p, error_code& ec, const respool::source_location& where) noexcept;
// The lease's way back (the lease may outlive the pool object).
void release_node(pool_impl* p, resource_node* n, bool poisoned) noexcept;

void close(pool_impl& p) noexcept;
void async_close(pool_impl& p, std::chrono::steady_clock::duration grace, signal_handler done);
void async_wait_ready(pool_impl& p, signal_handler done);
// The pool<T> object is gone: close, and keep the driver alive until the last lease returns.
void handle_dropped(pool_impl& p) noexcept;

pool_stats stats(const pool_impl& p) noexcept;
circuit_breaker& breaker(pool_impl& p) noexcept;
void set_strategy(pool_impl& p, std::shared_ptr<circuit_strategy> s);
void set_observer(pool_impl& p, std::shared_ptr<observer> o);
void add_observer(pool_impl& p, std::shared_ptr<observer> o);
void remove_observer(pool_impl& p, const std::shared_ptr<observer>& o);
void set_log_sink(pool_impl& p, std::shared_ptr<log_sink> s);
void log(pool_impl& p, log_level level, const std::string& message) noexcept;
void set_max(pool_impl& p, std::size_t max);
void retire_all(pool_impl& p) noexcept;
void retry_now(pool_impl& p) noexcept;

// The text of what a hook threw, or the error code's message.
std::string exception_message(const std::exception_ptr& e, const error_code& ec);

}  // namespace respool::detail
