// Bad input to sqlite::pool: a private in-memory database is rejected at construction with a clear
// std::invalid_argument (the shared memdb form is accepted and shared by the writer and the readers);
// a missing folder, a directory in place of a file and a damaged file (garbage written to it) are
// clear errors naming the path, through every operation, and nothing crashes.
#include "sqlite_test_support.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/system/system_error.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
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

}  // namespace
