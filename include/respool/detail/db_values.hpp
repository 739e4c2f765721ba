// What the database pools' value types share (pg::params and sqlite::params, pg::result and
// sqlite::result): the params overloads that only name a value by the form the builder binds, and the
// reading side: result::get<T> (through the result's own parse overloads; NULL for an optional), columns
// by name, rows as views to iterate, one() and scalar<T>(), and rows mapped into structs.
#pragma once

#include <boost/describe/members.hpp>
#include <boost/mp11/algorithm.hpp>
#include <boost/pfr/core.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <ratio>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <vector>

namespace respool::detail::db {

template <class T>
inline constexpr bool dependent_false = false;

// A duration parameter in whole microseconds, as both databases bind one (PostgreSQL an interval,
// SQLite an INTEGER). `refuse(count, num, den, fraction)` must throw: for a value past 64 bits of
// microseconds (fraction false) or one with a fraction of a microsecond (fraction true).
template <class Rep, class Period, class Refuse>
std::int64_t whole_microseconds(std::chrono::duration<Rep, Period> d, Refuse&& refuse) {
    static_assert(std::is_integral_v<Rep>,
                  "respool: bind an integer duration (std::chrono::milliseconds, ...), not a floating one");
    using to_us = std::ratio_divide<Period, std::micro>;
    if constexpr (to_us::den == 1) {  // as coarse as a microsecond or coarser: a multiple of it
        constexpr auto limit = std::numeric_limits<std::int64_t>::max() / to_us::num;
        if (d.count() > limit || (std::is_signed_v<Rep> && d.count() < -limit))
            refuse(static_cast<long long>(d.count()), Period::num, Period::den, false);
        return static_cast<std::int64_t>(d.count()) * to_us::num;
    } else {  // finer: whole microseconds only
        if (d.count() % to_us::den != 0)
            refuse(static_cast<long long>(d.count()), Period::num, Period::den, true);
        return static_cast<std::int64_t>(d.count() / to_us::den);
    }
}

// Character types: a char is a letter to some readers and a small number to others, so neither params
// nor a read guesses; say which by the type (std::string_view, or an integer type). Each params refuses
// them in its own integer template (a base-class template would be hidden by it in clang 14).
template <class T>
inline constexpr bool is_character_v =
    std::is_same_v<T, char> || std::is_same_v<T, wchar_t> || std::is_same_v<T, char8_t> ||
    std::is_same_v<T, char16_t> || std::is_same_v<T, char32_t>;

// What every params' integer template checks first (each params has its own template: a base-class
// one would be hidden by it in clang 14). A char: a letter or a number? say which by the type.
template <class I>
constexpr void check_integer_parameter() noexcept {
    static_assert(
        !is_character_v<I>,
        "respool: a char is not a parameter (a letter or a number?): bind std::string_view(&c, 1) for "
        "text, or an integer type such as std::int16_t for a number");
    static_assert(sizeof(I) <= sizeof(std::int64_t), "respool: an integer wider than 64 bits");
}

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
template <class T>
struct is_duration : std::false_type {};
template <class Rep, class Period>
struct is_duration<std::chrono::duration<Rep, Period>> : std::true_type {};

// The errors of the reading side, built once in src/common/db_rows.cpp. `who` names the result type
// ("respool::pg::result").
[[noreturn]] void throw_row_count(const char* who, std::size_t rows, const char* wanted);
[[noreturn]] void throw_column_count(const char* who, std::size_t columns);
[[noreturn]] void throw_no_row(const char* who, std::size_t row, std::size_t rows);
[[noreturn]] void throw_field_count(const char* who, const std::type_info& type, std::size_t fields,
                                    std::size_t columns);
[[noreturn]] void throw_integer_range(const char* who, std::string_view column, std::int64_t value,
                                      const char* type);
[[noreturn]] void throw_duration_inexact(const char* who, std::string_view column, std::int64_t microseconds,
                                         std::intmax_t num, std::intmax_t den);
// The position of the column called `name` (the first, when several share it); std::out_of_range naming
// it, the columns there are and, when `type` is given, the struct that wanted it.
std::size_t find_column(const char* who, std::string_view name, std::size_t columns,
                        std::string_view (*name_of)(const void*, std::size_t), const void* result,
                        const std::type_info* type);

template <class I>
const char* integer_name() {
    if constexpr (std::is_signed_v<I>)
        return sizeof(I) == 1   ? "a signed 8-bit integer"
               : sizeof(I) == 2 ? "a 16-bit integer"
               : sizeof(I) == 4 ? "a 32-bit integer"
                                : "a 64-bit integer";
    else
        return sizeof(I) == 1   ? "an unsigned 8-bit integer"
               : sizeof(I) == 2 ? "an unsigned 16-bit integer"
               : sizeof(I) == 4 ? "an unsigned 32-bit integer"
                                : "an unsigned 64-bit integer";
}

template <class Result>
class row_view;

// Base of a result (CRTP): Result has rows(), columns(), column_name(col), is_null(row, col),
// parse(row, col, T&) for each T it reads and a `reader_name` ("respool::pg::result"), and befriends
// result_reader<Result> when they are private.
template <class Result>
class result_reader {
public:
    using row_type = row_view<Result>;

