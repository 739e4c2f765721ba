// C++ values to and from PostgreSQL: bound parameters (binary for numbers and bool, text for strings,
// bytea for byte spans) and typed reads of result fields (from the server's text format).
#include <respool/pg/connection.hpp>

#include <libpq-fe.h>

#include "../common/hex_digit.hpp"
#include "../common/iso_time.hpp"
#include "wire_access.hpp"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace respool::pg {

// ---- parameters ------------------------------------------------------------------------------

namespace {

// PostgreSQL type OIDs (src/include/catalog/pg_type.dat): stable since forever.
constexpr unsigned oid_bool = 16, oid_bytea = 17, oid_int8 = 20, oid_int2 = 21, oid_int4 = 23, oid_text = 25,
                   oid_float4 = 700, oid_float8 = 701, oid_timestamptz = 1184, oid_interval = 1186;
// Their one-dimensional arrays.
constexpr unsigned oid_bool_array = 1000, oid_int2_array = 1005, oid_int4_array = 1007, oid_text_array = 1009,
                   oid_int8_array = 1016, oid_float4_array = 1021, oid_float8_array = 1022;

// A Bind message counts its parameters in an unsigned 16-bit integer.
constexpr std::size_t max_params = 65535;

// PostgreSQL counts time from 2000-01-01 00:00:00 UTC.
constexpr std::chrono::sys_days postgres_epoch = std::chrono::year(2000) / 1 / 1;

// Network byte order, as the binary format wants.
template <class U>
std::string big_endian(U v) {
    std::string s(sizeof(U), '\0');
    for (std::size_t i = 0; i < sizeof(U); ++i)
        s[sizeof(U) - 1 - i] = static_cast<char>(static_cast<unsigned char>(v >> (8 * i)));
    return s;
}

}  // namespace

params::params() noexcept = default;
params::params(const params& o) : v_(o.v_ ? std::make_unique<values>(*o.v_) : nullptr) {}
params::params(params&& o) noexcept = default;
params& params::operator=(const params& o) {
    if (this != &o) *this = params(o);
    return *this;
}
params& params::operator=(params&& o) noexcept = default;
params::~params() = default;
std::size_t params::size() const noexcept {
    return v_ ? v_->types.size() : 0;
}
void params::clear() noexcept {
    if (v_) {
        v_->types.clear();
        v_->formats.clear();
        v_->lengths.clear();
        v_->offsets.clear();
        v_->data.clear();
    }
}

params& params::push(unsigned type, std::string_view bytes, bool binary, bool null) {
    // What the protocol cannot carry is refused here, before any statement is sent: a Bind message
    // counts its parameters in 16 bits and each value's length in a signed 32-bit integer.
    if (size() >= max_params)
        throw std::invalid_argument("respool::pg::params: more than " + std::to_string(max_params) +
                                    " parameters (the protocol's limit)");
    if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
        throw std::invalid_argument("respool::pg::params: parameter $" + std::to_string(size() + 1) + " is " +
                                    std::to_string(bytes.size()) +
                                    " bytes, above the protocol's limit of 2147483647");
    if (!v_) v_ = std::make_unique<values>();
    v_->types.push_back(type);
    v_->formats.push_back(binary ? 1 : 0);
    v_->lengths.push_back(static_cast<int>(bytes.size()));
    v_->offsets.push_back(null ? std::string::npos : v_->data.size());
    v_->data.append(bytes);
    v_->data.push_back('\0');  // libpq reads a text value up to its terminator (lengths are for binary ones)
    return *this;
}

