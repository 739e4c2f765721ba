// respool::sqlite values: bound parameters (sqlite::params) and the rows of a statement
// (sqlite::result), shaped as pg::params and pg::result so that a service reads the same either way.
#pragma once

#include <respool/detail/db_values.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <ratio>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace respool::sqlite {

// The bound parameters ?1, ?2, ... (or ?, :name, @name, $name in order) of a statement, sent apart
// from its text (nothing to quote, nothing to inject). Integers and bool as INTEGER, floating point
// as REAL, strings as TEXT, byte spans as BLOB, std::nullopt (or an empty std::optional) as NULL.
// A system_clock time point is bound as TEXT "YYYY-MM-DD HH:MM:SS.ffffff" in UTC: the form SQLite's
// own date functions produce and read (datetime('now') is its prefix), so stored times sort and
// compare as text and work with strftime() and julianday().
// A value that SQLite would not store exactly is refused when it is added, before anything runs: a
// string holding a NUL byte (std::invalid_argument; bytes are a blob's), an integer outside SQLite's
// 64-bit signed INTEGER such as an unsigned value above INT64_MAX (std::out_of_range; never wrapped),
// a NaN (std::invalid_argument; SQLite would store NULL), a time point outside the years 0000-9999
// (std::out_of_range). The message names the parameter's position (1 for the first).
// A std::chrono duration is bound as an INTEGER count of microseconds (the precision of the time
// points; read it back with get<std::int64_t> or use it as microseconds in SQL); a duration with a
// fraction of a microsecond, or beyond 64 bits of them, is refused (std::invalid_argument /
// std::out_of_range). SQLite has no arrays: a std::vector or std::span of values does not compile (bind
// each element, or a JSON text for json_each()). A char does not compile either (a letter or a number?
// bind std::string_view or an integer type).
//   c.async_query("SELECT name FROM users WHERE id = ? AND active = ?", sqlite::params(42, true), token);
class params : public respool::detail::db::params_builder<params> {
public:
    using params_builder::add;
    using value = std::variant<std::monostate, std::int64_t, double, std::string, std::vector<std::byte>>;

    params() = default;
    template <class... T>
    explicit params(const T&... v) {
        (add(v), ...);
    }
    params& add(std::nullopt_t);
    params& add(bool v);
    // Every integer type. A char type does not compile: a letter or a number? say which by the type.
    template <class I>
    requires(std::is_integral_v<I> && !std::is_same_v<I, bool>) params& add(I v) {
        respool::detail::db::check_integer_parameter<I>();
        if constexpr (std::is_unsigned_v<I>) {
            if (static_cast<std::uint64_t>(v) > static_cast<std::uint64_t>(INT64_MAX))
                refuse_integer(static_cast<std::uint64_t>(v));
        }
        return add_integer(static_cast<std::int64_t>(v));
    }
    params& add(float v) { return add(double{v}); }
    params& add(double v);
    params& add(std::string_view v);
    params& add(std::span<const std::byte> v);                        // BLOB
    params& add(std::chrono::sys_time<std::chrono::microseconds> t);  // TEXT, UTC, see above
    // INTEGER microseconds, see above
    template <class Rep, class Period>
    params& add(std::chrono::duration<Rep, Period> d) {
        return add_integer(respool::detail::db::whole_microseconds(
            d, [this](long long count, std::intmax_t num, std::intmax_t den, bool fraction) {
                refuse_duration(count, num, den, fraction);
            }));
    }
    template <class T>
    requires(!std::is_same_v<T, std::byte>) params& add(const std::vector<T>&) {
        static_assert(respool::detail::db::dependent_false<T>,
                      "respool: SQLite has no arrays; bind each element, or a JSON text for json_each()");
        return *this;
    }
    template <class T, std::size_t N>
    requires(!std::is_same_v<std::remove_cv_t<T>, std::byte>) params& add(std::span<T, N>) {
        static_assert(respool::detail::db::dependent_false<T>,
                      "respool: SQLite has no arrays; bind each element, or a JSON text for json_each()");
        return *this;
    }
    [[nodiscard]] std::size_t size() const noexcept { return values_.size(); }
    [[nodiscard]] const std::vector<value>& values() const noexcept { return values_; }

private:
    params& add_integer(std::int64_t v);
    [[noreturn]] void refuse_integer(std::uint64_t v) const;
    [[noreturn]] void refuse_duration(long long count, std::intmax_t num, std::intmax_t den,
                                      bool fraction) const;
    std::vector<value> values_;
};

