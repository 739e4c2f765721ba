// Read batches on the readers (docs/07-sqlite.md): reads queued together share a reader's turn (fewer
// acquires than reads) and each gets its own row; a failing read, a cancelled one and one past its
// deadline fail alone and the rest of their batch runs; a write sent to a reader still reaches the
// writer; a caller reads its own acknowledged writes; queued reads fail with errc::exhausted past the
// borrow timeout (readers held by leases, or by a long batch) and with errc::closed after close().
// Waits are on completions; the one timer (before a cancellation) decides nothing the test asserts.
#include "sqlite_test_support.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>

#include <sqlite3.h>

#include <chrono>
#include <random>

using namespace sqlite_test;
using respool::error_code;
using namespace std::chrono_literals;

namespace {

// Counts to 2e9 in SQLite's virtual machine: minutes of work unless interrupted.
const char* const long_query =
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000000) "
    "SELECT count(*) FROM c";
const char* const read_sql = "SELECT v FROM t WHERE id = ?";
constexpr int rows = 200;

class sqlite_read_batch : public ::testing::Test {
protected:
    temp_dir dir;
    asio::io_context io;

    // A pool of one reader on a table t(id, v = 3 * id) of `rows` rows.
    sqlite::pool make_pool(const std::string& name, sqlite::pool_config cfg = {}) {
        cfg.path = dir.file(name);
        cfg.readers = 1;  // so that reads queue
        sqlite::pool db(io.get_executor(), cfg);
        run(io, [&db]() -> asio::awaitable<void> {
            co_await db.async_query("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)",
                                    asio::use_awaitable);
            co_await db.async_query(
                "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < " +
                    std::to_string(rows) + ") INSERT INTO t SELECT i, 3 * i FROM s",
                asio::use_awaitable);
        }());
        return db;
    }
};

struct outcome {
    bool done = false;
    error_code ec;
    sqlite::result r;
};

// Starts db.async_query(sql[, p]) now; `out` is filled when it completes.
void start(sqlite::pool& db, const std::string& sql, std::optional<sqlite::params> p, outcome& out,
           asio::cancellation_slot slot = {}) {
    auto done = asio::bind_cancellation_slot(slot, [&out](error_code ec, sqlite::result r) {
        out = {true, ec, std::move(r)};
    });
    if (p)
        db.async_query(sql, *p, std::move(done));
    else
        db.async_query(sql, std::move(done));
}

TEST_F(sqlite_read_batch, many_reads_share_a_reader_and_each_gets_its_own_row) {
    auto db = make_pool("share.db");
    const auto before = db.reader_stats().acquires;
    constexpr int coroutines = 64, each = 20;
    int wrong = 0, failed = 0;
    for (int c = 0; c < coroutines; ++c)
        asio::co_spawn(
            io,
            [&, c]() -> asio::awaitable<void> {
                std::minstd_rand rng(static_cast<unsigned>(c) + 1);
                std::uniform_int_distribution<int> id(1, rows);
                for (int i = 0; i < each; ++i) {
                    const int k = id(rng);
                    auto [ec, r] = co_await db.async_query(read_sql, sqlite::params(k),
                                                           asio::as_tuple(asio::use_awaitable));
                    if (ec)
                        ++failed;
                    else if (r.get<std::int64_t>(0, 0) != 3 * k)
                        ++wrong;
                }
            },
            asio::detached);
    io.run();
    EXPECT_EQ(failed, 0);
    EXPECT_EQ(wrong, 0);
    const auto s = db.reader_stats();
    // One acquire per batch (and a reader kept across batches), not one per read.
    EXPECT_LT(s.acquires - before, static_cast<std::uint64_t>(coroutines * each) / 4);
    EXPECT_EQ(s.active, 0u);
    EXPECT_EQ(s.idle, s.total);
}