    // get<T>(row, col) or get<T>(row, "name"): the field as a C++ value (the result documents which).
    template <class T>
    [[nodiscard]] T get(std::size_t row, std::size_t col) const {
        const auto& r = self();
        if constexpr (is_optional<T>::value) {
            if (r.is_null(row, col)) return std::nullopt;
            return get<typename T::value_type>(row, col);
        } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> && !is_character_v<T> &&
                             !std::is_same_v<T, std::int16_t> && !std::is_same_v<T, std::int32_t> &&
                             !std::is_same_v<T, std::int64_t>) {
            // Any other integer type: read as 64 bits, then it must fit (never wrapped).
            static_assert(sizeof(T) <= sizeof(std::int64_t), "respool: an integer wider than 64 bits");
            std::int64_t v = 0;
            r.parse(row, col, v);
            if ((std::is_signed_v<T> && v < static_cast<std::int64_t>(std::numeric_limits<T>::min())) ||
                (v < 0 && std::is_unsigned_v<T>) ||
                (v > 0 &&
                 static_cast<std::uint64_t>(v) > static_cast<std::uint64_t>(std::numeric_limits<T>::max())))
                throw_integer_range(Result::reader_name, r.column_name(col), v, integer_name<T>());
            return static_cast<T>(v);
        } else if constexpr (is_duration<T>::value && !std::is_same_v<T, std::chrono::microseconds>) {
            // Any other duration: read as microseconds, then it must be held exactly (never truncated).
            static_assert(std::is_integral_v<typename T::rep>, "respool: read an integer duration");
            std::chrono::microseconds us{};
            r.parse(row, col, us);
            using from_us = std::ratio_divide<std::micro, typename T::period>;
            const std::int64_t n = us.count();
            if constexpr (from_us::den == 1) {  // T is finer: a multiple, which must fit
                if (n > std::numeric_limits<typename T::rep>::max() / from_us::num ||
                    n < std::numeric_limits<typename T::rep>::min() / from_us::num)
                    throw_duration_inexact(Result::reader_name, r.column_name(col), n, T::period::num,
                                           T::period::den);
                return T(static_cast<typename T::rep>(n * from_us::num));
            } else {  // T is coarser: whole units of it only
                if (n % from_us::den != 0 || n / from_us::den > std::numeric_limits<typename T::rep>::max() ||
                    n / from_us::den < std::numeric_limits<typename T::rep>::min())
                    throw_duration_inexact(Result::reader_name, r.column_name(col), n, T::period::num,
                                           T::period::den);
                return T(static_cast<typename T::rep>(n / from_us::den));
            }
        } else {
            static_assert(!is_character_v<T>, "respool: read a char as std::string or as an integer type");
            T out{};
            r.parse(row, col, out);
            return out;
        }
    }
    template <class T>
    [[nodiscard]] T get(std::size_t row, std::string_view column_name) const {
        return get<T>(row, column(column_name));
    }

    // The position of the column called `name`; std::out_of_range naming it and the columns there are.
    [[nodiscard]] std::size_t column(std::string_view name) const { return column_for(name, nullptr); }

    // Row `i` (std::out_of_range past the last), and the rows to iterate: for (auto row : result). A row
    // is a view into its result, so neither row() nor one() is offered on a temporary result (that row
    // would dangle): keep the result, or map the row at once with one<T>().
    [[nodiscard]] row_type row(std::size_t i) const& {
        if (i >= self().rows()) throw_no_row(Result::reader_name, i, self().rows());
        return row_type(self(), i);
    }
    row_type row(std::size_t i) const&& = delete;
    class iterator {
    public:
        using value_type = row_type;
        using difference_type = std::ptrdiff_t;
        iterator() = default;
        row_type operator*() const { return row_type(*r_, i_); }
        iterator& operator++() {
            ++i_;
            return *this;
        }
        iterator operator++(int) {
            iterator before = *this;
            ++i_;
            return before;
        }
        bool operator==(const iterator& o) const noexcept { return i_ == o.i_; }

    private:
        friend class result_reader;
        iterator(const Result* r, std::size_t i) : r_(r), i_(i) {}
        const Result* r_ = nullptr;
        std::size_t i_ = 0;
    };
    [[nodiscard]] iterator begin() const { return iterator(&self(), 0); }
    [[nodiscard]] iterator end() const { return iterator(&self(), self().rows()); }

