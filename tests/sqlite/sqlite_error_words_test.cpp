// The pool-level operations of sqlite::pool carry SQLite's words (sqlite3_errmsg), not only the result
// code: async_query with a respool::diagnostics* on each of its paths (a read batch, group commit, the
// writer alone, an open that fails), and the exceptions of with_connection and transaction.
#include "sqlite_test_support.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/system/system_error.hpp>

using namespace sqlite_test;

namespace {

class sqlite_error_words : public ::testing::Test {
protected:
    temp_dir dir;
    asio::io_context io;
};

constexpr const char* missing_table = "no such table: nope (SQLite result code 1)";

void expect_rethrows_words(const respool::diagnostics& diag, int code) {
    ASSERT_TRUE(diag.error);
    try {
        std::rethrow_exception(diag.error);
    } catch (const sqlite::error_with_diagnostics& e) {
        EXPECT_EQ(e.get_diagnostics().code, code);
        EXPECT_STREQ(e.what(), diag.message.c_str());
    } catch (...) {
        ADD_FAILURE() << "diag.error is not a sqlite::error_with_diagnostics";
    }
}

}  // namespace

TEST_F(sqlite_error_words, a_failed_query_on_the_pool_says_what_sqlite_said_on_every_path) {
    sqlite::pool db(io.get_executor(), config(dir.file("words.db")));
    run(io, [&]() -> asio::awaitable<void> {
        co_await db.async_query("CREATE TABLE t (id INTEGER PRIMARY KEY)", asio::use_awaitable);
        respool::diagnostics diag;
        // A read (a reader's batch).
        auto [ec, r] =
            co_await db.async_query("SELECT * FROM nope", &diag, asio::as_tuple(asio::use_awaitable));
        EXPECT_TRUE(ec);
        EXPECT_EQ(diag.message, missing_table);
        expect_rethrows_words(diag, 1);
        // A write with parameters (group commit): the constraint's own words.
        co_await db.async_query("INSERT INTO t VALUES (?)", sqlite::params(1), asio::use_awaitable);
        auto [ec2, r2] = co_await db.async_query("INSERT INTO t VALUES (?)", sqlite::params(1), &diag,
                                                 asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec2, sqlite::condition::unique_violation);
        EXPECT_EQ(diag.message, "UNIQUE constraint failed: t.id (SQLite result code 1555)");
        // DDL (the writer alone), and cleared by a success.
        auto [ec3, r3] = co_await db.async_query("SELECT 1", &diag, asio::as_tuple(asio::use_awaitable));
        EXPECT_FALSE(ec3);
        EXPECT_EQ(diag.message, "");
        auto [ec4, r4] =
            co_await db.async_query("DROP TABLE nope", &diag, asio::as_tuple(asio::use_awaitable));
        EXPECT_TRUE(ec4);
        EXPECT_EQ(diag.message, missing_table);
    }());
}

TEST_F(sqlite_error_words, with_connection_and_transaction_throw_sqlite_s_words) {
    sqlite::pool db(io.get_executor(), config(dir.file("words_with.db")));
    run(io, [&]() -> asio::awaitable<void> {
        try {
            co_await db.with_connection(
                [](sqlite::connection& c) -> asio::awaitable<void> {
                    co_await c.async_query("SELECT * FROM nope", asio::use_awaitable);
                },
                asio::use_awaitable);
            ADD_FAILURE() << "no exception";
        } catch (const boost::system::system_error& e) {
            EXPECT_STREQ(e.what(), missing_table);
        }
        try {
            co_await db.transaction(
                [](sqlite::connection& c) -> asio::awaitable<void> {
                    co_await c.async_query("CREATE TABLE u (x)", asio::use_awaitable);
                    co_await c.async_query("INSERT INTO nope VALUES (?)", sqlite::params(1),
                                           asio::use_awaitable);
                },
                {}, asio::use_awaitable);
            ADD_FAILURE() << "no exception";
        } catch (const sqlite::error_with_diagnostics& e) {
            EXPECT_STREQ(e.what(), missing_table);
            EXPECT_EQ(e.get_diagnostics().code, 1);
        } catch (const std::exception& e) {
            ADD_FAILURE() << "not a sqlite::error_with_diagnostics: " << e.what();
        }
    }());
}

TEST_F(sqlite_error_words, an_open_that_fails_names_the_path) {
    const std::string path = dir.file("no/such/folder/x.db");
    sqlite::pool db(io.get_executor(), config(path));
    run(io, [&]() -> asio::awaitable<void> {
        respool::diagnostics diag;
        auto [ec, r] =
            co_await db.async_query("CREATE TABLE t (x)", &diag, asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, sqlite::condition::cant_open);
        EXPECT_NE(diag.message.find(path), std::string::npos) << "[" << diag.message << "] " << ec.message();
    }());
}
