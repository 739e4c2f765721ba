// Hooks of a pool<T> (SPEC.md §1.1). Each accepts a plain callable or a coroutine returning
// asio::awaitable<...>: creating or validating a connection is I/O.
//   factory        T()              or awaitable<T>()       failure: throw (system_error keeps its code)
//   destructor     void(T&)                                  runs exactly once per created resource
//   healthcheck    bool(T&)         or awaitable<bool>(T&)  idle resources only; false/throw = destroy
//   before_acquire bool(T&)         or awaitable<bool>(T&)  taken from idle (never a fresh one); false = reject
//   before_release bool(T&)         or awaitable<bool>(T&)  on release; false/throw = broken, destroy
#pragma once

#include <respool/detail/pool_impl.hpp>

#include <boost/asio/awaitable.hpp>

#include <functional>
#include <type_traits>
#include <utility>

namespace respool {

namespace detail {
template <class R>
struct is_awaitable : std::false_type {};
template <class U, class E>
struct is_awaitable<boost::asio::awaitable<U, E>> : std::true_type {};
}  // namespace detail

template <class T>
class factory_hook {
public:
    factory_hook() = default;
    template <class F>
        requires std::invocable<F&>
    factory_hook(F f) {  // NOLINT(google-explicit-constructor): hooks are written inline
        using R = std::invoke_result_t<F&>;
        if constexpr (detail::is_awaitable<R>::value) {
            static_assert(std::is_convertible_v<typename R::value_type, T>, "factory coroutine must yield T");
            async_ = std::move(f);
        } else {
            static_assert(std::is_convertible_v<R, T>, "factory must return T or asio::awaitable<T>");
            sync_ = std::move(f);
        }
    }
    std::function<T()> sync_;
    std::function<boost::asio::awaitable<T>()> async_;
};

template <class T>
class check_hook {
public:
    check_hook() = default;
    template <class F>
        requires std::invocable<F&, T&>
    check_hook(F f) {  // NOLINT(google-explicit-constructor)
        using R = std::invoke_result_t<F&, T&>;
        if constexpr (detail::is_awaitable<R>::value) {
            static_assert(std::is_same_v<typename R::value_type, bool>, "check coroutine must yield bool");
            async_ = std::move(f);
        } else {
            static_assert(std::is_convertible_v<R, bool>, "check must return bool or asio::awaitable<bool>");
            sync_ = std::move(f);
        }
    }
    std::function<bool(T&)> sync_;
    std::function<boost::asio::awaitable<bool>(T&)> async_;
};

template <class T>
struct hooks {
    factory_hook<T> factory{};             // required
    std::function<void(T&)> destructor{};  // optional; T's own destructor runs afterwards anyway
    check_hook<T> healthcheck{};
    check_hook<T> before_acquire{};
    check_hook<T> before_release{};
};

}  // namespace respool
