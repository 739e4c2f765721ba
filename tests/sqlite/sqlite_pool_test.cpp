// sqlite::pool: transactions (commit, rollback on an exception), many coroutines writing at once (no
// SQLITE_BUSY, every acknowledged write present), reads served while a write transaction is open, the
// caller's event loop staying live under a long statement, cancellation and deadline of a long
// statement (the connection reused clean afterwards), the reset on return (an open transaction rolled
// back, a stepping statement reset; a connection whose reset fails destroyed), routing, SQL errors
// with SQLite's message and conditions, the per-connection settings in force (defaults and
// overrides), and the docs' quickstart being the compiled example. Every wait is on a state or a
// completion, none on a guessed time (the busy-timeout tests measure the timeout they test).
#include "sqlite_test_support.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/system_error.hpp>

#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace sqlite_test;
using respool::error_code;
using namespace std::chrono_literals;

namespace {

// Counts to n in SQLite's virtual machine: seconds of work for a large n, interruptible at any step.
const std::string long_query =
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000000) "
    "SELECT count(*) FROM c";

class sqlite_pool : public ::testing::Test {
protected:
    temp_dir dir;
    asio::io_context io;

    asio::awaitable<std::int64_t> count(sqlite::pool& db, const std::string& table = "t") {
        auto r = co_await db.async_query("SELECT count(*) FROM " + table, asio::use_awaitable);
        co_return r.get<std::int64_t>(0, 0);
    }
};

TEST_F(sqlite_pool, transaction_commits_and_rolls_back_on_exception) {
    sqlite::pool db(io.get_executor(), config(dir.file("tx.db")));
    run(io, [&]() -> asio::awaitable<void> {
        co_await db.async_query("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)",
                                asio::use_awaitable);
        co_await db.transaction(
            [](sqlite::connection& c) -> asio::awaitable<void> {
                co_await c.async_query("INSERT INTO t (v) VALUES (?)", sqlite::params("a"),
                                       asio::use_awaitable);
                co_await c.async_query("INSERT INTO t (v) VALUES (?)", sqlite::params("b"),
                                       asio::use_awaitable);
            },
            {}, asio::use_awaitable);
        EXPECT_EQ(co_await count(db), 2);
        bool threw = false;
        try {
            co_await db.transaction(
                [](sqlite::connection& c) -> asio::awaitable<void> {
                    co_await c.async_query("INSERT INTO t (v) VALUES ('c')", asio::use_awaitable);
                    throw std::runtime_error("the borrower's own failure");
                },
                {}, asio::use_awaitable);
        } catch (const std::runtime_error&) {
            threw = true;
        }
        EXPECT_TRUE(threw);
        EXPECT_EQ(co_await count(db), 2);  // rolled back
        // A statement error inside: the exception carries SQLite's message; nothing of it stays.
        try {
            co_await db.transaction(
                [](sqlite::connection& c) -> asio::awaitable<void> {
                    co_await c.async_query("INSERT INTO t (v) VALUES ('d')", asio::use_awaitable);
                    auto [ec, r] = co_await c.async_query("INSERT INTO t (v) VALUES (NULL)",
                                                          asio::as_tuple(asio::use_awaitable));
                    EXPECT_EQ(ec, sqlite::condition::not_null_violation);
                    throw boost::system::system_error(ec, c.last_error().message);
                },
                {}, asio::use_awaitable);
        } catch (const boost::system::system_error& e) {
            EXPECT_NE(std::string(e.what()).find("NOT NULL constraint failed"), std::string::npos)
                << e.what();
        }
        EXPECT_EQ(co_await count(db), 2);
        // A read transaction runs on a reader: a write in it fails with read_only.
        auto n = co_await db.transaction(
            [](sqlite::connection& c) -> asio::awaitable<std::int64_t> {
                EXPECT_TRUE(c.is_reader());
                auto [ec, r] = co_await c.async_query("DELETE FROM t", asio::as_tuple(asio::use_awaitable));
                EXPECT_EQ(ec, sqlite::condition::read_only);
                auto rows = co_await c.async_query("SELECT count(*) FROM t", asio::use_awaitable);
                co_return rows.get<std::int64_t>(0, 0);
            },
            {.read_only = true}, asio::use_awaitable);
        EXPECT_EQ(n, 2);
    }());
}

