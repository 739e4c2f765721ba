// sqlite::params and sqlite::result: binding values, reading fields back as C++ values, and the one
// text form of a time point (params binds it, result::get reads it and SQLite's own variants).
#include "result_data.hpp"
#include "time_text.hpp"

#include "../common/iso_time.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace respool::sqlite {

namespace chr = std::chrono;

// ---- params -------------------------------------------------------------------------------------

params& params::add(std::nullopt_t) {
    values_.emplace_back(std::monostate{});
    return *this;
}
params& params::add(bool v) {
    values_.emplace_back(std::int64_t{v ? 1 : 0});
    return *this;
}
params& params::add_integer(std::int64_t v) {
    values_.emplace_back(v);
    return *this;
}
void params::refuse_integer(std::uint64_t v) const {
    throw std::out_of_range("respool::sqlite::params: parameter " + std::to_string(values_.size() + 1) +
                            " (" + std::to_string(v) +
                            ") does not fit SQLite's INTEGER (64-bit signed, at most 9223372036854775807)");
}
void params::refuse_duration(long long count, std::intmax_t num, std::intmax_t den, bool fraction) const {
    const std::string spelled =
        std::to_string(count) + " x " + std::to_string(num) + "/" + std::to_string(den) + " s";
    if (fraction)
        throw std::invalid_argument("respool::sqlite::params: parameter " +
                                    std::to_string(values_.size() + 1) + " is a duration of " + spelled +
                                    " with a fraction of a microsecond; durations are bound as whole "
                                    "microseconds, round it (std::chrono::round<std::chrono::microseconds>)");
    throw std::out_of_range("respool::sqlite::params: parameter " + std::to_string(values_.size() + 1) +
                            " is a duration of " + spelled + ", beyond 64 bits of microseconds");
}
params& params::add(double v) {
    if (std::isnan(v))
        throw std::invalid_argument("respool::sqlite::params: parameter " +
                                    std::to_string(values_.size() + 1) +
                                    " is NaN, which SQLite stores as NULL; bind std::nullopt for NULL");
    values_.emplace_back(v);
    return *this;
}
params& params::add(std::string_view v) {
    if (const auto nul = v.find('\0'); nul != std::string_view::npos)
        throw std::invalid_argument("respool::sqlite::params: parameter " +
                                    std::to_string(values_.size() + 1) +
                                    " is text holding a NUL byte (at offset " + std::to_string(nul) +
                                    "), which SQLite's text functions would cut; bind bytes as a blob "
                                    "(std::span<const std::byte>)");
    values_.emplace_back(std::string(v));
    return *this;
}
params& params::add(std::span<const std::byte> v) {
    values_.emplace_back(std::vector<std::byte>(v.begin(), v.end()));
    return *this;
}
params& params::add(chr::sys_time<chr::microseconds> t) {
    const auto day = chr::floor<chr::days>(t);
    const chr::year_month_day ymd(day);
    if (!ymd.ok() || ymd.year() < chr::year(0) || ymd.year() > chr::year(9999))
        throw std::out_of_range("respool::sqlite::params: parameter " + std::to_string(values_.size() + 1) +
                                " is a time outside the years 0000-9999, which the text form "
                                "YYYY-MM-DD HH:MM:SS.ffffff cannot hold");
    const chr::hh_mm_ss<chr::microseconds> tod(t - day);
    char buf[40];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02u %02d:%02d:%02d.%06lld", static_cast<int>(ymd.year()),
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                  static_cast<int>(tod.hours().count()), static_cast<int>(tod.minutes().count()),
                  static_cast<int>(tod.seconds().count()), static_cast<long long>(tod.subseconds().count()));
    return add(std::string_view(buf));
}

// ---- result -------------------------------------------------------------------------------------