TEST_F(sqlite_read_batch, a_failing_read_fails_alone_and_a_write_still_reaches_the_writer) {
    auto db = make_pool("alone.db");
    outcome good[6], missing, syntax, write, after;
    for (int i = 0; i < 3; ++i) start(db, read_sql, sqlite::params(i + 1), good[i]);
    start(db, "SELECT v FROM missing_table", std::nullopt, missing);
    start(db, "SELEKT 1", std::nullopt, syntax);
    start(db, "INSERT INTO t VALUES (1000, 7)", std::nullopt, write);  // no parameters: sent to a reader
    for (int i = 3; i < 6; ++i) start(db, read_sql, sqlite::params(i + 1), good[i]);
    io.run();
    io.restart();
    for (int i = 0; i < 6; ++i) {
        ASSERT_TRUE(good[i].done);
        EXPECT_FALSE(good[i].ec) << i << ": " << good[i].ec.message();
        EXPECT_EQ(good[i].r.get<std::int64_t>(0, 0), 3 * (i + 1));
    }
    ASSERT_TRUE(missing.done);
    EXPECT_EQ(sqlite::result_code_of(missing.ec), SQLITE_ERROR);
    ASSERT_TRUE(syntax.done);
    EXPECT_EQ(sqlite::result_code_of(syntax.ec), SQLITE_ERROR);
    ASSERT_TRUE(write.done);
    EXPECT_FALSE(write.ec) << write.ec.message();
    EXPECT_EQ(write.r.affected_rows(), 1u);
    start(db, read_sql, sqlite::params(1000), after);
    io.run();
    ASSERT_TRUE(after.done);
    EXPECT_EQ(after.r.get<std::int64_t>(0, 0), 7);
}

TEST_F(sqlite_read_batch, a_cancelled_read_stops_and_the_rest_of_its_batch_runs) {
    auto db = make_pool("cancel.db");
    asio::cancellation_signal cancel_long, cancel_queued;
    outcome long_one, queued, quick[4];
    start(db, long_query, std::nullopt, long_one, cancel_long.slot());
    for (int i = 0; i < 2; ++i) start(db, read_sql, sqlite::params(i + 1), quick[i]);
    start(db, read_sql, sqlite::params(9), queued, cancel_queued.slot());
    for (int i = 2; i < 4; ++i) start(db, read_sql, sqlite::params(i + 1), quick[i]);
    cancel_queued.emit(asio::cancellation_type::terminal);  // still queued, or taken and not yet run
    asio::steady_timer t(io, 50ms);  // whether the long one is running yet or not, it must stop
    t.async_wait([&](error_code) { cancel_long.emit(asio::cancellation_type::terminal); });
    io.run();
    ASSERT_TRUE(long_one.done);
    EXPECT_EQ(long_one.ec, asio::error::operation_aborted);
    ASSERT_TRUE(queued.done);
    EXPECT_EQ(queued.ec, asio::error::operation_aborted);
    for (int i = 0; i < 4; ++i) {
        ASSERT_TRUE(quick[i].done);
        EXPECT_FALSE(quick[i].ec) << i << ": " << quick[i].ec.message();
        EXPECT_EQ(quick[i].r.get<std::int64_t>(0, 0), 3 * (i + 1));
    }
    EXPECT_EQ(db.reader_stats().active, 0u);
}

TEST_F(sqlite_read_batch, a_read_past_its_deadline_fails_alone) {
    sqlite::pool_config cfg;
    cfg.statement_timeout = 100ms;
    auto db = make_pool("deadline.db", cfg);
    outcome long_one, quick[3];
    start(db, read_sql, sqlite::params(1), quick[0]);
    start(db, long_query, std::nullopt, long_one);
    for (int i = 1; i < 3; ++i) start(db, read_sql, sqlite::params(i + 1), quick[i]);
    io.run();
    ASSERT_TRUE(long_one.done);
    EXPECT_EQ(long_one.ec, sqlite::error::statement_timeout);
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(quick[i].done);
        EXPECT_FALSE(quick[i].ec) << i << ": " << quick[i].ec.message();
    }
}