TEST_F(sqlite_pool, concurrent_writers_never_see_busy_and_every_write_lands) {
    sqlite::pool db(io.get_executor(), config(dir.file("writers.db"), 2));
    run(io,
        db.async_query("CREATE TABLE t (id INTEGER PRIMARY KEY, writer INT, n INT)", asio::use_awaitable));
    constexpr int writers = 24, each = 20;
    int acknowledged = 0, failures = 0;
    std::vector<std::string> errors;
    for (int w = 0; w < writers; ++w) {
        asio::co_spawn(
            io,
            [&, w]() -> asio::awaitable<void> {
                for (int i = 0; i < each; ++i) {
                    error_code ec;
                    if (i % 2 == 0) {  // straight on the pool
                        auto [e, r] = co_await db.async_query(
                            "INSERT INTO t (id, writer, n) VALUES (?, ?, ?)",
                            sqlite::params(w * 1000 + i, w, i), asio::as_tuple(asio::use_awaitable));
                        ec = e;
                    } else {  // a read-then-write transaction: BEGIN IMMEDIATE takes the lock first
                        try {
                            co_await db.transaction(
                                [&, w, i](sqlite::connection& c) -> asio::awaitable<void> {
                                    co_await c.async_query("SELECT count(*) FROM t", asio::use_awaitable);
                                    co_await c.async_query("INSERT INTO t (id, writer, n) VALUES (?, ?, ?)",
                                                           sqlite::params(w * 1000 + i, w, i),
                                                           asio::use_awaitable);
                                },
                                {}, asio::use_awaitable);
                        } catch (const boost::system::system_error& e) {
                            ec = e.code();
                        }
                    }
                    if (ec) {
                        ++failures;
                        errors.push_back(ec.message());
                    } else {
                        ++acknowledged;
                    }
                    // Readers in between, in parallel with the writes.
                    co_await db.async_query("SELECT count(*) FROM t", asio::use_awaitable);
                }
            },
            [](std::exception_ptr e) {
                if (e) std::rethrow_exception(e);
            });
    }
    io.run();
    io.restart();
    EXPECT_EQ(failures, 0) << (errors.empty() ? "" : errors.front());
    EXPECT_EQ(acknowledged, writers * each);
    auto r = run(io, db.async_query("SELECT id FROM t", asio::use_awaitable));
    std::set<std::int64_t> ids;
    for (std::size_t i = 0; i < r.rows(); ++i) ids.insert(r.get<std::int64_t>(i, 0));
    EXPECT_EQ(ids.size(), static_cast<std::size_t>(writers * each));
    for (int w = 0; w < writers; ++w)
        for (int i = 0; i < each; ++i) EXPECT_TRUE(ids.count(w * 1000 + i)) << w << "/" << i;
}

TEST_F(sqlite_pool, reads_run_while_a_write_transaction_is_open) {
    sqlite::pool db(io.get_executor(), config(dir.file("parallel.db"), 2));
    run(io, [&]() -> asio::awaitable<void> {
        co_await db.async_query("CREATE TABLE t (v INT)", asio::use_awaitable);
        co_await db.async_query("INSERT INTO t VALUES (1)", asio::use_awaitable);
        co_await db.transaction(
            [&](sqlite::connection& c) -> asio::awaitable<void> {
                co_await c.async_query("INSERT INTO t VALUES (2)", asio::use_awaitable);
                // The writer holds the write lock; a reader answers at once, from the last commit.
                EXPECT_EQ(co_await count(db), 1);
            },
            {}, asio::use_awaitable);
        EXPECT_EQ(co_await count(db), 2);
    }());
}

TEST_F(sqlite_pool, the_callers_timer_fires_on_time_while_a_long_query_runs_then_cancellation_stops_it) {
    sqlite::pool db(io.get_executor(), config(dir.file("long.db"), 1));
    asio::cancellation_signal stop;
    std::optional<error_code> query_done;
    std::chrono::steady_clock::duration late{};
    const auto start = std::chrono::steady_clock::now();
    db.async_query(long_query, asio::bind_cancellation_slot(
                                   stop.slot(), [&](error_code ec, sqlite::result) { query_done = ec; }));
    asio::steady_timer timer(io, 50ms);
    timer.async_wait([&](error_code) {
        late = std::chrono::steady_clock::now() - start - 50ms;
        EXPECT_FALSE(query_done) << "the long query ended before the timer";
        stop.emit(asio::cancellation_type::terminal);  // interrupts the statement on its thread
    });
    io.run();
    io.restart();
    EXPECT_LT(late, 500ms) << "the event loop was blocked";
    ASSERT_TRUE(query_done);
    EXPECT_EQ(*query_done, asio::error::operation_aborted);
    EXPECT_EQ(*query_done, sqlite::condition::interrupted);
    // The reader went back clean and serves the next statement.
    EXPECT_EQ(run(io, db.async_query("SELECT 41 + 1", asio::use_awaitable)).get<int>(0, 0), 42);
    EXPECT_EQ(db.reader_stats().idle + db.reader_stats().active, 1u);
}

