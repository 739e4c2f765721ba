// respool::pg values: bound parameters (pg::params), the rows of a statement (pg::result) and NOTIFY
// deliveries (pg::notification).
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
#include <vector>

struct pg_result;  // libpq's PGresult

namespace respool::pg {

// The bound parameters $1, $2, ... of a statement, sent apart from its text (nothing to quote, nothing to
// inject). Integers, floating point and bool go in binary with their type: every integer type, as the
// smallest of int2, int4 and int8 that holds all its values (an unsigned 64-bit value above INT64_MAX
// is refused with std::out_of_range naming it, never wrapped); strings (std::string_view, std::string,
// const char*) as text of a type the server infers from the statement; byte spans as bytea;
// system_clock time points as timestamptz (microseconds); std::chrono durations as interval
// (microseconds; a duration with a fraction of a microsecond, or beyond what an interval holds, is
// refused with std::invalid_argument / std::out_of_range); a std::vector or std::span of numbers, bool
// or strings as a one-dimensional array (int2[], int4[], int8[], float4[], float8[], bool[], text[]),
// for `= ANY($1)` or unnest($1); std::nullopt (or an empty std::optional) as NULL. A char does not
// compile (a letter or a number? bind std::string_view or an integer type). A value that cannot be sent
// exactly is refused where it is added, with std::invalid_argument naming the parameter: text holding
// a NUL byte (text cannot store one: bytes are bytea), more than 65535 parameters, a value of 2 GiB.
//   c.async_query("SELECT name FROM users WHERE id = $1 AND active = $2", pg::params(42, true), token);
class params : public respool::detail::db::params_builder<params> {
public:
    using params_builder::add;
    params() noexcept;
    params(const params& o);
    params(params&& o) noexcept;
    params& operator=(const params& o);
    params& operator=(params&& o) noexcept;
    ~params();
    template <class... T>
    explicit params(const T&... v) : params() {  // delegating: a throwing add runs ~params (out of line)
        (add(v), ...);
    }
    params& add(std::nullopt_t);
    params& add(bool v);
    params& add(std::int16_t v);
    params& add(std::int32_t v);
    params& add(std::int64_t v);
    params& add(float v);
    params& add(double v);
    params& add(std::string_view v);
    params& add(std::span<const std::byte> v);                        // bytea
    params& add(std::chrono::sys_time<std::chrono::microseconds> t);  // timestamptz
    // Every other integer type (long long, unsigned, std::size_t, std::uint64_t, std::uint8_t, ...). A
    // char type does not compile: a letter or a number? say which by the type.
    template <class I>
    requires(std::is_integral_v<I> && !std::is_same_v<I, bool>) params& add(I v) {
        respool::detail::db::check_integer_parameter<I>();
        if constexpr (std::is_signed_v<I> ? sizeof(I) <= 2 : sizeof(I) < 2)
            return add(static_cast<std::int16_t>(v));
        else if constexpr (std::is_signed_v<I> ? sizeof(I) <= 4 : sizeof(I) < 4)
            return add(static_cast<std::int32_t>(v));
        else if constexpr (std::is_signed_v<I> || sizeof(I) < 8)
            return add(static_cast<std::int64_t>(v));
        else
            return add(checked_int64(v));
    }
    // interval
    template <class Rep, class Period>
    params& add(std::chrono::duration<Rep, Period> d) {
        return add_interval(respool::detail::db::whole_microseconds(
            d, [this](long long count, std::intmax_t num, std::intmax_t den, bool fraction) {
                refuse_duration(count, num, den, fraction);
            }));
    }
    // One-dimensional arrays.
    params& add(std::span<const bool> v);
    params& add(std::span<const std::int16_t> v);
    params& add(std::span<const std::int32_t> v);
    params& add(std::span<const std::int64_t> v);
    params& add(std::span<const float> v);
    params& add(std::span<const double> v);
    params& add(std::span<const std::string> v);
    params& add(std::span<const std::string_view> v);
    template <class T>
    requires(!std::is_same_v<T, std::byte>) params& add(const std::vector<T>& v) {
        static_assert(!std::is_same_v<T, bool>,
                      "respool: std::vector<bool> has no span; bind a std::span<const bool>");
        return add(std::span<const T>(v));
    }
    template <class T, std::size_t N>
    requires(!std::is_same_v<std::remove_cv_t<T>, std::byte> &&
             !std::is_const_v<T>) params& add(std::span<T, N> v) {
        return add(std::span<const T>(v));
    }
    // An array of another integer type: each element as add(element) would bind it.
    template <class I>
    requires(std::is_integral_v<I> && !std::is_same_v<I, bool> && !respool::detail::db::is_character_v<I> &&
             !std::is_same_v<I, std::int16_t> && !std::is_same_v<I, std::int32_t> &&
             !std::is_same_v<I, std::int64_t>) params& add(std::span<const I> v) {
        using target =
            std::conditional_t<(std::is_signed_v<I> ? sizeof(I) <= 2 : sizeof(I) < 2), std::int16_t,
                               std::conditional_t<(std::is_signed_v<I> ? sizeof(I) <= 4 : sizeof(I) < 4),
                                                  std::int32_t, std::int64_t>>;
        std::vector<target> wide;
        wide.reserve(v.size());
        for (const I e : v) {
            if constexpr (std::is_unsigned_v<I> && sizeof(I) == 8)
                wide.push_back(checked_int64(e));
            else
                wide.push_back(static_cast<target>(e));
        }
        return add(std::span<const target>(wide));
    }
    [[nodiscard]] std::size_t size() const noexcept;
    // Removes every parameter and keeps the memory: a loop that binds row after row into one params
    // allocates once.
    void clear() noexcept;

private:
    friend struct params_access;
    std::int64_t checked_int64(std::uint64_t v) const {
        if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) refuse_integer(v);
        return static_cast<std::int64_t>(v);
    }
    [[noreturn]] void refuse_integer(std::uint64_t v) const;
    [[noreturn]] void refuse_duration(long long count, std::intmax_t num, std::intmax_t den,
                                      bool fraction) const;
    params& add_interval(std::int64_t microseconds);
    params& add_array(unsigned element_type, std::size_t count, std::string_view elements);
    params& push(unsigned type, std::string_view bytes, bool binary, bool null = false);
    // The values in the arrays libpq takes, made at the first add: a statement's params move from the
    // call through the pool to the connection several times, and a move is one pointer (no params, no
    // allocation at all).
    struct values;
    std::unique_ptr<values> v_;
};

