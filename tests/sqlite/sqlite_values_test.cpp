// sqlite::params and sqlite::result through a real database: every bound type comes back as itself,
// NULLs (bound, read, as optional), column names, affected rows, last insert rowid, time points in
// the documented text form (and SQLite's own variants), and the errors of a wrong read.
#include "sqlite_test_support.hpp"
#include "time_text.hpp"

#include <boost/asio/as_tuple.hpp>

#include <cstring>
#include <limits>
#include <memory>

using namespace sqlite_test;
using respool::error_code;

namespace {

class sqlite_values : public ::testing::Test {
protected:
    temp_dir dir;
    asio::io_context io;
    sqlite::pool db{io.get_executor(), config(dir.file("values.db"))};

    sqlite::result query(std::string sql, sqlite::params p = sqlite::params()) {
        return run(io, [&]() -> asio::awaitable<sqlite::result> {
            co_return co_await db.async_query(std::move(sql), std::move(p), asio::use_awaitable);
        }());
    }
};

TEST_F(sqlite_values, every_type_round_trips) {
    const std::vector<std::byte> blob{std::byte{0}, std::byte{0xff}, std::byte{0x10}, std::byte{0}};
    auto r = query("SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?",
                   sqlite::params(std::numeric_limits<std::int64_t>::min(),
                                  std::numeric_limits<std::int64_t>::max(), std::int32_t{-7}, 2.5, true,
                                  false, "héllo", std::string_view(), blob, std::vector<std::byte>{}));
    ASSERT_EQ(r.rows(), 1u);
    EXPECT_EQ(r.get<std::int64_t>(0, 0), std::numeric_limits<std::int64_t>::min());
    EXPECT_EQ(r.get<std::int64_t>(0, 1), std::numeric_limits<std::int64_t>::max());
    EXPECT_EQ(r.get<std::int32_t>(0, 2), -7);
    EXPECT_EQ(r.get<std::int16_t>(0, 2), -7);
    EXPECT_DOUBLE_EQ(r.get<double>(0, 3), 2.5);
    EXPECT_FLOAT_EQ(r.get<float>(0, 3), 2.5f);
    EXPECT_TRUE(r.get<bool>(0, 4));
    EXPECT_FALSE(r.get<bool>(0, 5));
    EXPECT_EQ(r.get<std::string>(0, 6), "héllo");
    EXPECT_EQ(r.kind(0, 7), sqlite::value_kind::text);  // an empty text is a text, not NULL
    EXPECT_EQ(r.get<std::string>(0, 7), "");
    EXPECT_EQ(r.kind(0, 8), sqlite::value_kind::blob);
    EXPECT_EQ(r.get<std::vector<std::byte>>(0, 8), blob);
    EXPECT_EQ(r.kind(0, 9), sqlite::value_kind::blob);  // an empty blob is a blob, not NULL
    EXPECT_TRUE(r.get<std::vector<std::byte>>(0, 9).empty());
    EXPECT_EQ(r.kind(0, 0), sqlite::value_kind::integer);
    EXPECT_EQ(r.kind(0, 3), sqlite::value_kind::real);
    EXPECT_EQ(r.text(0, 2), "-7");  // numbers as SQLite writes them
}

TEST_F(sqlite_values, nulls_bound_and_read) {
    std::optional<std::int64_t> none;
    auto r =
        query("SELECT ?, ?, ? AS named", sqlite::params(std::nullopt, none, std::optional<std::string>("x")));
    EXPECT_TRUE(r.is_null(0, 0));
    EXPECT_TRUE(r.is_null(0, 1));
    EXPECT_EQ(r.get<std::optional<std::int64_t>>(0, 0), std::nullopt);
    EXPECT_EQ(r.get<std::optional<std::string>>(0, 2), "x");
    EXPECT_EQ(r.column_name(2), "named");
    EXPECT_THROW((void)r.get<std::int64_t>(0, 0), std::logic_error);
    EXPECT_THROW((void)r.text(0, 1), std::logic_error);
    EXPECT_THROW((void)r.text(1, 0), std::out_of_range);
    EXPECT_THROW((void)r.column_name(3), std::out_of_range);
}

TEST_F(sqlite_values, wrong_reads_throw_naming_the_column) {
    auto r = query("SELECT 'abc' AS word, 70000 AS big");
    try {
        (void)r.get<std::int64_t>(0, 0);
        FAIL() << "no throw";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("word"), std::string::npos) << e.what();
    }
    EXPECT_THROW((void)r.get<std::int16_t>(0, 1), std::out_of_range);
    EXPECT_EQ(r.get<std::int32_t>(0, 1), 70000);
}

