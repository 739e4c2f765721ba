// Bad input to sqlite::pool: a private in-memory database is rejected at construction with a clear
// std::invalid_argument (the shared memdb form is accepted and shared by the writer and the readers);
// a missing folder, a directory in place of a file and a damaged file (garbage written to it) are
// clear errors naming the path, through every operation, and nothing crashes.
#include "sqlite_test_support.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/system/system_error.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <vector>

using namespace sqlite_test;
using respool::error_code;

namespace {

class sqlite_bad_input : public ::testing::Test {
protected:
    temp_dir dir;
    asio::io_context io;

    // with_connection's exception for `path`; asserts async_query fails with `cond` too.
    std::string failure(const std::string& path, sqlite::condition cond) {
        sqlite::pool db(io.get_executor(), config(path, 1));
        auto [ec, r] = run(io, db.async_query("SELECT 1", asio::as_tuple(asio::use_awaitable)));
        EXPECT_EQ(ec, cond) << ec.message();
        EXPECT_EQ(ec, sqlite::condition::connection_broken);
        try {
            run(io, db.with_connection([](sqlite::connection&) -> asio::awaitable<void> { co_return; },
                                       asio::use_awaitable));
        } catch (const boost::system::system_error& e) {
            EXPECT_EQ(e.code(), cond);
            return e.what();
        }
        ADD_FAILURE() << "with_connection did not fail";
        return {};
    }
};

TEST_F(sqlite_bad_input, private_memory_databases_are_rejected) {
    for (const char* path : {":memory:", "", "file::memory:", "file::memory:?cache=shared",
                             "file:x?mode=memory", "file:name?vfs=memdb"}) {
        try {
            sqlite::pool db(io.get_executor(), config(path));
            ADD_FAILURE() << "accepted " << path;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(std::string("\"") + path + "\""), std::string::npos)
                << e.what();
        }
    }
}

TEST_F(sqlite_bad_input, shared_memdb_is_one_database_for_writer_and_readers) {
    const std::string name = "file:/" + dir.path().filename().string() + "?vfs=memdb";
    sqlite::pool db(io.get_executor(), config(name, 2));
    run(io, [&]() -> asio::awaitable<void> {
        co_await db.async_query("CREATE TABLE t (v INT)", asio::use_awaitable);
        co_await db.async_query("INSERT INTO t VALUES (5)", asio::use_awaitable);
        auto n = co_await db.with_reader(
            [](sqlite::connection& c) -> asio::awaitable<std::int64_t> {
                auto r = co_await c.async_query("SELECT sum(v) FROM t", asio::use_awaitable);
                co_return r.get<std::int64_t>(0, 0);
            },
            asio::use_awaitable);
        EXPECT_EQ(n, 5);
    }());
}

TEST_F(sqlite_bad_input, missing_folder_names_the_path) {
    const std::string path = dir.file("no-such-folder/app.db");
    const std::string what = failure(path, sqlite::condition::cant_open);
    EXPECT_NE(what.find(path), std::string::npos) << what;
}

TEST_F(sqlite_bad_input, a_directory_is_not_a_database_file) {
    // (An unreadable file cannot be made for root, who reads everything; a directory fails the same way.)
    const std::string what = failure(dir.path().string(), sqlite::condition::cant_open);
    EXPECT_NE(what.find(dir.path().string()), std::string::npos) << what;
}

TEST_F(sqlite_bad_input, a_damaged_file_is_a_clear_error) {
    const std::string path = dir.file("garbage.db");
    {
        std::ofstream f(path, std::ios::binary);
        for (int i = 0; i < 4096; ++i) f.put(static_cast<char>((i * 7919) & 0xff));
    }
    const std::string what = failure(path, sqlite::condition::corrupt);
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find("not a database"), std::string::npos) << what;
}

TEST_F(sqlite_bad_input, bad_settings_are_rejected) {
    auto c = config(dir.file("x.db"));
    c.statement_timeout = std::chrono::seconds(-1);
    EXPECT_THROW(sqlite::pool(io.get_executor(), c), std::invalid_argument);
    c = config(dir.file("x.db"));
    c.borrow_timeout = std::chrono::seconds(-1);
    EXPECT_THROW(sqlite::pool(io.get_executor(), c), std::invalid_argument);
    c = config(dir.file("x.db"));
    c.busy_timeout = std::chrono::seconds(-1);
    EXPECT_THROW(sqlite::pool(io.get_executor(), c), std::invalid_argument);
    c = config(dir.file("x.db"));
    c.journal_mode = "WAL; DROP TABLE t";
    sqlite::pool db(io.get_executor(), c);
    auto [ec, r] = run(io, db.async_query("SELECT 1", asio::as_tuple(asio::use_awaitable)));
    EXPECT_TRUE(ec);  // the pragma value is checked, never spliced
}