params& params::add(std::nullopt_t) {
    return push(0, {}, false, true);
}
params& params::add(bool v) {
    return push(oid_bool, v ? std::string_view("\1", 1) : std::string_view("\0", 1), true);
}
params& params::add(std::int16_t v) {
    return push(oid_int2, big_endian(static_cast<std::uint16_t>(v)), true);
}
params& params::add(std::int32_t v) {
    return push(oid_int4, big_endian(static_cast<std::uint32_t>(v)), true);
}
params& params::add(std::int64_t v) {
    return push(oid_int8, big_endian(static_cast<std::uint64_t>(v)), true);
}
params& params::add(float v) {
    return push(oid_float4, big_endian(std::bit_cast<std::uint32_t>(v)), true);
}
params& params::add(double v) {
    return push(oid_float8, big_endian(std::bit_cast<std::uint64_t>(v)), true);
}
params& params::add(std::string_view v) {
    // Text goes as a C string: libpq would cut it at a NUL and the server would store the rest of the
    // value silently lost. Bytes are bytea (std::span<const std::byte>).
    if (const std::size_t at = v.find('\0'); at != std::string_view::npos)
        throw std::invalid_argument("respool::pg::params: text parameter $" + std::to_string(size() + 1) +
                                    " holds a NUL byte (at byte " + std::to_string(at) +
                                    "), which PostgreSQL text cannot store; send bytes as "
                                    "std::span<const std::byte> (bytea)");
    return push(0, v, false);  // text; the server infers the type from the statement
}
params& params::add(std::span<const std::byte> v) {
    return push(oid_bytea, std::string_view(reinterpret_cast<const char*>(v.data()), v.size()), true);
}

params& params::add(std::chrono::sys_time<std::chrono::microseconds> t) {
    const auto since = (t - std::chrono::sys_time<std::chrono::microseconds>(postgres_epoch)).count();
    return push(oid_timestamptz, big_endian(static_cast<std::uint64_t>(since)), true);
}

void params::refuse_integer(std::uint64_t v) const {
    throw std::out_of_range(
        "respool::pg::params: parameter $" + std::to_string(size() + 1) + " (" + std::to_string(v) +
        ") does not fit PostgreSQL's largest integer, int8 (at most 9223372036854775807)");
}

void params::refuse_duration(long long count, std::intmax_t num, std::intmax_t den, bool fraction) const {
    const std::string spelled =
        std::to_string(count) + " x " + std::to_string(num) + "/" + std::to_string(den) + " s";
    if (fraction)
        throw std::invalid_argument("respool::pg::params: parameter $" + std::to_string(size() + 1) +
                                    " is a duration of " + spelled +
                                    " with a fraction of a microsecond, which an interval cannot hold; round "
                                    "it (std::chrono::round<std::chrono::microseconds>)");
    throw std::out_of_range("respool::pg::params: parameter $" + std::to_string(size() + 1) +
                            " is a duration of " + spelled +
                            ", beyond what an interval holds in microseconds (64-bit)");
}

// interval in binary: microseconds (int8), days (int4), months (int4); a duration is all microseconds, so
// the server shows it as hours ("36:00:00", not "1 day 12:00:00") and no day-length or month rule applies.
params& params::add_interval(std::int64_t microseconds) {
    std::string bytes = big_endian(static_cast<std::uint64_t>(microseconds));
    bytes += big_endian(std::uint32_t{0});
    bytes += big_endian(std::uint32_t{0});
    return push(oid_interval, bytes, true);
}