TEST_F(sqlite_pool, statement_deadline_interrupts_and_the_connection_is_reused) {
    auto cfg = config(dir.file("deadline.db"), 1);
    cfg.statement_timeout = 100ms;
    sqlite::pool db(io.get_executor(), cfg);
    auto [ec, r] = run(io, db.async_query(long_query, asio::as_tuple(asio::use_awaitable)));
    EXPECT_EQ(ec, sqlite::error::statement_timeout);
    EXPECT_EQ(ec, sqlite::condition::interrupted);
    // On a borrowed connection too, and in a write transaction: the connection is usable after it.
    run(io,
        db.with_connection(
            [&](sqlite::connection& c) -> asio::awaitable<void> {
                co_await c.async_query("CREATE TABLE t (v INT)", asio::use_awaitable);
                co_await c.async_query("BEGIN IMMEDIATE", asio::use_awaitable);
                co_await c.async_query("INSERT INTO t VALUES (1)", asio::use_awaitable);
                auto [e, rr] = co_await c.async_query(
                    "INSERT INTO t WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < "
                    "2000000000) "
                    "SELECT x FROM c",
                    asio::as_tuple(asio::use_awaitable));
                EXPECT_EQ(e, sqlite::error::statement_timeout);
                EXPECT_FALSE(c.in_transaction());  // SQLite rolled the transaction back with the statement
                auto one = co_await c.async_query("SELECT 1", asio::use_awaitable);
                EXPECT_EQ(one.get<int>(0, 0), 1);
            },
            asio::use_awaitable));
    EXPECT_EQ(run(io, db.async_query("SELECT 2", asio::use_awaitable)).get<int>(0, 0), 2);
}

TEST_F(sqlite_pool, reset_on_return_rolls_back_and_resets_busy_statements) {
    sqlite::pool db(io.get_executor(), config(dir.file("reset.db"), 1));
    run(io, db.async_query("CREATE TABLE t (v INT)", asio::use_awaitable));
    run(io, db.async_query("INSERT INTO t VALUES (1), (2), (3)", asio::use_awaitable));
    ::sqlite3_stmt* left = nullptr;
    run(io, db.with_connection(
                [&](sqlite::connection& c) -> asio::awaitable<void> {
                    co_await c.async_query("BEGIN IMMEDIATE", asio::use_awaitable);
                    co_await c.async_query("INSERT INTO t VALUES (4)", asio::use_awaitable);
                    co_await c.async_run(
                        [&left](::sqlite3* h) {
                            ::sqlite3_prepare_v2(h, "SELECT v FROM t", -1, &left, nullptr);
                            ::sqlite3_step(left);  // one row of three: the statement stays busy
                        },
                        asio::use_awaitable);
                    EXPECT_TRUE(c.in_transaction());
                    EXPECT_TRUE(c.needs_reset());
                },
                asio::use_awaitable));
    // The writer pool has one connection: the same one, reset on its way back.
    run(io, db.with_connection(
                [&](sqlite::connection& c) -> asio::awaitable<void> {
                    EXPECT_FALSE(c.in_transaction());
                    bool autocommit = false, busy = true;
                    co_await c.async_run(
                        [&](::sqlite3* h) {
                            autocommit = ::sqlite3_get_autocommit(h) != 0;
                            busy = ::sqlite3_stmt_busy(left) != 0;
                            ::sqlite3_finalize(left);
                        },
                        asio::use_awaitable);
                    EXPECT_TRUE(autocommit);
                    EXPECT_FALSE(busy);
                    auto r = co_await c.async_query("SELECT count(*) FROM t", asio::use_awaitable);
                    EXPECT_EQ(r.get<int>(0, 0), 3);  // the borrower's INSERT was rolled back
                },
                asio::use_awaitable));
    EXPECT_EQ(db.writer_stats().idle, 1u);  // reset, not destroyed
}