// The lifecycle settings are checked by the generic pool (respool::validate), whose message names them
// as pool_config does; nothing is opened.
TEST_F(sqlite_bad_input, lifecycle_settings_are_refused_by_name) {
    using namespace std::chrono_literals;
    const std::vector<std::pair<std::function<void(sqlite::pool_config&)>, std::string>> cases = {
        {[](sqlite::pool_config& c) { c.idle_ttl = -1ms; }, "idle_ttl (-1ms) must not be negative"},
        {[](sqlite::pool_config& c) { c.reset_timeout = -1ms; }, "reset_timeout (-1ms) must be positive"},
        {[](sqlite::pool_config& c) { c.reset_timeout = {}; }, "reset_timeout (0ms) must be positive"},
        {[](sqlite::pool_config& c) { c.acquire_ttl = -1ms; }, "acquire_ttl (-1ms) must not be negative"},
        {[](sqlite::pool_config& c) { c.max_waiters = std::size_t{1} << 32; },
         "max_waiters (4294967296) is too large"},
        {[](sqlite::pool_config& c) { c.readers = std::size_t{1} << 31; },
         "max (2147483648) must not exceed 2147483647"},
    };
    for (const auto& [spoil, says] : cases) {
        auto c = config(dir.file("x.db"));
        c.threads = 1;  // not readers + 1: the case of 2^31 readers must not start that many threads
        spoil(c);
        try {
            sqlite::pool db(io.get_executor(), c);
            ADD_FAILURE() << "accepted: " << says;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
        }
    }
    EXPECT_FALSE(std::filesystem::exists(dir.file("x.db"))) << "nothing was opened";
}

