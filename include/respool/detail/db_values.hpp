// What the database pools' value types share (pg::params and sqlite::params, pg::result and
// sqlite::result): the params overloads that only name a value by the form the builder binds, and
// result::get<T>, which reads a field through the result's own parse overloads (NULL for an optional).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace respool::detail::db {

// Base of a params builder (CRTP): Params binds std::nullopt, std::string_view, std::span<const
// std::byte> and std::chrono::sys_time<std::chrono::microseconds>, and says `using
// params_builder<Params>::add;`.
template <class Params>
class params_builder {
public:
    Params& add(const char* v) { return self().add(std::string_view(v)); }
    Params& add(const std::string& v) { return self().add(std::string_view(v)); }
    Params& add(const std::vector<std::byte>& v) { return self().add(std::span<const std::byte>(v)); }
    template <class D>
    Params& add(std::chrono::sys_time<D> t) {
        return self().add(std::chrono::floor<std::chrono::microseconds>(t));
    }
    template <class T>
    Params& add(const std::optional<T>& v) {
        return v ? self().add(*v) : self().add(std::nullopt);
    }

private:
    Params& self() noexcept { return static_cast<Params&>(*this); }
};

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

// Base of a result (CRTP): Result has is_null(row, col) and parse(row, col, T&) for each T it reads,
// and befriends result_reader<Result> when parse is private.
template <class Result>
class result_reader {
public:
    template <class T>
    [[nodiscard]] T get(std::size_t row, std::size_t col) const {
        const auto& r = static_cast<const Result&>(*this);
        if constexpr (is_optional<T>::value) {
            if (r.is_null(row, col)) return std::nullopt;
            return get<typename T::value_type>(row, col);
        } else {
            T out{};
            r.parse(row, col, out);
            return out;
        }
    }
};

}  // namespace respool::detail::db
