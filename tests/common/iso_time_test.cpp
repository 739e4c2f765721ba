// The one reader of ISO time texts that respool::pg and respool::sqlite share: the forms each database
// writes, the offset forms each accepts, precision, and what is not a time.
#include "iso_time.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

namespace {

using namespace std::chrono;
using respool::detail::iso_offset;
using respool::detail::parse_iso_time;

constexpr respool::detail::iso_time_syntax postgres{iso_offset::hh_mm_ss, 9};
constexpr respool::detail::iso_time_syntax sqlite{iso_offset::hh_mm, 6};

system_clock::time_point at(year_month_day ymd, nanoseconds since_midnight = {}) {
    return system_clock::time_point(sys_days(ymd).time_since_epoch() + since_midnight);
}

TEST(iso_time, dates_and_times_as_postgresql_writes_them) {
    EXPECT_EQ(parse_iso_time("2026-11-23", postgres), at(2026y / 11 / 23));
    EXPECT_EQ(parse_iso_time("2026-11-23 17:05:09.5", postgres), at(2026y / 11 / 23, 17h + 5min + 9500ms));
    EXPECT_EQ(parse_iso_time("2026-11-23 17:05:09.123456789+00", postgres),
              at(2026y / 11 / 23, 17h + 5min + 9s + 123456789ns));
    EXPECT_EQ(parse_iso_time("2026-11-23 22:35:09+05:30", postgres), at(2026y / 11 / 23, 17h + 5min + 9s));
    EXPECT_EQ(parse_iso_time("1900-01-01 00:19:32+00:19:32", postgres), at(1900y / 1 / 1));
    EXPECT_EQ(parse_iso_time("1969-07-20 17:17:40-03", postgres), at(1969y / 7 / 20, 20h + 17min + 40s));
}

TEST(iso_time, dates_and_times_as_sqlite_writes_them) {
    EXPECT_EQ(parse_iso_time("2024-02-29 23:59:58.123456", sqlite),
              at(2024y / 2 / 29, 23h + 59min + 58s + 123456us));
    EXPECT_EQ(parse_iso_time("2024-02-29T23:59Z", sqlite), at(2024y / 2 / 29, 23h + 59min));
    EXPECT_EQ(parse_iso_time("2024-03-01 01:59:58+02:00", sqlite), at(2024y / 2 / 29, 23h + 59min + 58s));
    EXPECT_EQ(parse_iso_time("2024-02-29 23:59:58.", sqlite), at(2024y / 2 / 29, 23h + 59min + 58s));
    EXPECT_EQ(parse_iso_time("2024-02-29 23:59:58.1234569", sqlite),
              at(2024y / 2 / 29, 23h + 59min + 58s + 123456us))
        << "digits past the precision asked for are ignored";
    EXPECT_EQ(parse_iso_time("2016-12-31 23:59:60", sqlite), at(2017y / 1 / 1)) << "a leap second";
}

TEST(iso_time, each_database_has_its_offset_form) {
    for (const char* t : {"2024-01-01 10:00+02", "2024-01-01 10:00+02:00:00"}) {
        EXPECT_TRUE(parse_iso_time(t, postgres)) << t;
        EXPECT_FALSE(parse_iso_time(t, sqlite)) << t;
    }
    EXPECT_TRUE(parse_iso_time("2024-01-01 10:00+02:00", sqlite));
    EXPECT_TRUE(parse_iso_time("2024-01-01 10:00+02:00", postgres));
}

TEST(iso_time, what_is_not_a_time) {
    for (const char* t : {"",
                          "2024",
                          "2024-02",
                          "2024-02-2",
                          "2024-13-01",
                          "2023-02-29",
                          "2024-01-01 24:00:00",
                          "2024-01-01 10:60",
                          "2024-01-01 10:00:61",
                          "2024-01-01 -1:00",
                          "2024-01-01 10:-5",
                          "+024-01-01",
                          " 2024-01-01",
                          "2024-01-01 ",
                          "2024-01-01 10",
                          "2024-01-01 10:00:",
                          "2024-01-01 10:00+",
                          "2024-01-01 10:00+1",
                          "2024-01-01 10:00+01:",
                          "2024-01-01 10:00+-1:00",
                          "2024-01-01 10:00Zx",
                          "infinity",
                          "0044-03-15 BC",
                          "2024/01/01"}) {
        EXPECT_FALSE(parse_iso_time(t, postgres)) << '"' << t << '"';
        EXPECT_FALSE(parse_iso_time(t, sqlite)) << '"' << t << '"';
    }
}

TEST(iso_time, times_the_clock_cannot_hold_are_refused) {
    for (const char* t :
         {"0001-01-01", "1600-06-01 12:00:00", "2300-01-01T00:00:00Z", "9999-12-31 23:59:59.999999"})
        EXPECT_FALSE(parse_iso_time(t, postgres)) << t;
    EXPECT_TRUE(parse_iso_time("2262-01-01 00:00:00", postgres));
    EXPECT_TRUE(parse_iso_time("1678-12-31 00:00:00", postgres));
    // The last nanosecond the clock holds, and the one after it.
    EXPECT_EQ(parse_iso_time("2262-04-11 23:47:16.854775807", postgres), system_clock::time_point::max());
    EXPECT_FALSE(parse_iso_time("2262-04-11 23:47:16.854775808", postgres));
}

// Every prefix of a full text, each on a heap buffer of exactly its length, so that AddressSanitizer
// sees any read past the end.
TEST(iso_time, no_byte_past_the_text_is_read) {
    const std::string full = "2024-02-29 23:59:58.123456789+02:00:00";
    for (std::size_t n = 0; n <= full.size(); ++n) {
        auto buffer = std::make_unique<char[]>(n == 0 ? 1 : n);
        std::memcpy(buffer.get(), full.data(), n);
        (void)parse_iso_time(std::string_view(buffer.get(), n), postgres);
        (void)parse_iso_time(std::string_view(buffer.get(), n), sqlite);
    }
}

}  // namespace