TEST_F(sqlite_pool, sql_errors_carry_the_message_and_code) {
    sqlite::pool db(io.get_executor(), config(dir.file("errors.db"), 1));
    run(io, [&]() -> asio::awaitable<void> {
        co_await db.async_query(
            "CREATE TABLE p (id INTEGER PRIMARY KEY); "
            "CREATE TABLE c (id INTEGER PRIMARY KEY, p INT REFERENCES p(id), v INT CHECK (v > 0), u TEXT "
            "UNIQUE); "
            "CREATE TABLE n (v INT NOT NULL)",
            asio::use_awaitable);
        co_await db.async_query("INSERT INTO p VALUES (1)", asio::use_awaitable);
        co_await db.async_query("INSERT INTO c VALUES (1, 1, 1, 'x')", asio::use_awaitable);
        auto expect = [&](std::string sql, sqlite::condition cond) -> asio::awaitable<void> {
            auto [ec, r] = co_await db.async_query(std::move(sql), asio::as_tuple(asio::use_awaitable));
            EXPECT_EQ(ec, cond) << ec.message();
            EXPECT_EQ(ec, sqlite::condition::constraint_violation);
            EXPECT_EQ(ec.category(), sqlite::error_category());
            EXPECT_NE(sqlite::result_code_of(ec) & 0xff, 0);
        };
        co_await expect("INSERT INTO c VALUES (2, 1, 1, 'x')", sqlite::condition::unique_violation);
        co_await expect("INSERT INTO c VALUES (1, 1, 1, 'y')", sqlite::condition::unique_violation);
        co_await expect("INSERT INTO c VALUES (3, 99, 1, 'z')", sqlite::condition::foreign_key_violation);
        co_await expect("INSERT INTO c VALUES (4, 1, -1, 'w')", sqlite::condition::check_violation);
        co_await expect("INSERT INTO n VALUES (NULL)", sqlite::condition::not_null_violation);
        // The message: through with_connection's last_error.
        co_await db.with_connection(
            [](sqlite::connection& c) -> asio::awaitable<void> {
                auto [ec, r] = co_await c.async_query("SELEKT 1", asio::as_tuple(asio::use_awaitable));
                EXPECT_EQ(sqlite::result_code_of(ec), SQLITE_ERROR);
                EXPECT_NE(c.last_error().message.find("syntax error"), std::string::npos)
                    << c.last_error().message;
                EXPECT_EQ(c.last_error().offset, 0);
                auto [pe, pr] = co_await c.async_query("SELECT ?", sqlite::params(1, 2),
                                                       asio::as_tuple(asio::use_awaitable));
                EXPECT_EQ(pe, sqlite::error::parameter_count);
                auto [me, mr] = co_await c.async_query("SELECT ?; SELECT 2", sqlite::params(1),
                                                       asio::as_tuple(asio::use_awaitable));
                EXPECT_EQ(me, sqlite::error::multiple_statements);
            },
            asio::use_awaitable);
    }());
}

TEST_F(sqlite_pool, a_reader_refuses_writes_and_the_pool_routes_them_to_the_writer) {
    sqlite::pool db(io.get_executor(), config(dir.file("route.db"), 1));
    run(io, [&]() -> asio::awaitable<void> {
        co_await db.async_query("CREATE TABLE t (v INT)", asio::use_awaitable);
        co_await db.with_reader(
            [](sqlite::connection& c) -> asio::awaitable<void> {
                auto [ec, r] =
                    co_await c.async_query("INSERT INTO t VALUES (1)", asio::as_tuple(asio::use_awaitable));
                EXPECT_EQ(ec, sqlite::error::writes_on_reader);
                auto [se, sr] =
                    co_await c.async_query("SELECT 1; SELECT 2", asio::as_tuple(asio::use_awaitable));
                EXPECT_EQ(se, sqlite::error::writes_on_reader);
            },
            asio::use_awaitable);
        auto ins =
            co_await db.async_query("INSERT INTO t VALUES (?)", sqlite::params(7), asio::use_awaitable);
        EXPECT_EQ(ins.affected_rows(), 1u);
        EXPECT_EQ(co_await count(db), 1);
    }());
    EXPECT_GE(db.reader_stats().idle, 1u);
}