    // The one row of a statement that must return exactly one: std::logic_error saying "no rows" or
    // how many otherwise. one<T>() maps it as row.as<T>() does.
    [[nodiscard]] row_type one() const& {
        if (self().rows() != 1) throw_row_count(Result::reader_name, self().rows(), "exactly one row");
        return row_type(self(), 0);
    }
    row_type one() const&& = delete;
    template <class T>
    [[nodiscard]] T one() const {
        const result_reader& r = *this;
        return r.one().template as<T>();
    }
    // The single value of a statement that returns one row of one column (SELECT count(*) ...):
    // std::logic_error when there are no rows, several, or not exactly one column.
    template <class T>
    [[nodiscard]] T scalar() const {
        if (self().rows() != 1) throw_row_count(Result::reader_name, self().rows(), "one row of one column");
        if (self().columns() != 1) throw_column_count(Result::reader_name, self().columns());
        return get<T>(0, 0);
    }
    // Every row mapped as row.as<T>() does.
    template <class T>
    [[nodiscard]] std::vector<T> all() const {
        std::vector<T> out;
        out.reserve(self().rows());
        for (std::size_t i = 0; i < self().rows(); ++i) out.push_back(row_type(self(), i).template as<T>());
        return out;
    }

private:
    friend class row_view<Result>;
    const Result& self() const noexcept { return static_cast<const Result&>(*this); }
    std::size_t column_for(std::string_view name, const std::type_info* type) const {
        return find_column(
            Result::reader_name, name, self().columns(),
            [](const void* r, std::size_t c) { return static_cast<const Result*>(r)->column_name(c); },
            &self(), type);
    }
};

// One row of a result, read in place: valid while the result (or a copy of it) lives.
template <class Result>
class row_view {
public:
    row_view(const Result& r, std::size_t row) noexcept : r_(&r), row_(row) {}
    [[nodiscard]] std::size_t index() const noexcept { return row_; }
    [[nodiscard]] std::size_t columns() const noexcept { return r_->columns(); }
    [[nodiscard]] std::string_view column_name(std::size_t col) const { return r_->column_name(col); }
    [[nodiscard]] bool is_null(std::size_t col) const { return r_->is_null(row_, col); }
    [[nodiscard]] bool is_null(std::string_view name) const { return r_->is_null(row_, r_->column(name)); }
    [[nodiscard]] std::string_view text(std::size_t col) const { return r_->text(row_, col); }
    [[nodiscard]] std::string_view text(std::string_view name) const {
        return r_->text(row_, r_->column(name));
    }
    template <class T>
    [[nodiscard]] T get(std::size_t col) const {
        return r_->template get<T>(row_, col);
    }
    template <class T>
    [[nodiscard]] T get(std::string_view name) const {
        return r_->template get<T>(row_, r_->column(name));
    }

    // The row as a struct. A struct described with BOOST_DESCRIBE_STRUCT is filled by name: each
    // public member from the column of its name (columns no member names are left alone; a missing one
    // is std::out_of_range naming the column and the struct). Any other aggregate is filled by position
    // through Boost.PFR (Boost 1.81's PFR knows no member names): field i from column i, and the
    // numbers of fields and columns must be equal (std::logic_error otherwise). Each member is read as
    // get<Member>: std::optional members take NULL, others refuse it; a field that is not the
    // member's type is an error naming the column.
    template <class T>
    [[nodiscard]] T as() const {
        T out{};
        if constexpr (boost::describe::has_describe_members<T>::value) {
            using members = boost::describe::describe_members<T, boost::describe::mod_public |
                                                                     boost::describe::mod_inherited>;
            boost::mp11::mp_for_each<members>([&](auto d) {
                auto& member = out.*d.pointer;
                member = get<std::remove_cvref_t<decltype(member)>>(r_->column_for(d.name, &typeid(T)));
            });
        } else if constexpr (std::is_aggregate_v<T>) {
            constexpr std::size_t fields = boost::pfr::tuple_size_v<T>;
            if (fields != r_->columns())
                throw_field_count(Result::reader_name, typeid(T), fields, r_->columns());
            boost::pfr::for_each_field(out, [&](auto& field, std::size_t i) {
                field = get<std::remove_cvref_t<decltype(field)>>(i);
            });
        } else {
            static_assert(
                dependent_false<T>,
                "respool: row.as<T>() maps a struct described with BOOST_DESCRIBE_STRUCT (by name) or "
                "an aggregate (by position)");
        }
        return out;
    }

private:
    const Result* r_;
    std::size_t row_;
};

}  // namespace respool::detail::db
