// Values against the real server: time points both ways (across session time zones with odd
// offsets, timestamp without time zone, date), large results and large parameters, and a result that
// outlives its connection.
#include "pg_test_support.hpp"

#include <chrono>

using namespace pg_test;
using respool::error_code;
using sys_us = std::chrono::sys_time<std::chrono::microseconds>;

namespace {

class pg_values : public ::testing::Test {
protected:
    void SetUp() override {
        if (conninfo().empty())
            GTEST_SKIP() << "RESPOOL_PG_CONNINFO_FILE not set: run through ctest -L integration";
    }
};

}  // namespace

TEST_F(pg_values, time_points_round_trip_in_any_session_time_zone) {
    run([]() -> asio::awaitable<void> {
        admin a = co_await admin::open();
        pg::connection& c = a.connection();
        // 2026-11-23 17:05:09.123456 UTC, and one before 1970 and 2000 (negative counts).
        const sys_us when = std::chrono::sys_days{std::chrono::year(2026) / 11 / 23} +
                            std::chrono::hours(17) + std::chrono::minutes(5) + std::chrono::seconds(9) +
                            std::chrono::microseconds(123456);
        const sys_us old = std::chrono::sys_days{std::chrono::year(1969) / 7 / 20} + std::chrono::hours(20) +
                           std::chrono::minutes(17) + std::chrono::seconds(40);
        for (const char* zone : {"UTC", "Asia/Kolkata", "America/St_Johns", "Pacific/Chatham"}) {
            SCOPED_TRACE(zone);
            co_await c.async_query(std::string("SET TimeZone = '") + zone + "'", asio::use_awaitable);
            auto r = co_await c.async_query("SELECT $1::timestamptz, $2::timestamptz, $1::timestamptz::text",
                                            pg::params(when, old), asio::use_awaitable);
            EXPECT_EQ(r.get<std::chrono::system_clock::time_point>(0, 0), when) << r.text(0, 2);
            EXPECT_EQ(r.get<std::chrono::system_clock::time_point>(0, 1), old);
        }
        co_await c.async_query("SET TimeZone = 'UTC'", asio::use_awaitable);
        auto r = co_await c.async_query(
            "SELECT '2026-11-23 17:05:09.5'::timestamp, '2026-11-23'::date, NULL::timestamptz, "
            "'infinity'::timestamptz",
            asio::use_awaitable);
        EXPECT_EQ(r.get<std::chrono::system_clock::time_point>(0, 0),
                  std::chrono::sys_days{std::chrono::year(2026) / 11 / 23} + std::chrono::hours(17) +
                      std::chrono::minutes(5) + std::chrono::milliseconds(9500))
            << "a timestamp without time zone is read as UTC";
        EXPECT_EQ(r.get<std::chrono::system_clock::time_point>(0, 1),
                  std::chrono::sys_days{std::chrono::year(2026) / 11 / 23});
        EXPECT_EQ(r.get<std::optional<std::chrono::system_clock::time_point>>(0, 2), std::nullopt);
        EXPECT_THROW((void)r.get<std::chrono::system_clock::time_point>(0, 3), std::invalid_argument)
            << "infinity has no time point";
    });
}

// Old local mean times carry offsets in seconds ("+00:19:32" in Amsterdam before 1937); a time past what
// system_clock holds (about 2262 with nanoseconds) is refused by name instead of overflowing.
TEST_F(pg_values, offsets_in_seconds_are_read_and_times_past_the_clock_are_refused) {
    run([]() -> asio::awaitable<void> {
        admin a = co_await admin::open();
        pg::connection& c = a.connection();
        co_await c.async_query("SET TimeZone = 'Europe/Amsterdam'", asio::use_awaitable);
        auto r = co_await c.async_query(
            "SELECT '1900-01-01 00:00:00+00'::timestamptz, "
            "'1900-01-01 00:00:00+00'::timestamptz::text, "
            "'2300-01-01 00:00:00+00'::timestamptz",
            asio::use_awaitable);
        EXPECT_EQ(r.text(0, 1), "1900-01-01 00:19:32+00:19:32");
        EXPECT_EQ(r.get<std::chrono::system_clock::time_point>(0, 0),
                  std::chrono::sys_days{std::chrono::year(1900) / 1 / 1});
        EXPECT_THROW((void)r.get<std::chrono::system_clock::time_point>(0, 2), std::invalid_argument)
            << r.text(0, 2);
    });
}

TEST_F(pg_values, large_results_and_parameters_and_a_result_that_outlives_its_connection) {
    run([]() -> asio::awaitable<void> {
        pg::result kept;
        {
            admin a = co_await admin::open();
            pg::connection& c = a.connection();
            auto r = co_await c.async_query(
                "SELECT i, repeat('x', 100) || i FROM generate_series(1, 200000) i", asio::use_awaitable);
            EXPECT_EQ(r.rows(), 200000u);
            EXPECT_EQ(r.affected_rows(), 200000u);
            EXPECT_EQ(r.get<std::int32_t>(199999, 0), 200000);
            std::vector<std::byte> blob(4 << 20);
            for (std::size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<std::byte>(i * 131 % 251);
            auto b = co_await c.async_query("SELECT $1::bytea, length($1::bytea)", pg::params(blob),
                                            asio::use_awaitable);
            EXPECT_EQ(b.get<std::int32_t>(0, 1), 4 << 20);
            EXPECT_EQ(b.get<std::vector<std::byte>>(0, 0), blob) << "4 MiB through a parameter and back";
            kept = r;
        }  // the connection is closed
        EXPECT_EQ(kept.text(12345, 1), std::string(100, 'x') + "12346");
        EXPECT_EQ(kept.command_tag(), "SELECT 200000");
    });
}
