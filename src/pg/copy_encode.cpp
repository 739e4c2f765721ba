// COPY's text and binary formats from pg::params' encodings. Binary fields go as params encodes them
// (the binary COPY format of a value is its binary send format); text fields are the text itself, and
// the values params holds in binary (numbers, bool, bytea, timestamptz, interval, arrays) are written
// as PostgreSQL's text input reads them.
#include "copy_encode.hpp"
#include "wire_access.hpp"

#include <array>
#include <bit>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace respool::pg::detail {

namespace {

// PostgreSQL type OIDs (src/include/catalog/pg_type.dat), the ones params binds in binary.
constexpr unsigned oid_bool = 16, oid_bytea = 17, oid_int8 = 20, oid_int2 = 21, oid_int4 = 23,
                   oid_float4 = 700, oid_float8 = 701, oid_timestamptz = 1184, oid_interval = 1186;
constexpr unsigned oid_bool_array = 1000, oid_int2_array = 1005, oid_int4_array = 1007, oid_text_array = 1009,
                   oid_int8_array = 1016, oid_float4_array = 1021, oid_float8_array = 1022;

constexpr std::chrono::sys_days postgres_epoch = std::chrono::year(2000) / 1 / 1;

template <class U>
U read_big_endian(const char* p) {
    U v = 0;
    for (std::size_t i = 0; i < sizeof(U); ++i)
        v = static_cast<U>((v << 8) | static_cast<unsigned char>(p[i]));
    return v;
}

template <class U>
void append_big_endian(U v, std::string& out) {
    for (std::size_t i = sizeof(U); i-- > 0;)
        out.push_back(static_cast<char>(static_cast<unsigned char>(v >> (8 * i))));
}

template <class I>
void append_integer(I v, std::string& out) {
    std::array<char, 24> buf;
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    out.append(buf.data(), r.ptr);
}

template <class F>
void append_floating(F v, std::string& out) {
    if (std::isnan(v)) return out.append("NaN"), void();
    if (std::isinf(v)) return out.append(v < 0 ? "-Infinity" : "Infinity"), void();
    std::array<char, 40> buf;
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v);  // shortest text that reads back
    out.append(buf.data(), r.ptr);
}

void append_two(int v, std::string& out) {
    out.push_back(static_cast<char>('0' + v / 10));
    out.push_back(static_cast<char>('0' + v % 10));
}

// "YYYY-MM-DD HH:MM:SS.ffffff+00" (UTC), from microseconds since 2000-01-01.
void append_timestamptz(std::int64_t us, std::string& out) {
    using namespace std::chrono;
    const sys_time<microseconds> t = postgres_epoch + microseconds(us);
    const sys_days day = floor<days>(t);
    const year_month_day ymd(day);
    const hh_mm_ss<microseconds> tod(t - day);
    const int y = static_cast<int>(ymd.year());
    if (y < 1)
        throw std::invalid_argument("respool::pg COPY: a timestamp before year 1 (BC) has no text here");
    std::array<char, 8> ybuf;
    const auto r = std::to_chars(ybuf.data(), ybuf.data() + ybuf.size(), y);
    for (auto n = r.ptr - ybuf.data(); n < 4; ++n) out.push_back('0');
    out.append(ybuf.data(), r.ptr);
    out.push_back('-');
    append_two(static_cast<int>(static_cast<unsigned>(ymd.month())), out);
    out.push_back('-');
    append_two(static_cast<int>(static_cast<unsigned>(ymd.day())), out);
    out.push_back(' ');
    append_two(static_cast<int>(tod.hours().count()), out);
    out.push_back(':');
    append_two(static_cast<int>(tod.minutes().count()), out);
    out.push_back(':');
    append_two(static_cast<int>(tod.seconds().count()), out);
    out.push_back('.');
    std::array<char, 8> f;
    const auto fr = std::to_chars(f.data(), f.data() + f.size(), tod.subseconds().count());
    for (auto n = fr.ptr - f.data(); n < 6; ++n) out.push_back('0');
    out.append(f.data(), fr.ptr);
    out.append("+00");
}