// synchronous = "bogus", like a bad journal_mode, is accepted by the constructor and fails every open:
// the first query's error, and with_connection's exception, name the setting and the value.
TEST_F(sqlite_bad_input, a_bad_synchronous_fails_the_open_naming_it) {
    auto c = config(dir.file("x.db"));
    c.synchronous = "bogus";
    sqlite::pool db(io.get_executor(), c);
    auto [ec, r] = run(io, db.async_query("SELECT 1", asio::as_tuple(asio::use_awaitable)));
    EXPECT_TRUE(ec);
    try {
        run(io, db.with_connection([](sqlite::connection&) -> asio::awaitable<void> { co_return; },
                                   asio::use_awaitable));
        ADD_FAILURE() << "with_connection did not fail";
    } catch (const boost::system::system_error& e) {
        EXPECT_NE(std::string(e.what()).find("synchronous \"bogus\""), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(dir.file("x.db"))) << "the value is checked before the open";
}

// Zeros that mean something: readers = 0 runs everything on the writer, threads = 0 is readers + 1,
// statement_cache_capacity = 0 keeps no statement; the pool works.
TEST_F(sqlite_bad_input, zero_readers_threads_and_cache_capacity_work) {
    auto c = config(dir.file("x.db"), 0);
    c.threads = 0;
    c.statement_cache_capacity = 0;
    sqlite::pool db(io.get_executor(), c);
    run(io, [&]() -> asio::awaitable<void> {
        co_await db.async_query("CREATE TABLE t (v INT)", asio::use_awaitable);
        co_await db.async_query("INSERT INTO t VALUES (?)", sqlite::params(7), asio::use_awaitable);
        auto r = co_await db.async_query("SELECT sum(v) FROM t WHERE v > ?", sqlite::params(0),
                                         asio::use_awaitable);
        EXPECT_EQ(r.get<std::int64_t>(0, 0), 7);
    }());
    EXPECT_EQ(db.reader_stats().max, 0u) << "no reader pool";
    EXPECT_GE(db.writer_stats().acquires, 3u) << "everything ran on the writer";
}

// Parameters are data stored exactly, or refused when they are added (before any statement could run),
// with the parameter's position and what is wrong in the message.
template <class F>
std::string refusal(F add) {
    try {
        add();
    } catch (const std::logic_error& e) {  // std::invalid_argument, std::out_of_range
        return e.what();
    }
    ADD_FAILURE() << "accepted";
    return {};
}

TEST_F(sqlite_bad_input, text_with_a_nul_byte_is_refused_naming_the_parameter) {
    const std::string with_nul("abc\0def", 7);
    EXPECT_THROW((void)sqlite::params(1, with_nul), std::invalid_argument);
    const std::string why = refusal([&] { (void)sqlite::params(1, with_nul); });
    EXPECT_NE(why.find("parameter 2"), std::string::npos) << why;
    EXPECT_NE(why.find("NUL"), std::string::npos) << why;
    EXPECT_NE(why.find("offset 3"), std::string::npos) << why;
    EXPECT_NE(why.find("blob"), std::string::npos) << why;
    for (std::string_view v : {std::string_view("\0", 1), std::string_view("x\0", 2)})
        EXPECT_THROW((void)sqlite::params().add(v), std::invalid_argument) << v.size();
    EXPECT_THROW((void)sqlite::params().add(std::optional<std::string>(with_nul)), std::invalid_argument);

    // The same bytes as a blob are stored as they are.
    sqlite::pool db(io.get_executor(), config(dir.file("nul.db"), 1));
    const auto* b = reinterpret_cast<const std::byte*>(with_nul.data());
    auto r = run(io, db.async_query("SELECT ?, length(?1)", sqlite::params(std::span(b, with_nul.size())),
                                    asio::use_awaitable));
    EXPECT_EQ(r.kind(0, 0), sqlite::value_kind::blob);
    EXPECT_EQ(r.text(0, 0), with_nul);
    EXPECT_EQ(r.get<std::int64_t>(0, 1), 7);
}

TEST_F(sqlite_bad_input, integers_outside_int64_are_refused_never_wrapped) {
    constexpr auto max = std::numeric_limits<std::int64_t>::max();
    const std::uint64_t above = static_cast<std::uint64_t>(max) + 1;
    const std::string why = refusal([&] { (void)sqlite::params("x", above); });
    EXPECT_NE(why.find("parameter 2"), std::string::npos) << why;
    EXPECT_NE(why.find("9223372036854775808"), std::string::npos) << why;
    EXPECT_THROW((void)sqlite::params(std::numeric_limits<std::uint64_t>::max()), std::out_of_range);
    EXPECT_THROW((void)sqlite::params(std::numeric_limits<std::size_t>::max()), std::out_of_range);
    EXPECT_THROW((void)sqlite::params(std::numeric_limits<unsigned long long>::max()), std::out_of_range);
    EXPECT_THROW((void)sqlite::params(std::optional<std::uint64_t>(above)), std::out_of_range);

    // Every integer type that fits is bound as itself.
    sqlite::pool db(io.get_executor(), config(dir.file("ints.db"), 1));
    auto r = run(io, db.async_query("SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?",
                                    sqlite::params(static_cast<std::uint64_t>(max), std::size_t{42},
                                                   std::numeric_limits<long long>::min(),
                                                   std::numeric_limits<std::uint32_t>::max(), std::int8_t{-8},
                                                   std::uint8_t{255}, std::uint16_t{65535}, short{-3}, 7u),
                                    asio::use_awaitable));
    EXPECT_EQ(r.get<std::int64_t>(0, 0), max);
    EXPECT_EQ(r.get<std::int64_t>(0, 1), 42);
    EXPECT_EQ(r.get<std::int64_t>(0, 2), std::numeric_limits<std::int64_t>::min());
    EXPECT_EQ(r.get<std::int64_t>(0, 3), 4294967295);
    EXPECT_EQ(r.get<std::int64_t>(0, 4), -8);
    EXPECT_EQ(r.get<std::int64_t>(0, 5), 255);
    EXPECT_EQ(r.get<std::int64_t>(0, 6), 65535);
    EXPECT_EQ(r.get<std::int64_t>(0, 7), -3);
    EXPECT_EQ(r.get<std::int64_t>(0, 8), 7);
    for (std::size_t col = 0; col < 9; ++col) EXPECT_EQ(r.kind(0, col), sqlite::value_kind::integer) << col;
}

TEST_F(sqlite_bad_input, nan_and_times_outside_four_digit_years_are_refused) {
    const std::string nan = refusal([] { (void)sqlite::params(1.5, std::nan("")); });
    EXPECT_NE(nan.find("parameter 2"), std::string::npos) << nan;
    EXPECT_NE(nan.find("NaN"), std::string::npos) << nan;
    EXPECT_THROW((void)sqlite::params(std::numeric_limits<float>::quiet_NaN()), std::invalid_argument);
    using namespace std::chrono;
    const sys_days far = year(10000) / 1 / 1;
    const std::string when = refusal([&] { (void)sqlite::params(far); });
    EXPECT_NE(when.find("parameter 1"), std::string::npos) << when;
    EXPECT_NE(when.find("0000-9999"), std::string::npos) << when;
    EXPECT_THROW((void)sqlite::params(sys_days(year(-1) / 12 / 31)), std::out_of_range);

    // The edges that fit, and infinities (SQLite's REAL holds them), come back as themselves.
    sqlite::pool db(io.get_executor(), config(dir.file("edges.db"), 1));
    const sys_days first = year(0) / 1 / 1;
    const auto last = sys_days(year(9999) / 12 / 31) + hours(23) + minutes(59) + seconds(59);
    auto r = run(
        io, db.async_query("SELECT ?, ?, ?", sqlite::params(first, last, -HUGE_VAL), asio::use_awaitable));
    EXPECT_EQ(r.text(0, 0), "0000-01-01 00:00:00.000000");
    EXPECT_EQ(r.text(0, 1), "9999-12-31 23:59:59.000000");
    // system_clock (nanoseconds in 64 bits) cannot hold them: not a time, rather than an overflow.
    EXPECT_THROW((void)r.get<system_clock::time_point>(0, 0), std::invalid_argument);
    EXPECT_THROW((void)r.get<system_clock::time_point>(0, 1), std::invalid_argument);
    EXPECT_EQ(r.get<double>(0, 2), -HUGE_VAL);
}

}  // namespace