TEST_F(sqlite_read_batch, a_caller_reads_its_own_acknowledged_writes) {
    auto db = make_pool("own.db");
    constexpr int writers = 8, rounds = 30;
    int stale = 0, failed = 0;
    for (int w = 0; w < writers; ++w)
        asio::co_spawn(
            io,
            [&, w]() -> asio::awaitable<void> {
                for (int i = 1; i <= rounds; ++i) {
                    const int value = 10000 * (w + 1) + i;
                    auto [we, wr] = co_await db.async_query("UPDATE t SET v = ? WHERE id = ?",
                                                            sqlite::params(value, w + 1),
                                                            asio::as_tuple(asio::use_awaitable));
                    auto [re, rr] = co_await db.async_query(read_sql, sqlite::params(w + 1),
                                                            asio::as_tuple(asio::use_awaitable));
                    if (we || re)
                        ++failed;
                    else if (rr.get<std::int64_t>(0, 0) != value)
                        ++stale;
                }
            },
            asio::detached);
    io.run();
    EXPECT_EQ(failed, 0);
    EXPECT_EQ(stale, 0);
}

TEST_F(sqlite_read_batch, queued_reads_fail_with_exhausted_past_the_borrow_timeout) {
    sqlite::pool_config cfg;
    cfg.borrow_timeout = 200ms;
    auto db = make_pool("exhausted.db", cfg);
    // The reader held by a lease: the batch's acquire times out.
    run(io, [&]() -> asio::awaitable<void> {
        auto held = co_await db.async_acquire_reader(asio::use_awaitable);
        const auto t0 = std::chrono::steady_clock::now();
        auto [ec, r] =
            co_await db.async_query(read_sql, sqlite::params(1), asio::as_tuple(asio::use_awaitable));
        const auto waited = std::chrono::steady_clock::now() - t0;
        EXPECT_EQ(ec, respool::errc::exhausted);
        EXPECT_GE(waited, 200ms);
        EXPECT_LT(waited, 3s);
    }());
    // The reader held by a long batch: the queued read's own deadline.
    asio::cancellation_signal cancel_long;
    outcome long_one, queued;
    start(db, long_query, std::nullopt, long_one, cancel_long.slot());
    asio::steady_timer t(io, 20ms);  // the long one's batch under way (or about to be: same outcome)
    std::chrono::steady_clock::duration waited{};
    t.async_wait([&](error_code) {
        const auto t0 = std::chrono::steady_clock::now();
        db.async_query(read_sql, sqlite::params(2), [&, t0](error_code ec, sqlite::result r) {
            queued = {true, ec, std::move(r)};
            waited = std::chrono::steady_clock::now() - t0;
            cancel_long.emit(asio::cancellation_type::terminal);
        });
    });
    io.run();
    io.restart();
    ASSERT_TRUE(queued.done);
    EXPECT_EQ(queued.ec, respool::errc::exhausted);
    EXPECT_GE(waited, 200ms);
    EXPECT_LT(waited, 3s);
    EXPECT_EQ(long_one.ec, asio::error::operation_aborted);
    // Free again: reads run.
    outcome again;
    start(db, read_sql, sqlite::params(3), again);
    io.run();
    EXPECT_FALSE(again.ec) << again.ec.message();
}

TEST_F(sqlite_read_batch, close_fails_the_queued_reads) {
    auto db = make_pool("close.db");
    asio::cancellation_signal cancel_long;
    outcome long_one, queued[3];
    start(db, long_query, std::nullopt, long_one, cancel_long.slot());
    asio::steady_timer t(io, 20ms);
    t.async_wait([&](error_code) {
        for (int i = 0; i < 3; ++i) start(db, read_sql, sqlite::params(i + 1), queued[i]);
        db.close();
        cancel_long.emit(asio::cancellation_type::terminal);
    });
    io.run();
    EXPECT_EQ(long_one.ec, asio::error::operation_aborted);
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(queued[i].done);
        EXPECT_EQ(queued[i].ec, respool::errc::closed) << i << ": " << queued[i].ec.message();
    }
}

}  // namespace