// One binary-encoded scalar of type `oid` as text (not yet escaped for COPY).
void scalar_text(unsigned oid, std::string_view b, std::string& out) {
    switch (oid) {
    case oid_bool: out.push_back(b[0] ? 't' : 'f'); return;
    case oid_int2:
        append_integer(static_cast<std::int16_t>(read_big_endian<std::uint16_t>(b.data())), out);
        return;
    case oid_int4:
        append_integer(static_cast<std::int32_t>(read_big_endian<std::uint32_t>(b.data())), out);
        return;
    case oid_int8:
        append_integer(static_cast<std::int64_t>(read_big_endian<std::uint64_t>(b.data())), out);
        return;
    case oid_float4:
        append_floating(std::bit_cast<float>(read_big_endian<std::uint32_t>(b.data())), out);
        return;
    case oid_float8:
        append_floating(std::bit_cast<double>(read_big_endian<std::uint64_t>(b.data())), out);
        return;
    case oid_bytea: {
        static constexpr char hex[] = "0123456789abcdef";
        out.append("\\x");
        for (const char ch : b) {
            const auto u = static_cast<unsigned char>(ch);
            out.push_back(hex[u >> 4]);
            out.push_back(hex[u & 15]);
        }
        return;
    }
    case oid_timestamptz:
        append_timestamptz(static_cast<std::int64_t>(read_big_endian<std::uint64_t>(b.data())), out);
        return;
    case oid_interval:  // microseconds; params binds no days or months
        append_integer(static_cast<std::int64_t>(read_big_endian<std::uint64_t>(b.data())), out);
        out.append(" microseconds");
        return;
    default: out.append(b); return;  // text
    }
}

unsigned element_of(unsigned array_oid) {
    switch (array_oid) {
    case oid_bool_array: return oid_bool;
    case oid_int2_array: return oid_int2;
    case oid_int4_array: return oid_int4;
    case oid_int8_array: return oid_int8;
    case oid_float4_array: return oid_float4;
    case oid_float8_array: return oid_float8;
    case oid_text_array: return 0;
    default: return ~0u;
    }
}

// A one-dimensional array in params' binary form ("{1,2,3}", text elements quoted) as its text.
void array_text(unsigned element, std::string_view b, std::string& out) {
    const std::uint32_t dims = read_big_endian<std::uint32_t>(b.data());
    std::size_t at = 12;
    std::uint32_t count = 0;
    if (dims == 1) {
        count = read_big_endian<std::uint32_t>(b.data() + at);
        at += 8;
    }
    out.push_back('{');
    std::string value;
    for (std::uint32_t i = 0; i < count; ++i) {
        const std::uint32_t n = read_big_endian<std::uint32_t>(b.data() + at);
        at += 4;
        const std::string_view e = b.substr(at, n);
        at += n;
        if (i != 0) out.push_back(',');
        value.clear();
        scalar_text(element, e, value);
        if (element == 0) {  // text: quoted, its quotes and backslashes escaped
            out.push_back('"');
            for (const char ch : value) {
                if (ch == '"' || ch == '\\') out.push_back('\\');
                out.push_back(ch);
            }
            out.push_back('"');
        } else {
            out.append(value);
        }
    }
    out.push_back('}');
}

}  // namespace

void copy_header(copy_format f, std::string& out) {
    if (f != copy_format::binary) return;
    out.append("PGCOPY\n\377\r\n\0", 11);
    append_big_endian(std::uint32_t{0}, out);  // flags: no OIDs
    append_big_endian(std::uint32_t{0}, out);  // header extension: none
}

void copy_trailer(copy_format f, std::string& out) {
    if (f == copy_format::binary) append_big_endian(std::uint16_t{0xFFFF}, out);
}

void escape_copy_text(std::string_view s, std::string& out) {
    for (const char ch : s) {
        switch (ch) {
        case '\\': out.append("\\\\"); break;
        case '\t': out.append("\\t"); break;
        case '\n': out.append("\\n"); break;
        case '\r': out.append("\\r"); break;
        default: out.push_back(ch);
        }
    }
}

void encode_copy_row(const params& row, copy_format f, std::string& out) {
    const params_access a(row);
    const std::size_t n = row.size();
    if (f == copy_format::binary) {
        if (n > static_cast<std::size_t>(std::numeric_limits<std::int16_t>::max()))
            throw std::invalid_argument("respool::pg COPY: a row of " + std::to_string(n) +
                                        " fields, above binary COPY's limit of 32767");
        append_big_endian(static_cast<std::uint16_t>(n), out);
        for (std::size_t i = 0; i < n; ++i) {
            if (!a.values[i]) {
                append_big_endian(std::uint32_t{0xFFFFFFFF}, out);
                continue;
            }
            append_big_endian(static_cast<std::uint32_t>(a.lengths()[i]), out);
            out.append(a.values[i], static_cast<std::size_t>(a.lengths()[i]));
        }
        return;
    }
    std::string field;
    for (std::size_t i = 0; i < n; ++i) {
        if (i != 0) out.push_back('\t');
        if (!a.values[i]) {
            out.append("\\N");
            continue;
        }
        const std::string_view v(a.values[i], static_cast<std::size_t>(a.lengths()[i]));
        if (a.formats()[i] == 0) {  // text as it is
            escape_copy_text(v, out);
            continue;
        }
        field.clear();
        const unsigned type = a.types()[i];
        if (const unsigned element = element_of(type); element != ~0u)
            array_text(element, v, field);
        else
            scalar_text(type, v, field);
        escape_copy_text(field, out);
    }
    out.push_back('\n');
}

}  // namespace respool::pg::detail
