// Group commit on the writer (docs/07-sqlite.md): writes queued together run in one transaction; one
// that fails (a constraint) fails alone and the others commit; every acknowledged write is in the file
// once the pool is gone (read back with a connection of SQLite's own); a write cancelled while it
// waits for the writer does not run. Every wait is on a completion, none on a guessed time.
#include "sqlite_test_support.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <sqlite3.h>

#include <set>

using namespace sqlite_test;
using respool::error_code;

namespace {

class sqlite_group_commit : public ::testing::Test {
protected:
    temp_dir dir;
    asio::io_context io;
};

// Runs `sql` on the file with a connection of SQLite's own; the first column of the first row.
std::int64_t scalar(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK);
    std::int64_t v = -1;
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

TEST_F(sqlite_group_commit, a_failing_write_fails_alone_and_the_others_commit) {
    const std::string path = dir.file("group.db");
    {
        sqlite::pool db(io.get_executor(), config(path, 1));
        run(io, db.async_query("CREATE TABLE t (id INTEGER PRIMARY KEY, v INT CHECK (v >= 0))",
                               asio::use_awaitable));
        constexpr int n = 40, bad = 17;
        std::vector<error_code> results(n);
        int done = 0;
        // All initiated in one go: they queue while the writer is being acquired, and run as one group.
        for (int i = 0; i < n; ++i)
            db.async_query("INSERT INTO t (id, v) VALUES (?, ?)", sqlite::params(i, i == bad ? -1 : i),
                           [&, i](error_code ec, sqlite::result) {
                               results[static_cast<std::size_t>(i)] = ec;
                               ++done;
                           });
        io.run();
        io.restart();
        ASSERT_EQ(done, n);
        for (int i = 0; i < n; ++i) {
            if (i == bad)
                EXPECT_EQ(results[static_cast<std::size_t>(i)], sqlite::condition::check_violation)
                    << results[static_cast<std::size_t>(i)].message();
            else
                EXPECT_FALSE(results[static_cast<std::size_t>(i)])
                    << i << ": " << results[static_cast<std::size_t>(i)].message();
        }
        auto r = run(io, db.async_query("SELECT count(*), sum(id) FROM t", asio::use_awaitable));
        EXPECT_EQ(r.get<std::int64_t>(0, 0), n - 1);
        EXPECT_EQ(r.get<std::int64_t>(0, 1), n * (n - 1) / 2 - bad);
        // The writer is clean afterwards: a transaction of the caller's runs.
        run(io, db.transaction(
                    [](sqlite::connection& c) -> asio::awaitable<void> {
                        co_await c.async_query("UPDATE t SET v = v + 1", asio::use_awaitable);
                    },
                    {}, asio::use_awaitable));
    }
    EXPECT_EQ(scalar(path, "SELECT count(*) FROM t WHERE v = id + 1"), 39);
}

TEST_F(sqlite_group_commit, every_acknowledged_write_is_in_the_file_after_the_pool_is_closed) {
    const std::string path = dir.file("durable.db");
    constexpr int writers = 16, each = 25;
    int acknowledged = 0;
    std::set<std::int64_t> acked;
    {
        sqlite::pool db(io.get_executor(), config(path, 2));
        run(io,
            db.async_query("CREATE TABLE kv (id INTEGER PRIMARY KEY, v TEXT NOT NULL)", asio::use_awaitable));
        for (int w = 0; w < writers; ++w)
            asio::co_spawn(
                io,
                [&, w]() -> asio::awaitable<void> {
                    for (int i = 0; i < each; ++i) {
                        const std::int64_t id = w * 1000 + i;
                        auto [ec, r] = co_await db.async_query(
                            "INSERT INTO kv (id, v) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET v = "
                            "excluded.v",
                            sqlite::params(id, "value"), asio::as_tuple(asio::use_awaitable));
                        if (!ec) {
                            ++acknowledged;
                            acked.insert(id);
                        }
                        EXPECT_EQ(r.affected_rows(), ec ? 0u : 1u);
                    }
                },
                [](std::exception_ptr e) {
                    if (e) std::rethrow_exception(e);
                });
        io.run();
        io.restart();
        db.close();
    }
    EXPECT_EQ(acknowledged, writers * each);
    EXPECT_EQ(scalar(path, "SELECT count(*) FROM kv"), static_cast<std::int64_t>(acked.size()));
    EXPECT_EQ(acked.size(), static_cast<std::size_t>(writers * each));
}

TEST_F(sqlite_group_commit, a_write_cancelled_while_it_waits_does_not_run) {
    const std::string path = dir.file("cancel.db");
    sqlite::pool db(io.get_executor(), config(path, 1));
    run(io, db.async_query("CREATE TABLE t (id INTEGER PRIMARY KEY)", asio::use_awaitable));
    // The writer is held by a transaction until the cancellation was emitted: the insert waits.
    asio::cancellation_signal cancel;
    error_code got;
    bool completed = false;
    run(io, db.with_connection(
                [&](sqlite::connection&) -> asio::awaitable<void> {
                    db.async_query(
                        "INSERT INTO t (id) VALUES (?)", sqlite::params(1),
                        asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec, sqlite::result) {
                            got = ec;
                            completed = true;
                        }));
                    cancel.emit(asio::cancellation_type::terminal);
                    co_return;
                },
                asio::use_awaitable));
    io.run();
    io.restart();
    ASSERT_TRUE(completed);
    EXPECT_EQ(got, asio::error::operation_aborted);
    auto r = run(io, db.async_query("SELECT count(*) FROM t", asio::use_awaitable));
    EXPECT_EQ(r.get<std::int64_t>(0, 0), 0);
}

}  // namespace
