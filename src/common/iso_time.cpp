#include "iso_time.hpp"

#include <cstdint>

namespace respool::detail {

namespace {

namespace chr = std::chrono;

// A cursor over the text that reads only inside it.
struct reader {
    std::string_view s;
    std::size_t at = 0;

    bool done() const noexcept { return at == s.size(); }
    bool next_is(char c) const noexcept { return at < s.size() && s[at] == c; }
    bool digit_next() const noexcept { return at < s.size() && s[at] >= '0' && s[at] <= '9'; }
    bool skip(char c) noexcept {
        if (!next_is(c)) return false;
        ++at;
        return true;
    }
    // Exactly n digits (no sign, no blank).
    bool number(std::size_t n, int& v) noexcept {
        v = 0;
        for (std::size_t k = 0; k < n; ++k, ++at) {
            if (!digit_next()) return false;
            v = v * 10 + (s[at] - '0');
        }
        return true;
    }
};

// The offset east of UTC after its sign.
bool read_offset(reader& r, iso_offset form, chr::seconds& offset) {
    int h = 0, m = 0, sec = 0;
    if (!r.number(2, h)) return false;
    if (form == iso_offset::hh_mm) {
        if (!r.skip(':') || !r.number(2, m)) return false;
    } else if (r.skip(':')) {
        if (!r.number(2, m)) return false;
        if (r.skip(':') && !r.number(2, sec)) return false;
    }
    offset = chr::hours(h) + chr::minutes(m) + chr::seconds(sec);
    return true;
}

}  // namespace

std::optional<chr::system_clock::time_point> parse_iso_time(std::string_view s, iso_time_syntax syntax) {
    reader r{s};
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
    if (!r.number(4, y) || !r.skip('-') || !r.number(2, mo) || !r.skip('-') || !r.number(2, d))
        return std::nullopt;
    std::int64_t fraction = 0;  // in units of 10^-fraction_digits seconds
    if (r.skip(' ') || r.skip('T')) {
        if (!r.number(2, h) || !r.skip(':') || !r.number(2, mi)) return std::nullopt;
        if (r.skip(':')) {
            if (!r.number(2, sec)) return std::nullopt;
            if (r.skip('.')) {
                for (int k = 0; k < syntax.fraction_digits; ++k)
                    fraction = fraction * 10 + (r.digit_next() ? s[r.at++] - '0' : 0);
                while (r.digit_next()) ++r.at;  // beyond the precision asked for
            }
        }
    }
    chr::seconds offset{0};
    if (!r.skip('Z') && (r.next_is('+') || r.next_is('-'))) {
        const bool west = s[r.at++] == '-';
        if (!read_offset(r, syntax.offset, offset)) return std::nullopt;
        if (west) offset = -offset;
    }
    const chr::year_month_day ymd{chr::year(y), chr::month(static_cast<unsigned>(mo)),
                                  chr::day(static_cast<unsigned>(d))};
    if (!r.done() || !ymd.ok() || h > 23 || mi > 59 || sec > 60) return std::nullopt;  // 60: a leap second

    // In whole seconds first (no overflow for any four-digit year), then in system_clock's unit with
    // overflow checks: a time system_clock cannot hold is not one.
    const chr::sys_seconds whole =
        chr::sys_days(ymd) + chr::hours(h) + chr::minutes(mi) + chr::seconds(sec) - offset;
    using duration = chr::system_clock::duration;
    static_assert(duration::period::num == 1, "system_clock counts fractions of a second");
    std::int64_t scale = 1;
    for (int k = 0; k < syntax.fraction_digits; ++k) scale *= 10;
    const std::int64_t per_second = duration::period::den / duration::period::num;
    std::int64_t ticks = 0;
    if (__builtin_mul_overflow(static_cast<std::int64_t>(whole.time_since_epoch().count()), per_second,
                               &ticks) ||
        __builtin_add_overflow(ticks, fraction * per_second / scale, &ticks))
        return std::nullopt;
    return chr::system_clock::time_point(duration(ticks));
}

}  // namespace respool::detail