TEST_F(sqlite_values, time_points_as_text_in_utc) {
    using namespace std::chrono;
    const sys_time<microseconds> t =
        sys_days(year(2024) / 2 / 29) + hours(23) + minutes(59) + seconds(58) + microseconds(123456);
    auto r = query(
        "SELECT ?1, typeof(?1), julianday(?1) = julianday('2024-02-29 23:59:58.123456'), "
        "'2024-02-29T23:59:58Z', '2024-03-01 01:59:58+02:00', 1700000000, datetime(?1) < ?1",
        sqlite::params(t));
    EXPECT_EQ(r.text(0, 0), "2024-02-29 23:59:58.123456");
    EXPECT_EQ(r.text(0, 1), "text");
    EXPECT_EQ(r.get<std::int64_t>(0, 2), 1);  // SQLite's date functions read the form
    EXPECT_EQ(r.get<system_clock::time_point>(0, 0), t);
    EXPECT_EQ(r.get<system_clock::time_point>(0, 3),
              sys_days(year(2024) / 2 / 29) + hours(23) + minutes(59) + seconds(58));
    EXPECT_EQ(r.get<system_clock::time_point>(0, 4),
              sys_days(year(2024) / 2 / 29) + hours(23) + minutes(59) + seconds(58));
    EXPECT_EQ(r.get<system_clock::time_point>(0, 5), system_clock::time_point(seconds(1700000000)));
    EXPECT_EQ(r.get<std::int64_t>(0, 6), 1);  // sorts after SQLite's own second-precision text
    auto bad = query("SELECT '2024-13-01'");
    EXPECT_THROW((void)bad.get<system_clock::time_point>(0, 0), std::invalid_argument);
}

TEST_F(sqlite_values, affected_rows_and_last_insert_rowid) {
    query("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)");
    auto ins = query("INSERT INTO t (v) VALUES (?), (?), (?)", sqlite::params("a", "b", "c"));
    EXPECT_EQ(ins.affected_rows(), 3u);
    EXPECT_EQ(ins.last_insert_rowid(), 3);
    auto upd = query("UPDATE t SET v = 'z' WHERE id >= ?", sqlite::params(2));
    EXPECT_EQ(upd.affected_rows(), 2u);
    auto sel = query("SELECT id, v FROM t ORDER BY id");
    EXPECT_EQ(sel.affected_rows(), 0u);  // not the UPDATE's count
    EXPECT_EQ(sel.rows(), 3u);
    EXPECT_EQ(sel.columns(), 2u);
    EXPECT_EQ(sel.column_name(1), "v");
    auto empty = query("SELECT id FROM t WHERE id < 0");
    EXPECT_EQ(empty.rows(), 0u);
    EXPECT_EQ(empty.columns(), 1u);  // names even without rows
}

// Every prefix of a full time text, each on a heap buffer of exactly its length (so that AddressSanitizer
// sees a read of one byte too many): none is a time, and none is read past its end. The 4- and
// 7-character ones ("2024", "2024-02") were read one byte past their end.
TEST(sqlite_time_text, prefixes_are_refused_without_reading_past_their_end) {
    const std::string full = "2024-02-29 23:59:58.123456+02:00";
    for (std::size_t n = 0; n <= full.size(); ++n) {
        auto buffer = std::make_unique<char[]>(n == 0 ? 1 : n);
        std::memcpy(buffer.get(), full.data(), n);
        std::chrono::system_clock::time_point out{};
        const bool parsed = respool::sqlite::detail::parse_time(std::string_view(buffer.get(), n), out);
        // "YYYY-MM-DD", "... HH:MM", "... HH:MM:SS[.f...]" and the whole are times of their own; a cut
        // offset is not.
        const bool complete = n == 10 || n == 16 || (n >= 19 && n <= 26) || n == full.size();
        EXPECT_EQ(parsed, complete) << '"' << full.substr(0, n) << '"';
    }
}

// Times system_clock cannot hold (nanoseconds in 64 bits: about 1678 to 2262) are not times; the
// conversion overflowed before (UBSan: signed integer overflow).
TEST(sqlite_time_text, times_outside_system_clock_are_refused_without_overflow) {
    std::chrono::system_clock::time_point out{};
    for (const char* t :
         {"0001-01-01", "1600-06-01 12:00:00", "2300-01-01T00:00:00Z", "9999-12-31 23:59:59.999999"})
        EXPECT_FALSE(respool::sqlite::detail::parse_time(t, out)) << t;
    EXPECT_TRUE(respool::sqlite::detail::parse_time("2262-01-01 00:00:00", out));
    EXPECT_TRUE(respool::sqlite::detail::parse_time("1678-12-31 00:00:00", out));
}

// A field is digits only: a sign where a digit belongs is not a time (an hour of "-1" was read as one
// hour before midnight).
TEST(sqlite_time_text, a_sign_where_a_digit_belongs_is_refused) {
    std::chrono::system_clock::time_point out{};
    for (const char* t : {"2024-01-01 -1:00", "2024-01-01 10:-5", "2024-01-01 10:00:-1", "+024-01-01",
                          "2024-01-01 10:00+-1:00", "2024-01-01 10:00+01:-1"})
        EXPECT_FALSE(respool::sqlite::detail::parse_time(t, out)) << t;
    EXPECT_TRUE(respool::sqlite::detail::parse_time("2024-01-01 10:00+01:00", out));
}

// Fractions keep microseconds (the text form's precision); later digits are ignored.
TEST(sqlite_time_text, fractions_keep_microseconds) {
    using namespace std::chrono;
    system_clock::time_point out{};
    ASSERT_TRUE(respool::sqlite::detail::parse_time("2024-01-01T10:00:00.1234567Z", out));
    EXPECT_EQ(out, sys_days(year(2024) / 1 / 1) + hours(10) + microseconds(123456));
}

TEST_F(sqlite_values, short_texts_are_not_times) {
    auto r = query("SELECT '2024', '2024-02', '2024-02-2'");
    for (std::size_t col = 0; col < 3; ++col)
        EXPECT_THROW((void)r.get<std::chrono::system_clock::time_point>(0, col), std::invalid_argument)
            << col;
}

}  // namespace
