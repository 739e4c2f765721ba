// The statement tracer (respool/trace.hpp) on a real server: what it is told of each statement a
// pool's connection runs (its text, parameters, rows, duration, error and words, host, backend pid),
// the session reset marked as the pool's own, the transaction's and pipelined statements traced one
// by one, and a connection's own tracer.
#include "pg_test_support.hpp"

#include <respool/pg/pool.hpp>
#include <respool/trace.hpp>

#include <mutex>
#include <vector>

namespace {

using namespace pg_test;

struct seen {
    std::string sql;
    std::size_t parameters;
    std::chrono::nanoseconds duration;
    std::uint64_t rows;
    respool::error_code error;
    std::string message, host;
    int backend_pid;
    bool pool_statement;
};

struct recording_tracer : respool::statement_tracer {
    std::mutex m;
    std::vector<seen> all;
    void on_statement(const respool::statement_trace& t) noexcept override {
        std::lock_guard lock(m);
        all.push_back({std::string(t.sql), t.parameters, t.duration, t.rows, t.error, std::string(t.message),
                       std::string(t.host), t.backend_pid, t.pool_statement});
    }
    std::vector<seen> take() {
        std::lock_guard lock(m);
        return std::exchange(all, {});
    }
};

class pg_trace : public ::testing::Test {
protected:
    void SetUp() override {
        if (conninfo().empty()) GTEST_SKIP() << "RESPOOL_PG_CONNINFO_FILE not set (run through ctest)";
    }
};

TEST_F(pg_trace, every_statement_is_told_with_its_text_rows_time_error_host_and_backend) {
    auto tracer = std::make_shared<recording_tracer>();
    run([&]() -> asio::awaitable<void> {
        pg::pool_config c{.conninfo = conninfo(), .max = 1, .min_idle = 0, .statements = statements()};
        c.tracer = tracer;
        pg::pool db(co_await asio::this_coro::executor, c);
        const pg::result pid = co_await db.async_query("SELECT pg_backend_pid()", asio::use_awaitable);
        co_await db.async_query("SELECT g FROM generate_series(1, $1::int) g", pg::params(7),
                                asio::use_awaitable);
        co_await db.async_query("SELECT pg_sleep(0.05)", asio::use_awaitable);
        auto [ec, r] =
            co_await db.async_query("SELECT 1 / $1::int", pg::params(0), asio::as_tuple(asio::use_awaitable));
        EXPECT_TRUE(ec);
        // A session change: the reset on return runs (the pool's own statement).
        co_await db.async_query("SET application_name = 'traced'", asio::use_awaitable);
        co_await db.async_query("SELECT 1", asio::use_awaitable);
        db.close();

        const std::vector<seen> s = tracer->take();
        std::vector<const seen*> user;
        const seen* reset = nullptr;
        for (const seen& x : s) {
            if (x.pool_statement)
                reset = &x;
            else
                user.push_back(&x);
        }
        if (user.size() != 6)
            co_return ADD_FAILURE() << "expected 6 statements of the borrowers, saw " << user.size();
        const int backend = pid.get<std::int32_t>(0, 0);
        EXPECT_EQ(user[0]->sql, "SELECT pg_backend_pid()");
        EXPECT_EQ(user[0]->parameters, 0u);
        EXPECT_EQ(user[0]->rows, 1u);
        EXPECT_EQ(user[1]->parameters, 1u);
        EXPECT_EQ(user[1]->rows, 7u);
        EXPECT_GE(user[2]->duration, 50ms);
        EXPECT_EQ(user[3]->error, ec);
        EXPECT_NE(user[3]->message.find("division by zero"), std::string::npos) << user[3]->message;
        for (const seen* x : user) {
            EXPECT_EQ(x->backend_pid, backend) << x->sql;  // one connection (max 1)
            EXPECT_EQ(x->host.rfind("127.0.0.1:", 0), 0u) << x->host;
            EXPECT_GT(x->duration.count(), 0) << x->sql;
            if (x != user[3]) {
                EXPECT_FALSE(x->error) << x->sql;
            }
        }
        if (!reset) co_return ADD_FAILURE() << "the reset on return was not traced";
        EXPECT_NE(reset->sql.find("RESET ALL"), std::string::npos) << reset->sql;
    });
}

TEST_F(pg_trace, the_transaction_statements_and_pipelined_statements_are_traced) {
    auto tracer = std::make_shared<recording_tracer>();
    run([&]() -> asio::awaitable<void> {
        pg::pool_config c{.conninfo = conninfo(), .max = 1, .min_idle = 0, .statements = statements()};
        c.tracer = tracer;
        c.pipeline_depth = behind_pooler() ? 1 : 8;
        pg::pool db(co_await asio::this_coro::executor, c);
        co_await db.transaction(
            [](pg::connection& conn) -> asio::awaitable<void> {
                co_await conn.async_query("SELECT $1::text", pg::params("in a transaction"),
                                          asio::use_awaitable);
            },
            {}, asio::use_awaitable);
        for (int i = 0; i < 3; ++i)
            co_await db.async_query("SELECT $1::int + 1", pg::params(i), asio::use_awaitable);
        db.close();
        const std::vector<seen> s = tracer->take();
        std::string texts;
        int plus_one = 0, in_txn = 0, commit = 0;
        for (const seen& x : s) {
            texts += x.sql + " | ";
            plus_one += x.sql == "SELECT $1::int + 1" && x.rows == 1 && x.parameters == 1;
            in_txn += x.sql.find("SELECT $1::text") != std::string::npos;
            commit += x.sql == "COMMIT";
        }
        EXPECT_EQ(plus_one, 3) << texts;
        EXPECT_EQ(in_txn, 1) << texts;
        EXPECT_EQ(commit, 1) << texts;
    });
}

TEST_F(pg_trace, without_a_tracer_nothing_is_told_and_a_connection_takes_one_of_its_own) {
    auto tracer = std::make_shared<recording_tracer>();
    run([&]() -> asio::awaitable<void> {
        pg::connection conn(co_await asio::this_coro::executor);
        co_await conn.async_connect(conninfo(), 10s, asio::use_awaitable);
        co_await conn.async_query("SELECT 1", asio::use_awaitable);
        EXPECT_TRUE(tracer->take().empty());
        conn.set_tracer(tracer);
        co_await conn.async_query("SELECT 2", asio::use_awaitable);
        conn.set_tracer(nullptr);
        co_await conn.async_query("SELECT 3", asio::use_awaitable);
        const auto s = tracer->take();
        if (s.size() != 1u) co_return ADD_FAILURE() << s.size();
        EXPECT_EQ(s[0].sql, "SELECT 2");
    });
}

}  // namespace
