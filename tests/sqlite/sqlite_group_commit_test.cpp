// Group commit on the writer (docs/07-sqlite.md): writes queued together run in one transaction; one
// that fails (a constraint, its statement deadline) fails alone and the others commit; every
// acknowledged write is in the file once the pool is gone (read back with a connection of SQLite's
// own); a write cancelled while it waits for the writer does not run, and one cancelled while its group
// runs fails no other. Every wait is on a completion, none on a guessed time.
#include "sqlite_test_support.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/post.hpp>

#include <sqlite3.h>

#include <array>
#include <functional>
#include <future>
#include <optional>
#include <set>

using namespace sqlite_test;
using respool::error_code;
using namespace std::chrono_literals;

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

// A write that counts to two billion in SQLite's virtual machine before it inserts its one row:
// interrupted by any statement_timeout a test can wait for.
const std::string slow_insert =
    "INSERT INTO t (id, v) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < "
    "2000000000) SELECT ?, count(*) FROM c";

TEST_F(sqlite_group_commit, a_write_past_its_deadline_fails_alone_and_the_others_commit) {
    const std::string path = dir.file("deadline.db");
    constexpr int n = 10, slow = 4;
    std::vector<std::optional<error_code>> results(n);
    {
        auto cfg = config(path, 1);
        cfg.statement_timeout = 200ms;
        sqlite::pool db(io.get_executor(), cfg);
        run(io, db.async_query("CREATE TABLE t (id INTEGER PRIMARY KEY, v INT)", asio::use_awaitable));
        // One group (all queued while the writer is on its way): four writes before the slow one, five
        // after it. The slow one's interrupt rolls the whole transaction back: the four run again.
        for (int i = 0; i < n; ++i)
            db.async_query(
                i == slow ? slow_insert : "INSERT INTO t (id, v) VALUES (?, 0)", sqlite::params(i),
                [&, i](error_code ec, sqlite::result) { results[static_cast<std::size_t>(i)] = ec; });
        io.run();
        io.restart();
        for (int i = 0; i < n; ++i) {
            const auto& got = results[static_cast<std::size_t>(i)];
            ASSERT_TRUE(got) << i;
            if (i == slow) {
                EXPECT_EQ(*got, sqlite::error::statement_timeout) << got->message();
                EXPECT_EQ(*got, sqlite::condition::interrupted);
            } else {
                EXPECT_FALSE(*got) << i << ": " << got->message();
            }
        }
        // The writer is clean afterwards: the next group commits.
        auto r = run(io, db.async_query("INSERT INTO t (id, v) VALUES (?, 0)", sqlite::params(100),
                                        asio::use_awaitable));
        EXPECT_EQ(r.affected_rows(), 1u);
    }
    EXPECT_EQ(scalar(path, "SELECT count(*) FROM t"), n);  // n - 1 of the group, and id 100
    EXPECT_EQ(scalar(path, "SELECT count(*) FROM t WHERE id = 4"), 0);
}

// Holds the statement that calls hold() on its thread until the test, told on its event loop, has done
// what it does while the statement runs (sqlite3_create_function's user data).
struct statement_gate {
    asio::io_context* io = nullptr;
    std::function<void()> while_held;  // run on `io` while the statement is held
    std::promise<void> released;
};

void hold(::sqlite3_context* ctx, int, ::sqlite3_value**) {
    auto* g = static_cast<statement_gate*>(::sqlite3_user_data(ctx));
    auto released = g->released.get_future();
    asio::post(*g->io, [g] {
        g->while_held();
        g->released.set_value();
    });
    released.wait();
    ::sqlite3_result_int(ctx, 1);
}

TEST_F(sqlite_group_commit, a_write_cancelled_while_its_group_runs_fails_no_other) {
    const std::string path = dir.file("cancel-running.db");
    sqlite::pool db(io.get_executor(), config(path, 1));
    run(io, db.async_query("CREATE TABLE t (id INTEGER PRIMARY KEY, v INT)", asio::use_awaitable));
    statement_gate gate;
    gate.io = &io;
    run(io, db.with_connection(
                [&](sqlite::connection& c) -> asio::awaitable<void> {
                    co_await c.async_run(
                        [&gate](::sqlite3* h) {
                            ASSERT_EQ(::sqlite3_create_function_v2(h, "hold", 0, SQLITE_UTF8, &gate, &hold,
                                                                   nullptr, nullptr, nullptr),
                                      SQLITE_OK);
                        },
                        asio::use_awaitable);
                },
                asio::use_awaitable));
    // One group: 0, 1 (held while it runs), 2 (cancelled while 1 runs: not run yet), 3. Write 1 is
    // cancelled too, while it runs: not interrupted (that would undo the group), it completes normally.
    constexpr int n = 4;
    std::vector<std::optional<error_code>> results(n);
    std::array<asio::cancellation_signal, n> cancel;
    bool held = false;
    gate.while_held = [&] {
        held = true;
        cancel[2].emit(asio::cancellation_type::terminal);
        cancel[1].emit(asio::cancellation_type::terminal);
    };
    for (int i = 0; i < n; ++i)
        db.async_query(
            i == 1 ? "INSERT INTO t (id, v) VALUES (?, hold())" : "INSERT INTO t (id, v) VALUES (?, 0)",
            sqlite::params(i),
            asio::bind_cancellation_slot(
                cancel[static_cast<std::size_t>(i)].slot(),
                [&, i](error_code ec, sqlite::result) { results[static_cast<std::size_t>(i)] = ec; }));
    io.run();
    io.restart();
    ASSERT_TRUE(held);
    for (int i = 0; i < n; ++i) ASSERT_TRUE(results[static_cast<std::size_t>(i)]) << i;
    EXPECT_FALSE(*results[0]) << results[0]->message();
    EXPECT_FALSE(*results[1]) << results[1]->message();
    EXPECT_EQ(*results[2], asio::error::operation_aborted);
    EXPECT_FALSE(*results[3]) << results[3]->message();
    auto r = run(io, db.async_query("SELECT group_concat(id) FROM (SELECT id FROM t ORDER BY id)",
                                    asio::use_awaitable));
    EXPECT_EQ(r.get<std::string>(0, 0), "0,1,3");
}

}  // namespace