// A one-dimensional array in binary: dimensions, a has-NULLs flag, the element type, then (when not
// empty) the length and lower bound (1) of the dimension, then each element as its length and bytes.
params& params::add_array(unsigned element_type, std::size_t count, std::string_view elements) {
    std::string bytes = big_endian(std::uint32_t{count == 0 ? 0u : 1u});
    bytes += big_endian(std::uint32_t{0});
    bytes += big_endian(std::uint32_t{element_type});
    if (count != 0) {
        if (count > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
            throw std::invalid_argument("respool::pg::params: parameter $" + std::to_string(size() + 1) +
                                        " is an array of " + std::to_string(count) +
                                        " elements, above the protocol's limit of 2147483647");
        bytes += big_endian(static_cast<std::uint32_t>(count));
        bytes += big_endian(std::uint32_t{1});
    }
    bytes += elements;
    const auto array_type = [&]() -> unsigned {
        switch (element_type) {
        case oid_bool: return oid_bool_array;
        case oid_int2: return oid_int2_array;
        case oid_int4: return oid_int4_array;
        case oid_int8: return oid_int8_array;
        case oid_float4: return oid_float4_array;
        case oid_float8: return oid_float8_array;
        default: return oid_text_array;
        }
    }();
    return push(array_type, bytes, true);
}

namespace {

// The elements of a numeric array: each as a length and its big-endian bytes.
template <class T, class Encode>
std::string elements(std::span<const T> v, Encode encode) {
    std::string out;
    out.reserve(v.size() * (4 + sizeof(T)));
    for (const T& e : v) {
        const std::string b = encode(e);
        out += big_endian(static_cast<std::uint32_t>(b.size()));
        out += b;
    }
    return out;
}

template <class S>
std::string text_elements(std::span<const S> v, std::size_t position) {
    std::string out;
    for (std::size_t i = 0; i < v.size(); ++i) {
        const std::string_view t = v[i];
        if (const std::size_t at = t.find('\0'); at != std::string_view::npos)
            throw std::invalid_argument("respool::pg::params: array parameter $" + std::to_string(position) +
                                        " element " + std::to_string(i) + " holds a NUL byte (at byte " +
                                        std::to_string(at) + "), which PostgreSQL text cannot store");
        if (t.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
            throw std::invalid_argument("respool::pg::params: array parameter $" + std::to_string(position) +
                                        " element " + std::to_string(i) + " is above 2 GiB");
        out += big_endian(static_cast<std::uint32_t>(t.size()));
        out += t;
    }
    return out;
}

}  // namespace

params& params::add(std::span<const bool> v) {
    return add_array(oid_bool, v.size(), elements(v, [](bool b) { return std::string(1, b ? '\1' : '\0'); }));
}
params& params::add(std::span<const std::int16_t> v) {
    return add_array(oid_int2, v.size(),
                     elements(v, [](std::int16_t i) { return big_endian(static_cast<std::uint16_t>(i)); }));
}
params& params::add(std::span<const std::int32_t> v) {
    return add_array(oid_int4, v.size(),
                     elements(v, [](std::int32_t i) { return big_endian(static_cast<std::uint32_t>(i)); }));
}
params& params::add(std::span<const std::int64_t> v) {
    return add_array(oid_int8, v.size(),
                     elements(v, [](std::int64_t i) { return big_endian(static_cast<std::uint64_t>(i)); }));
}
params& params::add(std::span<const float> v) {
    return add_array(oid_float4, v.size(),
                     elements(v, [](float f) { return big_endian(std::bit_cast<std::uint32_t>(f)); }));
}
params& params::add(std::span<const double> v) {
    return add_array(oid_float8, v.size(),
                     elements(v, [](double f) { return big_endian(std::bit_cast<std::uint64_t>(f)); }));
}
params& params::add(std::span<const std::string> v) {
    return add_array(oid_text, v.size(), text_elements(v, size() + 1));
}
params& params::add(std::span<const std::string_view> v) {
    return add_array(oid_text, v.size(), text_elements(v, size() + 1));
}

// ---- results ---------------------------------------------------------------------------------

std::string_view result::column_name(std::size_t col) const {
    if (col >= columns_) throw std::out_of_range("respool::pg::result: no column " + std::to_string(col));
    return PQfname(res_.get(), static_cast<int>(col));
}

bool result::is_null(std::size_t row, std::size_t col) const {
    if (row >= rows_ || col >= columns_) throw std::out_of_range("respool::pg::result: no such cell");
    return PQgetisnull(res_.get(), static_cast<int>(row), static_cast<int>(col)) != 0;
}

std::string_view result::text(std::size_t row, std::size_t col) const {
    if (is_null(row, col))
        throw std::logic_error("respool::pg::result: column \"" + std::string(column_name(col)) +
                               "\" is NULL (read it as std::optional)");
    const int r = static_cast<int>(row), c = static_cast<int>(col);
    return {PQgetvalue(res_.get(), r, c), static_cast<std::size_t>(PQgetlength(res_.get(), r, c))};
}

std::string_view result::command_tag() const noexcept {
    return res_ ? PQcmdStatus(const_cast<PGresult*>(res_.get())) : "";
}

namespace {

// The name of a column's type for an error message: the built-in types by name, others by OID.
std::string type_name(unsigned oid) {
    switch (oid) {
    case oid_bool: return "boolean";
    case oid_bytea: return "bytea";
    case 18: return "char";
    case 19: return "name";
    case oid_int8: return "bigint";
    case oid_int2: return "smallint";
    case oid_int4: return "integer";
    case oid_text: return "text";
    case 26: return "oid";
    case 114: return "json";
    case 142: return "xml";
    case oid_float4: return "real";
    case oid_float8: return "double precision";
    case 790: return "money";
    case 1042: return "character";
    case 1043: return "character varying";
    case 1082: return "date";
    case 1083: return "time";
    case 1114: return "timestamp";
    case oid_timestamptz: return "timestamptz";
    case oid_interval: return "interval";
    case 1266: return "timetz";
    case 1700: return "numeric";
    case 2950: return "uuid";
    case 3802: return "jsonb";
    case oid_bool_array: return "boolean[]";
    case oid_int2_array: return "smallint[]";
    case oid_int4_array: return "integer[]";
    case oid_text_array: return "text[]";
    case oid_int8_array: return "bigint[]";
    case oid_float4_array: return "real[]";
    case oid_float8_array: return "double precision[]";
    default: return "type OID " + std::to_string(oid);
    }
}

[[noreturn]] void not_a(const PGresult* res, std::size_t col, std::string_view text, const char* what) {
    throw std::invalid_argument("respool::pg::result: column \"" +
                                std::string(PQfname(res, static_cast<int>(col))) + "\" (" +
                                type_name(PQftype(res, static_cast<int>(col))) + ") holds \"" +
                                std::string(text.substr(0, 64)) + "\", not " + what);
}

template <class I>
void parse_integer(std::string_view t, const PGresult* res, std::size_t col, I& out, const char* what) {
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
    if (ec != std::errc() || end != t.data() + t.size()) not_a(res, col, t, what);
}

template <class F>
void parse_floating(std::string_view t, const PGresult* res, std::size_t col, F& out, const char* what) {
    if (t == "NaN") {
        out = std::numeric_limits<F>::quiet_NaN();
        return;
    }
    if (t == "Infinity" || t == "-Infinity") {
        out = t[0] == '-' ? -std::numeric_limits<F>::infinity() : std::numeric_limits<F>::infinity();
        return;
    }
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
    if (ec != std::errc() || end != t.data() + t.size()) not_a(res, col, t, what);
}

}  // namespace

void result::parse(std::size_t row, std::size_t col, bool& out) const {
    const std::string_view t = text(row, col);
    if (t == "t")
        out = true;
    else if (t == "f")
        out = false;
    else
        not_a(res_.get(), col, t, "a bool (t or f; bool)");
}
void result::parse(std::size_t row, std::size_t col, std::int16_t& out) const {
    parse_integer(text(row, col), res_.get(), col, out, "a 16-bit integer (std::int16_t)");
}
void result::parse(std::size_t row, std::size_t col, std::int32_t& out) const {
    parse_integer(text(row, col), res_.get(), col, out, "a 32-bit integer (std::int32_t)");
}
void result::parse(std::size_t row, std::size_t col, std::int64_t& out) const {
    parse_integer(text(row, col), res_.get(), col, out, "a 64-bit integer (std::int64_t)");
}
void result::parse(std::size_t row, std::size_t col, float& out) const {
    parse_floating(text(row, col), res_.get(), col, out, "a float (float)");
}
void result::parse(std::size_t row, std::size_t col, double& out) const {
    parse_floating(text(row, col), res_.get(), col, out, "a double (double)");
}
void result::parse(std::size_t row, std::size_t col, std::string& out) const {
    out.assign(text(row, col));
}
// bytea in the text format: "\x" and two hex digits per byte (bytea_output = hex, the default since 9.0).
void result::parse(std::size_t row, std::size_t col, std::vector<std::byte>& out) const {
    const std::string_view t = text(row, col);
    if (t.size() < 2 || t[0] != '\\' || t[1] != 'x' || t.size() % 2 != 0)
        not_a(res_.get(), col, t, "bytea in hex (std::vector<std::byte>)");
    auto nibble = [&](char c) -> unsigned {
        const int v = respool::detail::hex_digit(c);
        if (v < 0) not_a(res_.get(), col, t, "bytea in hex (std::vector<std::byte>)");
        return static_cast<unsigned>(v);
    };
    out.clear();
    out.reserve((t.size() - 2) / 2);
    for (std::size_t i = 2; i < t.size(); i += 2)
        out.push_back(static_cast<std::byte>(nibble(t[i]) << 4 | nibble(t[i + 1])));
}

// timestamptz, timestamp and date in the ISO DateStyle (the server's default): "YYYY-MM-DD", then
// optionally " HH:MM:SS", a fraction of up to 6 digits and an offset "+HH", "+HH:MM" or "+HH:MM:SS"
// (a timestamp without one is read as UTC). BC dates, +-infinity and times system_clock cannot hold
// (after about 2262) have no time_point: rejected. The reader is the one respool::sqlite uses too.
void result::parse(std::size_t row, std::size_t col, std::chrono::system_clock::time_point& out) const {
    const std::string_view t = text(row, col);
    const auto tp = respool::detail::parse_iso_time(t, {respool::detail::iso_offset::hh_mm_ss, 9});
    if (!tp)
        not_a(res_.get(), col, t,
              "an ISO timestamp (YYYY-MM-DD[ HH:MM:SS[.ffffff][+HH[:MM]]]; "
              "std::chrono::system_clock::time_point)");
    out = *tp;
}

namespace {

// interval in the postgres IntervalStyle (the server's default): "[N day[s]] [-]H:MM:SS[.ffffff]", each
// part optional ("3 days", "36:00:01.5", "-00:00:00.000001", "1 day -02:00:00"). Years and months have
// no fixed length: refused, as are the other IntervalStyles. A day counts 24 hours, as
// extract(epoch from ...) counts it.
bool parse_interval(std::string_view t, std::int64_t& out) {
    constexpr std::int64_t us_per_second = 1'000'000, us_per_day = 86'400 * us_per_second;
    std::int64_t total = 0;
    bool any = false;
    auto add = [&](std::int64_t part) { return !__builtin_add_overflow(total, part, &total); };
    while (!t.empty()) {
        if (t.front() == ' ') {
            t.remove_prefix(1);
            continue;
        }
        const std::size_t end = t.find(' ');
        std::string_view token = t.substr(0, end);
        t = end == std::string_view::npos ? std::string_view() : t.substr(end + 1);
        if (token.find(':') != std::string_view::npos) {  // [-+]H:MM:SS[.ffffff]
            bool negative = false;
            if (token.front() == '-' || token.front() == '+') {
                negative = token.front() == '-';
                token.remove_prefix(1);
            }
            std::int64_t h = 0, m = 0, sec = 0, frac = 0;
            const char* p = token.data();
            const char* const e = token.data() + token.size();
            auto number = [&](std::int64_t& v, std::size_t min_digits, std::size_t max_digits) {
                const char* start = p;
                v = 0;
                while (p != e && *p >= '0' && *p <= '9' && static_cast<std::size_t>(p - start) < max_digits) {
                    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *p - '0', &v))
                        return false;
                    ++p;
                }
                return static_cast<std::size_t>(p - start) >= min_digits;
            };
            if (!number(h, 1, 19) || p == e || *p++ != ':' || !number(m, 2, 2) || p == e || *p++ != ':' ||
                !number(sec, 2, 2) || m > 59 || sec > 59)
                return false;
            if (p != e) {
                if (*p++ != '.') return false;
                const char* start = p;
                if (!number(frac, 1, 6)) return false;
                for (auto digits = p - start; digits < 6; ++digits) frac *= 10;
            }
            if (p != e) return false;
            std::int64_t us = 0;
            if (__builtin_mul_overflow(h, 3600 * us_per_second, &us) ||
                __builtin_add_overflow(us, (m * 60 + sec) * us_per_second + frac, &us))
                return false;
            if (!add(negative ? -us : us)) return false;
            any = true;
            continue;
        }
        // "N day[s]": a number, then its unit as the next token.
        std::int64_t n = 0;
        const auto [q, ec] = std::from_chars(token.data(), token.data() + token.size(), n);
        if (ec != std::errc() || q != token.data() + token.size()) return false;
        const std::size_t unit_end = t.find(' ');
        const std::string_view unit = t.substr(0, unit_end);
        t = unit_end == std::string_view::npos ? std::string_view() : t.substr(unit_end + 1);
        if (unit != "day" && unit != "days") return false;  // years, months, other styles
        std::int64_t us = 0;
        if (__builtin_mul_overflow(n, us_per_day, &us) || !add(us)) return false;
        any = true;
    }
    if (!any) return false;
    out = total;
    return true;
}

}  // namespace

void result::parse(std::size_t row, std::size_t col, std::chrono::microseconds& out) const {
    const std::string_view t = text(row, col);
    std::int64_t us = 0;
    if (!parse_interval(t, us))
        not_a(res_.get(), col, t,
              "an interval of days and time ([N days] HH:MM:SS[.ffffff]; years and months have no fixed "
              "length; "
              "std::chrono::microseconds)");
    out = std::chrono::microseconds(us);
}

}  // namespace respool::pg