// The pragmas a connection runs with, read through SQLite's own handle (async_run: on a reader too,
// where a pragma through async_query might be refused as a possible write). A read first: a connection
// opened before the writer turned the file to WAL reports its old journal mode until it reads again.
asio::awaitable<std::map<std::string, std::string>> pragmas_of(sqlite::connection& c) {
    std::map<std::string, std::string> out;
    co_await c.async_run(
        [&out](::sqlite3* h) {
            EXPECT_EQ(::sqlite3_exec(h, "SELECT count(*) FROM sqlite_schema", nullptr, nullptr, nullptr),
                      SQLITE_OK);
            for (const char* name :
                 {"journal_mode", "synchronous", "foreign_keys", "query_only", "busy_timeout"}) {
                ::sqlite3_stmt* st = nullptr;
                const std::string sql = std::string("PRAGMA ") + name;
                if (::sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
                    ::sqlite3_step(st) == SQLITE_ROW)
                    out[name] = reinterpret_cast<const char*>(::sqlite3_column_text(st, 0));
                ::sqlite3_finalize(st);
            }
        },
        asio::use_awaitable);
    co_return out;
}

// Another process's write lock, as SQLite sees it: a connection of SQLite's own in a write transaction.
class lock_holder {
public:
    explicit lock_holder(const std::string& path) {
        EXPECT_EQ(::sqlite3_open(path.c_str(), &db_), SQLITE_OK);
        EXPECT_EQ(::sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
    }
    ~lock_holder() {
        release();
        ::sqlite3_close(db_);
    }
    void release() {
        if (::sqlite3_get_autocommit(db_) == 0) ::sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    }

private:
    ::sqlite3* db_ = nullptr;
};

// A write on the pool's writer while `lock` holds the write lock: its outcome and how long it took.
// `release_after`: the lock is released that long after the write began (none: held throughout).
std::pair<error_code, std::chrono::steady_clock::duration> write_against(
    asio::io_context& io, sqlite::pool& db, lock_holder& lock,
    std::optional<std::chrono::milliseconds> release_after) {
    const auto start = std::chrono::steady_clock::now();
    asio::steady_timer timer(io);
    if (release_after) {
        timer.expires_after(*release_after);
        timer.async_wait([&](error_code ec) {
            if (!ec) lock.release();
        });
    }
    auto [ec, r] = run(io, db.async_query("INSERT INTO t (v) VALUES (?)", sqlite::params(1),
                                          asio::as_tuple(asio::use_awaitable)));
    return {ec, std::chrono::steady_clock::now() - start};
}

TEST_F(sqlite_pool, the_default_settings_are_in_force_on_every_connection) {
    const std::string path = dir.file("defaults.db");
    sqlite::pool db(io.get_executor(), config(path, 1));
    EXPECT_EQ(db.config().busy_timeout, std::chrono::seconds(5));
    run(io, db.async_query("CREATE TABLE t (v INT)", asio::use_awaitable));
    auto writer =
        run(io, db.with_connection([](sqlite::connection& c) { return pragmas_of(c); }, asio::use_awaitable));
    auto reader =
        run(io, db.with_reader([](sqlite::connection& c) { return pragmas_of(c); }, asio::use_awaitable));
    EXPECT_EQ(writer["journal_mode"], "wal");
    EXPECT_EQ(writer["synchronous"], "1");  // NORMAL
    EXPECT_EQ(writer["foreign_keys"], "1");
    EXPECT_EQ(writer["query_only"], "0");
    EXPECT_EQ(reader["journal_mode"], "wal");  // the file's
    EXPECT_EQ(reader["synchronous"], "1");
    EXPECT_EQ(reader["foreign_keys"], "1");
    EXPECT_EQ(reader["query_only"], "1");
    // busy_timeout is a busy handler of the layer's own, which PRAGMA busy_timeout does not see (it
    // reads SQLite's own sleeper's setting, 0 once another handler is installed): a write against
    // another connection's lock waits, and succeeds once the lock goes 300 ms later.
    EXPECT_EQ(writer["busy_timeout"], "0");
    lock_holder lock(path);
    auto [ec, took] = write_against(io, db, lock, std::chrono::milliseconds(300));
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_GE(took, 300ms);
}

TEST_F(sqlite_pool, each_setting_overridden_in_the_config_is_in_force) {
    const std::string path = dir.file("overrides.db");
    auto cfg = config(path, 1);
    cfg.journal_mode = "DELETE";
    cfg.synchronous = "FULL";
    cfg.foreign_keys = false;
    cfg.busy_timeout = 100ms;
    sqlite::pool db(io.get_executor(), cfg);
    run(io, db.async_query("CREATE TABLE t (v INT)", asio::use_awaitable));
    auto writer =
        run(io, db.with_connection([](sqlite::connection& c) { return pragmas_of(c); }, asio::use_awaitable));
    auto reader =
        run(io, db.with_reader([](sqlite::connection& c) { return pragmas_of(c); }, asio::use_awaitable));
    EXPECT_EQ(writer["journal_mode"], "delete");
    EXPECT_EQ(writer["synchronous"], "2");  // FULL
    EXPECT_EQ(writer["foreign_keys"], "0");
    EXPECT_EQ(reader["journal_mode"], "delete");
    EXPECT_EQ(reader["synchronous"], "2");
    EXPECT_EQ(reader["foreign_keys"], "0");
    // A foreign key is not enforced.
    run(io, db.async_query("CREATE TABLE p (id INTEGER PRIMARY KEY); CREATE TABLE c (p INT REFERENCES p(id))",
                           asio::use_awaitable));
    auto [fk, fr] = run(io, db.async_query("INSERT INTO c VALUES (?)", sqlite::params(99),
                                           asio::as_tuple(asio::use_awaitable)));
    EXPECT_FALSE(fk) << fk.message();
    // The lock is held throughout: the write gives up with busy after 100 ms, long before the default 5 s.
    lock_holder lock(path);
    auto [ec, took] = write_against(io, db, lock, std::nullopt);
    EXPECT_EQ(ec, sqlite::condition::busy) << ec.message();
    EXPECT_GE(took, 100ms);
    EXPECT_LT(took, 4s);
}

// Denies BEGIN, COMMIT and ROLLBACK (sqlite3_set_authorizer): a transaction left open cannot be ended.
int deny_transactions(void*, int action, const char*, const char*, const char*, const char*) {
    return action == SQLITE_TRANSACTION ? SQLITE_DENY : SQLITE_OK;
}

TEST_F(sqlite_pool, a_connection_whose_reset_fails_is_destroyed_not_lent_again) {
    sqlite::pool db(io.get_executor(), config(dir.file("reset-fails.db"), 1));
    run(io, db.async_query("CREATE TABLE t (v INT)", asio::use_awaitable));
    run(io, db.with_connection(
                [](sqlite::connection& c) -> asio::awaitable<void> {
                    // This connection's own mark (a temporary table is per connection).
                    co_await c.async_query("CREATE TEMP TABLE mark (v INT)", asio::use_awaitable);
                    co_await c.async_query("BEGIN IMMEDIATE", asio::use_awaitable);
                    co_await c.async_query("INSERT INTO t VALUES (1)", asio::use_awaitable);
                    co_await c.async_run(
                        [](::sqlite3* h) { ::sqlite3_set_authorizer(h, &deny_transactions, nullptr); },
                        asio::use_awaitable);
                    auto [ec, r] = co_await c.async_query("ROLLBACK", asio::as_tuple(asio::use_awaitable));
                    EXPECT_EQ(sqlite::result_code_of(ec), SQLITE_AUTH) << ec.message();
                    EXPECT_TRUE(c.in_transaction());  // the reset's ROLLBACK will fail the same way
                },
                asio::use_awaitable));
    auto st = db.writer_stats();
    EXPECT_EQ(st.broken, 1u);  // before_release said no
    EXPECT_EQ(st.destructions, 1u);
    EXPECT_EQ(st.total, 0u);
    run(io, db.with_connection(
                [](sqlite::connection& c) -> asio::awaitable<void> {
                    auto mark = co_await c.async_query(
                        "SELECT count(*) FROM sqlite_temp_master WHERE name = 'mark'", asio::use_awaitable);
                    EXPECT_EQ(mark.get<int>(0, 0), 0) << "the connection whose reset failed was lent again";
                    EXPECT_FALSE(c.in_transaction());
                    auto n = co_await c.async_query("SELECT count(*) FROM t", asio::use_awaitable);
                    EXPECT_EQ(n.get<int>(0, 0), 0);  // the open transaction died with its connection
                    co_await c.async_query("INSERT INTO t VALUES (2)", asio::use_awaitable);
                },
                asio::use_awaitable));
    EXPECT_EQ(db.writer_stats().creations, 2u);
    EXPECT_EQ(db.writer_stats().broken, 1u);
}

// Tells the test (on its event loop) that the statement calling started() runs (sqlite3_create_function).
struct start_signal {
    asio::io_context* io = nullptr;
    asio::cancellation_signal* cancel = nullptr;
    int calls = 0;  // on the thread pool; read after the query completed
};

void started(::sqlite3_context* ctx, int, ::sqlite3_value**) {
    auto* s = static_cast<start_signal*>(::sqlite3_user_data(ctx));
    ++s->calls;
    asio::post(*s->io, [s] { s->cancel->emit(asio::cancellation_type::terminal); });
    ::sqlite3_result_int(ctx, 1);
}

TEST_F(sqlite_pool, cancelling_a_write_while_it_runs_stops_it_and_the_writer_is_lent_clean) {
    auto cfg = config(dir.file("cancel-write.db"), 0);  // no readers: everything on the writer
    cfg.statement_timeout = 20s;  // a cancellation that does not stop it fails the test, not hangs it
    sqlite::pool db(io.get_executor(), cfg);
    run(io, db.async_query("CREATE TABLE t (v INT)", asio::use_awaitable));
    asio::cancellation_signal cancel;
    start_signal signal{&io, &cancel};
    run(io, db.with_connection(
                [&](sqlite::connection& c) -> asio::awaitable<void> {
                    co_await c.async_run(
                        [&signal](::sqlite3* h) {
                            ASSERT_EQ(::sqlite3_create_function_v2(h, "started", 0, SQLITE_UTF8, &signal,
                                                                   &started, nullptr, nullptr, nullptr),
                                      SQLITE_OK);
                        },
                        asio::use_awaitable);
                },
                asio::use_awaitable));
    // Counts to two billion, then inserts the count; the count's first step calls started(), which has
    // the test cancel.
    std::optional<error_code> got;
    db.async_query(
        "INSERT INTO t (v) WITH RECURSIVE c(x) AS (SELECT started() UNION ALL SELECT x + 1 FROM c WHERE x < "
        "2000000000) SELECT count(*) FROM c",
        asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec, sqlite::result) { got = ec; }));
    io.run();
    io.restart();
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, asio::error::operation_aborted) << got->message();
    EXPECT_EQ(signal.calls, 1);  // it was running when cancelled
    auto st = db.writer_stats();
    EXPECT_EQ(st.creations, 1u);
    EXPECT_EQ(st.destructions, 0u);
    EXPECT_EQ(st.idle, 1u);
    run(io, db.with_connection(
                [](sqlite::connection& c) -> asio::awaitable<void> {
                    EXPECT_FALSE(c.in_transaction());
                    EXPECT_FALSE(c.needs_reset());
                    auto n = co_await c.async_query("SELECT count(*) FROM t", asio::use_awaitable);
                    EXPECT_EQ(n.get<int>(0, 0), 0);  // the interrupted INSERT left nothing
                    auto r = co_await c.async_query("INSERT INTO t VALUES (7)", asio::use_awaitable);
                    EXPECT_EQ(r.affected_rows(), 1u);
                },
                asio::use_awaitable));
    EXPECT_EQ(db.writer_stats().creations, 1u);  // the same connection, lent again
}

