// respool::pg values: bound parameters (pg::params), the rows of a statement (pg::result) and NOTIFY
// deliveries (pg::notification).
#pragma once

#include <respool/detail/db_values.hpp>

#include <boost/container/small_vector.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

struct pg_result;  // libpq's PGresult

namespace respool::pg {

// The bound parameters $1, $2, ... of a statement, sent apart from its text (nothing to quote, nothing to
// inject). Integers, floating point and bool go in binary with their type; strings as text of a type the
// server infers from the statement; byte spans as bytea; system_clock time points as timestamptz
// (microseconds); std::nullopt (or an empty std::optional) as NULL. A value that cannot be sent
// exactly is refused where it is added, with std::invalid_argument naming the parameter: text holding
// a NUL byte (text cannot store one: bytes are bytea), more than 65535 parameters, a value of 2 GiB.
//   c.async_query("SELECT name FROM users WHERE id = $1 AND active = $2", pg::params(42, true), token);
class params : public respool::detail::db::params_builder<params> {
public:
    using params_builder::add;
    params() = default;
    template <class... T>
    explicit params(const T&... v) {
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
    [[nodiscard]] std::size_t size() const noexcept { return types_.size(); }

private:
    friend struct params_access;
    params& push(unsigned type, std::string_view bytes, bool binary, bool null = false);
    // In the arrays libpq takes; up to 4 parameters and 15 bytes of values without an allocation.
    boost::container::small_vector<unsigned, 4> types_;  // OIDs; 0 = let the server infer
    boost::container::small_vector<int, 4> formats_;     // 1 = binary
    boost::container::small_vector<int, 4> lengths_;
    boost::container::small_vector<std::size_t, 4> offsets_;  // into data_; npos = NULL
    std::string data_;                                        // the values, back to back
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
    // of one of them (nullopt for NULL). Throws std::logic_error for NULL into a non-optional,
    // std::invalid_argument (naming the column and the text) when the text is not such a value.
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
    std::shared_ptr<const ::pg_result> res_;  // libpq's PGresult, freed with the last copy
    std::size_t rows_ = 0;
    std::size_t columns_ = 0;
    std::uint64_t affected_ = 0;
};

// A NOTIFY delivered to a connection that LISTENs on its channel.
struct notification {
    std::string channel;
    std::string payload;
    int sender_pid = 0;  // the notifying backend
};

}  // namespace respool::pg
