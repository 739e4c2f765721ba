// A move-only callable wrapper (std::move_only_function is C++23): hooks may own move-only state
// such as a TLS context or a connection string in a unique_ptr.
#pragma once

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

namespace respool::detail {

template <class Signature>
class unique_function;

template <class R, class... Args>
class unique_function<R(Args...)> {
public:
    unique_function() noexcept = default;
    unique_function(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor)
    template <class F>
    requires(!std::is_same_v<std::decay_t<F>, unique_function> &&
             std::is_invocable_r_v<R, std::decay_t<F>&, Args...>)
        unique_function(F&& f)  // NOLINT(google-explicit-constructor): hooks are written inline
        : target_(std::make_unique<holder<std::decay_t<F>>>(std::forward<F>(f))) {}
    unique_function(unique_function&&) noexcept = default;
    unique_function& operator=(unique_function&&) noexcept = default;

    explicit operator bool() const noexcept { return target_ != nullptr; }
    R operator()(Args... args) const { return target_->call(std::forward<Args>(args)...); }

private:
    struct callable {
        virtual ~callable() = default;
        virtual R call(Args... args) = 0;
    };
    template <class F>
    struct holder final : callable {
        template <class G>
        explicit holder(G&& g) : f(std::forward<G>(g)) {}
        R call(Args... args) override { return std::invoke(f, std::forward<Args>(args)...); }
        F f;
    };
    std::unique_ptr<callable> target_;
};

}  // namespace respool::detail