namespace {

const result::data::cell& cell_at(const result::data* d, std::size_t row, std::size_t col) {
    if (!d || row >= d->rows || col >= d->names.size())
        throw std::out_of_range("respool::sqlite::result: no field at row " + std::to_string(row) +
                                ", column " + std::to_string(col));
    return d->cells[row * d->names.size() + col];
}

const char* kind_name(value_kind k) {
    switch (k) {
    case value_kind::null: return "NULL";
    case value_kind::integer: return "INTEGER";
    case value_kind::real: return "REAL";
    case value_kind::text: return "TEXT";
    case value_kind::blob: return "BLOB";
    }
    return "?";
}

// Names the column, the value's storage class (SQLite types each value, not the column), the value
// and the C++ type asked for.
[[noreturn]] void not_a(const result::data& d, std::size_t row, std::size_t col, std::string_view field,
                        const char* what) {
    throw std::invalid_argument("respool::sqlite::result: column \"" + d.names[col] + "\" value \"" +
                                std::string(field.substr(0, 64)) + "\" (" +
                                kind_name(d.cells[row * d.names.size() + col].kind) + ") is not " + what);
}

bool parse_int(std::string_view s, std::int64_t& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

bool detail::parse_time(std::string_view s, chr::system_clock::time_point& out) {
    // SQLite's offsets are "+HH:MM"; its own functions keep milliseconds, its text form here microseconds.
    const auto t = respool::detail::parse_iso_time(s, {respool::detail::iso_offset::hh_mm, 6});
    if (!t) return false;
    out = *t;
    return true;
}

std::size_t result::rows() const noexcept {
    return data_ ? data_->rows : 0;
}
std::size_t result::columns() const noexcept {
    return data_ ? data_->names.size() : 0;
}
std::string_view result::column_name(std::size_t col) const {
    if (!data_ || col >= data_->names.size())
        throw std::out_of_range("respool::sqlite::result: no column " + std::to_string(col));
    return data_->names[col];
}
value_kind result::kind(std::size_t row, std::size_t col) const {
    return cell_at(data_.get(), row, col).kind;
}
std::string_view result::text(std::size_t row, std::size_t col) const {
    const auto& c = cell_at(data_.get(), row, col);
    if (c.kind == value_kind::null)
        throw std::logic_error("respool::sqlite::result: column \"" + data_->names[col] +
                               "\" is NULL (read it as std::optional)");
    return std::string_view(data_->bytes).substr(c.offset, c.size);
}
std::uint64_t result::affected_rows() const noexcept {
    return data_ ? data_->affected : 0;
}
std::int64_t result::last_insert_rowid() const noexcept {
    return data_ ? data_->rowid : 0;
}

void result::parse(std::size_t row, std::size_t col, std::int64_t& out) const {
    const auto& c = cell_at(data_.get(), row, col);
    const std::string_view t = text(row, col);  // NULL throws here
    switch (c.kind) {
    case value_kind::integer: out = c.integer; return;
    case value_kind::real:
        if (std::trunc(c.real) == c.real && std::abs(c.real) < 9.2e18) {
            out = static_cast<std::int64_t>(c.real);
            return;
        }
        break;
    case value_kind::text:
        if (parse_int(t, out)) return;
        break;
    default: break;
    }
    not_a(*data_, row, col, t, "an integer (std::int64_t)");
}

template <class Small>
static void narrow(std::int64_t v, Small& out, std::string_view column) {
    if (v < std::numeric_limits<Small>::min() || v > std::numeric_limits<Small>::max())
        throw std::out_of_range("respool::sqlite::result: column \"" + std::string(column) + "\" value " +
                                std::to_string(v) + " does not fit " +
                                respool::detail::db::integer_name<Small>());
    out = static_cast<Small>(v);
}

void result::parse(std::size_t row, std::size_t col, std::int32_t& out) const {
    std::int64_t v;
    parse(row, col, v);
    narrow(v, out, column_name(col));
}
void result::parse(std::size_t row, std::size_t col, std::int16_t& out) const {
    std::int64_t v;
    parse(row, col, v);
    narrow(v, out, column_name(col));
}
void result::parse(std::size_t row, std::size_t col, bool& out) const {
    const auto& c = cell_at(data_.get(), row, col);
    const std::string_view t = text(row, col);
    if (c.kind == value_kind::integer) {
        out = c.integer != 0;
    } else if (c.kind == value_kind::real) {
        out = c.real != 0;
    } else if (t == "1" || t == "true" || t == "TRUE") {
        out = true;
    } else if (t == "0" || t == "false" || t == "FALSE") {
        out = false;
    } else {
        not_a(*data_, row, col, t, "a boolean (bool)");
    }
}
void result::parse(std::size_t row, std::size_t col, double& out) const {
    const auto& c = cell_at(data_.get(), row, col);
    const std::string_view t = text(row, col);
    if (c.kind == value_kind::real) {
        out = c.real;
    } else if (c.kind == value_kind::integer) {
        out = static_cast<double>(c.integer);
    } else {
        auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
        if (ec != std::errc() || p != t.data() + t.size()) not_a(*data_, row, col, t, "a number (double)");
    }
}
void result::parse(std::size_t row, std::size_t col, float& out) const {
    double v;
    parse(row, col, v);
    out = static_cast<float>(v);
}
void result::parse(std::size_t row, std::size_t col, std::string& out) const {
    out = std::string(text(row, col));
}
void result::parse(std::size_t row, std::size_t col, std::vector<std::byte>& out) const {
    const std::string_view t = text(row, col);
    const auto* b = reinterpret_cast<const std::byte*>(t.data());
    out.assign(b, b + t.size());
}
void result::parse(std::size_t row, std::size_t col, chr::system_clock::time_point& out) const {
    const auto& c = cell_at(data_.get(), row, col);
    const std::string_view t = text(row, col);
    if (c.kind == value_kind::integer) {
        out = chr::system_clock::time_point(chr::seconds(c.integer));
        return;
    }
    if (c.kind == value_kind::text && detail::parse_time(t, out)) return;
    not_a(*data_, row, col, t,
          "a time (YYYY-MM-DD HH:MM:SS[.ffffff][Z|+HH:MM] or Unix seconds; "
          "std::chrono::system_clock::time_point)");
}

// A duration is bound as INTEGER microseconds (params), so that is what reads back as one.
void result::parse(std::size_t row, std::size_t col, chr::microseconds& out) const {
    const auto& c = cell_at(data_.get(), row, col);
    const std::string_view t = text(row, col);
    if (c.kind != value_kind::integer)
        not_a(*data_, row, col, t, "an INTEGER count of microseconds (std::chrono::microseconds)");
    out = chr::microseconds(c.integer);
}

}  // namespace respool::sqlite
