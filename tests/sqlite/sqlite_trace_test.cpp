// The statement tracer (respool/trace.hpp) on sqlite::pool: each statement of the borrowers as it
// ends, on every path (the writer alone, a read batch, a group commit, a transaction), with its text,
// parameters, rows, duration, error and SQLite's words, and the database file as its host.
#include "sqlite_test_support.hpp"

#include <respool/trace.hpp>

#include <boost/asio/as_tuple.hpp>

#include <mutex>
#include <vector>

using namespace sqlite_test;

namespace {

struct seen {
    std::string sql;
    std::size_t parameters;
    std::uint64_t rows;
    respool::error_code error;
    std::string message, host;
    std::chrono::nanoseconds duration;
};

struct recording_tracer : respool::statement_tracer {
    std::mutex m;  // called on the pool's worker threads
    std::vector<seen> all;
    void on_statement(const respool::statement_trace& t) noexcept override {
        std::lock_guard lock(m);
        all.push_back({std::string(t.sql), t.parameters, t.rows, t.error, std::string(t.message),
                       std::string(t.host), t.duration});
    }
    std::vector<seen> take() {
        std::lock_guard lock(m);
        return std::exchange(all, {});
    }
};

}  // namespace

TEST(sqlite_trace, every_statement_on_every_path_is_told_with_its_rows_error_and_file) {
    temp_dir dir;
    asio::io_context io;
    auto tracer = std::make_shared<recording_tracer>();
    auto cfg = config(dir.file("trace.db"));
    cfg.tracer = tracer;
    sqlite::pool db(io.get_executor(), cfg);
    auto body = [&]() -> asio::awaitable<void> {
        co_await db.async_query("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)", asio::use_awaitable);
        // Writes (through the writer's group commit), a read (a reader's batch), a failure, a transaction.
        for (int i = 0; i < 4; ++i)
            co_await db.async_query("INSERT INTO t (v) VALUES (?)", sqlite::params("x"), asio::use_awaitable);
        const sqlite::result r =
            co_await db.async_query("SELECT id FROM t WHERE v = ?", sqlite::params("x"), asio::use_awaitable);
        EXPECT_EQ(r.rows(), 4u);
        auto [ec, bad] = co_await db.async_query("SELECT * FROM nope", asio::as_tuple(asio::use_awaitable));
        EXPECT_TRUE(ec);
        co_await db.transaction(
            [](sqlite::connection& c) -> asio::awaitable<void> {
                co_await c.async_query("UPDATE t SET v = 'y'", asio::use_awaitable);
            },
            {}, asio::use_awaitable);
        db.close();
    };
    run(io, body());
    const std::vector<seen> s = tracer->take();
    std::string texts;
    int creates = 0, inserts = 0, selects = 0, failed = 0, updates = 0;
    for (const seen& x : s) {
        texts += x.sql + " | ";
        EXPECT_EQ(x.host, dir.file("trace.db"));
        creates += x.sql.rfind("CREATE TABLE", 0) == 0;
        if (x.sql == "INSERT INTO t (v) VALUES (?)") {
            ++inserts;
            EXPECT_EQ(x.parameters, 1u);
            EXPECT_EQ(x.rows, 1u);  // affected
        }
        if (x.sql == "SELECT id FROM t WHERE v = ?") {
            ++selects;
            EXPECT_EQ(x.rows, 4u);
        }
        if (x.sql == "SELECT * FROM nope") {
            ++failed;
            EXPECT_TRUE(x.error);
            EXPECT_NE(x.message.find("no such table: nope"), std::string::npos) << x.message;
        }
        if (x.sql == "UPDATE t SET v = 'y'") {
            ++updates;
            EXPECT_EQ(x.rows, 4u);
        }
        EXPECT_GE(x.duration.count(), 0);
    }
    EXPECT_EQ(creates, 1) << texts;  // not also the reader's refusal before the writer ran it
    EXPECT_EQ(inserts, 4) << texts;
    EXPECT_EQ(selects, 1) << texts;
    EXPECT_EQ(failed, 1) << texts;
    EXPECT_EQ(updates, 1) << texts;
}
