// Hooks of a pool<T> (docs/02-operations.md, Hooks). Each check accepts a plain callable or a coroutine
// returning asio::awaitable<...> (creating, pinging or resetting a connection is I/O), with or without a
// hook_context; callables may be move-only. before_acquire runs on every resource taken from idle,
// pre-warmed ones included, never on one created for that very acquire.
//   factory        T()                      or awaitable<T>()          failure: throw (system_error keeps its
//   code) destructor     void(T&)                                             runs exactly once per created
//   resource validate       bool(T&[, hook_context])  or awaitable<bool>(...)    on borrow, idle past
//   validate_after before_acquire bool(T&[, hook_context])  or awaitable<bool>(...)    on borrow (not a
//   new one) healthcheck    bool(T&[, hook_context])  or awaitable<bool>(...)    in the background, idle
//   resources only needs_reset    bool(T&[, hook_context])                             on release: false
//   skips before_release before_release bool(T&[, hook_context])  or awaitable<bool>(...)    on release;
//   false/throw = broken, destroy
//
// Execution: coroutine hooks run on the pool's executor (asio::this_coro::executor is the pool's),
// bound to a cancellation slot that the hook's bound (create_timeout, check_timeout, reset_timeout)
// and close() emit on (terminal). Synchronous hooks run on the thread that triggered them (the caller
// of acquire or release, or the pool's executor for background work) and cannot be interrupted.
// A thread_safe pool on a multi-threaded io_context should be given a strand, so that its coroutine
// hooks and their cancellation never run concurrently.
#pragma once

#include <respool/detail/unique_function.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace respool {

// Why a check or reset hook runs.
enum class hook_reason : std::uint8_t {
    on_borrow,      // validate, before_acquire: a resource taken from idle for a caller
    in_background,  // healthcheck: the periodic check of idle resources
    on_release,     // needs_reset, before_release: a lease came back
};

// What a hook knows about its resource. Times are on the pool's clock.
struct hook_context {
    hook_reason reason = hook_reason::on_borrow;
    std::chrono::nanoseconds age{};       // since it was created
    std::chrono::nanoseconds idle_for{};  // since it last went idle (0 on release)
    std::uint64_t uses = 0;  // leases handed out on it so far (on release: the returning one too)
};

namespace detail {
template <class R>
struct is_awaitable : std::false_type {};
template <class U, class E>
struct is_awaitable<boost::asio::awaitable<U, E>> : std::true_type {};
struct hook_access;
}  // namespace detail

template <class T>
class factory_hook {
public:
    factory_hook() = default;
    template <class F>
    requires std::invocable<F&> factory_hook(
        F f) {  // NOLINT(google-explicit-constructor): hooks are written inline
        using R = std::invoke_result_t<F&>;
        if constexpr (detail::is_awaitable<R>::value) {
            static_assert(std::is_convertible_v<typename R::value_type, T>, "factory coroutine must yield T");
            async_ = std::move(f);
        } else {
            static_assert(std::is_convertible_v<R, T>, "factory must return T or asio::awaitable<T>");
            sync_ = std::move(f);
        }
    }
    explicit operator bool() const noexcept { return sync_ || async_; }

private:
    friend struct detail::hook_access;
    detail::unique_function<T()> sync_;
    detail::unique_function<boost::asio::awaitable<T>()> async_;
};

// A check: bool(T&), bool(T&, const hook_context&), or the same returning asio::awaitable<bool>.
template <class T>
class check_hook {
public:
    check_hook() = default;
    template <class F>
    requires(std::invocable<F&, T&, const hook_context&> || std::invocable<F&, T&>)
        check_hook(F f) {  // NOLINT(google-explicit-constructor)
        if constexpr (std::invocable<F&, T&, const hook_context&>) {
            wants_context_ = true;
            store<std::invoke_result_t<F&, T&, const hook_context&>>(std::move(f));
        } else {
            using R = std::invoke_result_t<F&, T&>;
            store<R>([g = std::move(f)](T& v, const hook_context&) mutable { return g(v); });
        }
    }
    explicit operator bool() const noexcept { return sync_ || async_; }

private:
    friend struct detail::hook_access;
    template <class R, class G>
    void store(G g) {
        if constexpr (detail::is_awaitable<R>::value) {
            static_assert(std::is_same_v<typename R::value_type, bool>, "check coroutine must yield bool");
            async_ = std::move(g);
        } else {
            static_assert(std::is_convertible_v<R, bool>, "check must return bool or asio::awaitable<bool>");
            sync_ = std::move(g);
        }
    }
    detail::unique_function<bool(T&, const hook_context&)> sync_;
    detail::unique_function<boost::asio::awaitable<bool>(T&, const hook_context&)> async_;
    bool wants_context_ = false;
};

template <class T>
struct hooks {
    factory_hook<T> factory{};                       // required
    detail::unique_function<void(T&)> destructor{};  // optional; T's own destructor runs afterwards anyway
    // On borrow, for a resource idle longer than validate_after (pool_options::health_check_on_borrow);
    // the database layers ping here. Without it, health_check_on_borrow uses the healthcheck hook.
    check_hook<T> validate{};
    check_hook<T> before_acquire{};  // on borrow, after validate; never for a resource not lent before
    check_hook<T> healthcheck{};     // in the background (healthcheck_interval), idle resources only
    // Cheap and synchronous: does this returned resource need before_release? false lets a clean
    // release take the fast path (no coroutine). Without it, before_release runs on every release.
    check_hook<T> needs_reset{};
    check_hook<T> before_release{};
};

}  // namespace respool