// The storage class of one field (SQLite's dynamic typing: each value has its own).
enum class value_kind { null, integer, real, text, blob };

// The rows of one statement, copied out of SQLite before the statement is reset (a result never
// points into a connection). Copies share the rows; they are valid on any thread.
class result : public respool::detail::db::result_reader<result> {
public:
    result() = default;
    [[nodiscard]] std::size_t rows() const noexcept;
    [[nodiscard]] std::size_t columns() const noexcept;
    [[nodiscard]] std::string_view column_name(std::size_t col) const;
    [[nodiscard]] value_kind kind(std::size_t row, std::size_t col) const;
    [[nodiscard]] bool is_null(std::size_t row, std::size_t col) const {
        return kind(row, col) == value_kind::null;
    }
    // The field as text (a number as SQLite writes it, a blob's bytes as they are); throws
    // std::out_of_range for a cell outside the result, std::logic_error for NULL. The view lives as
    // long as this result (or a copy of it).
    [[nodiscard]] std::string_view text(std::size_t row, std::size_t col) const;
    // get<T>(row, col): the field as a C++ value: bool, std::int16_t/int32_t/int64_t, float, double,
    // std::string, std::vector<std::byte>, std::chrono::system_clock::time_point (TEXT as params binds it,
    // with 'T' or a space, optional fraction and optional "Z"/"+HH:MM"; or INTEGER Unix seconds), or
    // std::optional of one of them (nullopt for NULL). Throws std::logic_error for NULL into a
    // non-optional, std::invalid_argument (naming the column and the value) when the field is not
    // such a value, std::out_of_range when an integer does not fit (any other integer type is read as
    // std::int64_t and must fit; a std::chrono duration from INTEGER microseconds, held exactly).
    // By name and by row (result_reader, respool/detail/db_values.hpp): get<T>(row, "name"),
    // column("name"), row(i) and `for (sqlite::row row : result)`, one() / one<T>() (exactly one row),
    // scalar<T>() (one row of one column), all<T>() (every row into a struct, see row_view::as).
    // Rows inserted, updated or deleted by the statement itself (sqlite3_changes; 0 for statements
    // that change none, such as SELECT and DDL).
    [[nodiscard]] std::uint64_t affected_rows() const noexcept;
    // The connection's last inserted rowid after the statement (sqlite3_last_insert_rowid).
    [[nodiscard]] std::int64_t last_insert_rowid() const noexcept;

    struct data;  // the copied rows (values.cpp)

private:
    friend struct result_access;
    friend class respool::detail::db::result_reader<result>;
    void parse(std::size_t row, std::size_t col, bool& out) const;
    void parse(std::size_t row, std::size_t col, std::int16_t& out) const;
    void parse(std::size_t row, std::size_t col, std::int32_t& out) const;
    void parse(std::size_t row, std::size_t col, std::int64_t& out) const;
    void parse(std::size_t row, std::size_t col, float& out) const;
    void parse(std::size_t row, std::size_t col, double& out) const;
    void parse(std::size_t row, std::size_t col, std::string& out) const;
    void parse(std::size_t row, std::size_t col, std::vector<std::byte>& out) const;
    void parse(std::size_t row, std::size_t col, std::chrono::system_clock::time_point& out) const;
    void parse(std::size_t row, std::size_t col, std::chrono::microseconds& out) const;
    friend class respool::detail::db::row_view<result>;
    static constexpr const char* reader_name = "respool::sqlite::result";
    std::shared_ptr<const data> data_;
};

// One row of a result: get<T>(col) or get<T>("name"), is_null, text, and as<T>() into a struct.
using row = respool::detail::db::row_view<result>;

}  // namespace respool::sqlite
