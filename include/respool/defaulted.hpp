// respool::defaulted<T>: a setting that remembers whether it was set. A pool may move a setting left at
// its default so that it never contradicts one the user set (min_idle follows max, and so on: the
// "Defaults" paragraph of docs/01-concepts.md lists every pair); two settings that were both set and
// contradict each other are refused as before.
//
// It reads and is assigned as a T: `cfg.max = 4`, `.max = 4` in a designated initializer, `cfg.max > n`,
// `std::to_string(cfg.max)`. A number converts to T implicitly; a class type such as a std::chrono
// duration is its base, so that the chrono operators and comparisons apply unchanged. Where a template
// must deduce T itself (std::min, std::max), or in `cond ? 0 : cfg.max`, read value().
#pragma once

#include <type_traits>
#include <utility>

namespace respool {

// Marks the value a setting holds by default (not set by the user).
struct by_default_t {
    explicit by_default_t() = default;
};
inline constexpr by_default_t by_default{};

namespace detail {
// A value the setting can be assigned from: anything convertible to T except the setting itself
// (copying a setting keeps whether it was set).
template <class U, class Setting, class T>
concept setting_value = !std::is_same_v<std::remove_cvref_t<U>, Setting> &&
                        !std::is_same_v<std::remove_cvref_t<U>, by_default_t> && std::is_convertible_v<U, T>;
}  // namespace detail

// Numbers, enumerations. `{}` (`.max_lifetime = {}`) sets T{}: it was written, so it counts as set.
template <class T>
class defaulted {
public:
    constexpr defaulted() noexcept : set_(true) {}
    constexpr defaulted(by_default_t, T v) noexcept : value_(v) {}
    template <detail::setting_value<defaulted, T> U>
    constexpr defaulted(U&& v) noexcept(std::is_nothrow_convertible_v<U, T>)  // NOLINT: reads as a T
        : value_(static_cast<T>(std::forward<U>(v))), set_(true) {}

    constexpr operator T() const noexcept { return value_; }  // NOLINT: reads as a T
    [[nodiscard]] constexpr T value() const noexcept { return value_; }
    [[nodiscard]] constexpr bool is_set() const noexcept { return set_; }

private:
    T value_{};
    bool set_ = false;
};

// Class types (durations): the value is the base.
template <class T>
requires std::is_class_v<T>
class defaulted<T> : public T {
public:
    constexpr defaulted() noexcept(std::is_nothrow_default_constructible_v<T>) : T(), set_(true) {}
    constexpr defaulted(by_default_t, T v) noexcept(std::is_nothrow_move_constructible_v<T>)
        : T(std::move(v)) {}
    template <detail::setting_value<defaulted, T> U>
    constexpr defaulted(U&& v) noexcept(std::is_nothrow_convertible_v<U, T>)  // NOLINT: reads as a T
        : T(static_cast<T>(std::forward<U>(v))), set_(true) {}

    [[nodiscard]] constexpr const T& value() const noexcept { return *this; }
    [[nodiscard]] constexpr bool is_set() const noexcept { return set_; }

private:
    bool set_ = false;
};

}  // namespace respool