// The rows of one statement, read in place from libpq's result (no copy of the fields): as text, or as
// C++ values parsed from the server's text format. Copies share the rows; they stay valid on any
// thread after the connection has moved on or closed.
class result : public respool::detail::db::result_reader<result> {
public:
    result() = default;
    [[nodiscard]] std::size_t rows() const noexcept { return rows_; }
    [[nodiscard]] std::size_t columns() const noexcept { return columns_; }
    [[nodiscard]] std::string_view column_name(std::size_t col) const;
    [[nodiscard]] bool is_null(std::size_t row, std::size_t col) const;
    // The field as text; throws std::out_of_range for a cell outside the result, std::logic_error for
    // NULL. The view lives as long as this result (or a copy of it).
    [[nodiscard]] std::string_view text(std::size_t row, std::size_t col) const;
    // get<T>(row, col): the field as a C++ value: bool, std::int16_t/int32_t/int64_t, float, double,
    // std::string, std::vector<std::byte> (bytea), std::chrono::system_clock::time_point (timestamptz,
    // timestamp read as UTC, date at midnight UTC; the server's ISO DateStyle, its default), or std::optional
    // of one of them (nullopt for NULL); any other integer type is read as int64 and must fit
    // (std::out_of_range); a std::chrono duration from an interval of days and time (a day as 24 h; years
    // and months are refused), held exactly or std::out_of_range. Throws std::logic_error for NULL into a
    // non-optional, std::invalid_argument (naming the column, its server type, the text and the C++ type)
    // when the text is not such a value. By name and by row (result_reader, respool/detail/db_values.hpp):
    // get<T>(row, "name"), column("name"), row(i) and `for (pg::row row : result)`, one() / one<T>() (exactly
    // one row), scalar<T>() (one row of one column), all<T>() (every row into a struct, see row_view::as).
    [[nodiscard]] std::uint64_t affected_rows() const noexcept { return affected_; }
    [[nodiscard]] std::string_view command_tag() const noexcept;  // "INSERT 0 3", "SELECT 1"

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
    static constexpr const char* reader_name = "respool::pg::result";
    std::shared_ptr<const ::pg_result> res_;  // libpq's PGresult, freed with the last copy
    std::size_t rows_ = 0;
    std::size_t columns_ = 0;
    std::uint64_t affected_ = 0;
};

// One row of a result: get<T>(col) or get<T>("name"), is_null, text, and as<T>() into a struct.
using row = respool::detail::db::row_view<result>;

// A NOTIFY delivered to a connection that LISTENs on its channel.
struct notification {
    std::string channel;
    std::string payload;
    int sender_pid = 0;  // the notifying backend
};

}  // namespace respool::pg