// The code blocks of the docs' Quickstart are verbatim parts of examples/sqlite_quickstart.cpp, which
// the tests build and run (example_sqlite_quickstart).
TEST(sqlite_docs, the_quickstart_shown_is_the_compiled_example) {
    const auto root = std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
    auto slurp = [](const std::filesystem::path& p) {
        std::ifstream in(p);
        EXPECT_TRUE(in) << p;
        std::ostringstream s;
        s << in.rdbuf();
        return s.str();
    };
    const std::string doc = slurp(root / "docs" / "07-sqlite.md");
    const std::string example = slurp(root / "examples" / "sqlite_quickstart.cpp");
    const auto begin = doc.find("\n## Quickstart\n");
    ASSERT_NE(begin, std::string::npos);
    const auto end = doc.find("\n## ", begin + 1);
    const std::string section = doc.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    int blocks = 0;
    for (auto at = section.find("```cpp\n"); at != std::string::npos; at = section.find("```cpp\n", at)) {
        at += 7;
        const auto close = section.find("```", at);
        ASSERT_NE(close, std::string::npos);
        const std::string code = section.substr(at, close - at);
        EXPECT_NE(example.find(code), std::string::npos) << "not in the example:\n" << code;
        ++blocks;
        at = close + 3;
    }
    EXPECT_GE(blocks, 1);
}

}  // namespace
