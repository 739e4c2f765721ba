// Bad input to sqlite::pool: a private in-memory database is rejected at construction with a clear
// std::invalid_argument (the shared memdb form is accepted and shared by the writer and the readers);
// a missing folder, a directory in place of a file and a damaged file (garbage written to it) are
// clear errors naming the path, through every operation, and nothing crashes.
#include "sqlite_test_support.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/system/system_error.hpp>

#include <fstream>

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

}  // namespace
