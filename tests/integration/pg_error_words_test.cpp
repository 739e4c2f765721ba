// The pool-level operations of respool::pg::pool carry the server's words, not only the SQLSTATE:
// async_query with a respool::diagnostics* (message in words, error rethrowable as
// pg::error_with_diagnostics), on its own connection and pipelined, and the exceptions of
// with_connection and transaction. Against the test server (pg_cluster); a wrong password is a real
// authentication failure there (scram-sha-256 over TCP).
#include "pg_test_support.hpp"

#include <respool/pg/pool.hpp>

#include <string>

using namespace pg_test;

namespace {

class pg_error_words : public ::testing::Test {
protected:
    void SetUp() override {
        if (conninfo().empty())
            GTEST_SKIP() << "RESPOOL_PG_CONNINFO_FILE not set: run through ctest -L integration";
    }
};

pg::pool_config config(const std::string& app, std::size_t pipeline_depth = 1) {
    pg::pool_config c;
    c.conninfo = tagged(app);
    c.statements = pg_test::statements();
    c.max = 2;
    c.min_idle = 0;
    c.pipeline_depth = pipeline_depth;
    return c;
}

constexpr const char* missing_table = R"(relation "nope" does not exist (SQLSTATE 42P01))";

// The rethrown diagnostics.error: the driver's own exception with the server's fields.
void expect_server_error(const respool::diagnostics& diag, const std::string& sqlstate) {
    ASSERT_TRUE(diag.error);
    try {
        std::rethrow_exception(diag.error);
    } catch (const pg::error_with_diagnostics& e) {
        EXPECT_EQ(e.get_diagnostics().sqlstate, sqlstate);
        EXPECT_EQ(e.get_diagnostics().severity, "ERROR");
        EXPECT_STREQ(e.what(), diag.message.c_str());
    } catch (...) {
        ADD_FAILURE() << "diag.error is not a pg::error_with_diagnostics";
    }
}

}  // namespace

TEST_F(pg_error_words, a_failed_query_on_the_pool_says_what_the_server_said) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, config("t_words_query"));
        respool::diagnostics diag;
        auto [ec, r] =
            co_await db.async_query("SELECT * FROM nope", &diag, asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, pg::condition::undefined_table);
        EXPECT_EQ(diag.message, missing_table);
        expect_server_error(diag, "42P01");

        // With parameters, and cleared by the next operation that succeeds.
        auto [ec2, r2] = co_await db.async_query("SELECT $1::int", pg::params(7), &diag,
                                                 asio::as_tuple(asio::use_awaitable));
        EXPECT_FALSE(ec2) << ec2.message();
        EXPECT_EQ(diag.message, "");
        EXPECT_FALSE(diag.error);
        auto [ec3, r3] = co_await db.async_query("SELECT $1::int FROM nope", pg::params(7), &diag,
                                                 asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec3, pg::condition::undefined_table);
        EXPECT_EQ(diag.message, missing_table);
        EXPECT_EQ(db.stats().poisoned, 0u) << "an SQL error returns the connection";
    });
}

TEST_F(pg_error_words, a_failed_pipelined_query_says_what_the_server_said) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, config("t_words_pipelined", 4));
        respool::diagnostics bad, good;
        auto [ec1, r1] = co_await db.async_query("SELECT $1::int FROM nope", pg::params(1), &bad,
                                                 asio::as_tuple(asio::use_awaitable));
        auto [ec2, r2] = co_await db.async_query("SELECT $1::int / 0", pg::params(1), &good,
                                                 asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec1, pg::condition::undefined_table);
        EXPECT_EQ(bad.message, missing_table);
        expect_server_error(bad, "42P01");
        EXPECT_EQ(pg::sqlstate_of(ec2), "22012");
        EXPECT_EQ(good.message, "division by zero (SQLSTATE 22012)");
    });
}

TEST_F(pg_error_words, with_connection_and_transaction_throw_the_server_s_words) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, config("t_words_with"));
        try {
            co_await db.with_connection(
                [](pg::connection& c) -> asio::awaitable<void> {
                    co_await c.async_query("SELECT * FROM nope", asio::use_awaitable);
                },
                asio::use_awaitable);
            ADD_FAILURE() << "no exception";
        } catch (const boost::system::system_error& e) {
            EXPECT_EQ(e.code(), pg::condition::undefined_table);
            EXPECT_STREQ(e.what(), missing_table);
        }
        try {
            co_await db.transaction(
                [](pg::connection& c) -> asio::awaitable<void> {
                    co_await c.async_query("SELECT 1", asio::use_awaitable);
                    co_await c.async_query("SELECT * FROM nope WHERE x = $1", pg::params(1),
                                           asio::use_awaitable);
                },
                {}, asio::use_awaitable);
            ADD_FAILURE() << "no exception";
        } catch (const pg::error_with_diagnostics& e) {
            EXPECT_EQ(e.code(), pg::condition::undefined_table);
            EXPECT_STREQ(e.what(), missing_table);
            EXPECT_EQ(e.get_diagnostics().sqlstate, "42P01");
        } catch (const std::exception& e) {
            ADD_FAILURE() << "not a pg::error_with_diagnostics: " << e.what();
        }
        // The caller's own exception goes on as it was.
        try {
            co_await db.with_connection(
                [](pg::connection&) -> asio::awaitable<void> {
                    throw std::runtime_error("mine");
                    co_return;
                },
                asio::use_awaitable);
        } catch (const std::runtime_error& e) {
            EXPECT_STREQ(e.what(), "mine");
        }
        EXPECT_EQ(db.stats().poisoned, 0u);
    });
}

TEST_F(pg_error_words, a_failed_connect_says_why_without_the_password) {
    run([]() -> asio::awaitable<void> {
        pg::pool_config c = config("t_words_auth");
        c.conninfo += " password=wrong-secret-xyz";  // the last password= wins
        c.circuit.reset();
        pg::pool db(co_await asio::this_coro::executor, c);
        respool::diagnostics diag;
        auto [ec, r] = co_await db.async_query("SELECT 1", &diag, asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, pg::error::authentication_failed) << ec.message();
        EXPECT_NE(diag.message.find("password authentication failed"), std::string::npos) << diag.message;
        EXPECT_EQ(diag.message.find("wrong-secret-xyz"), std::string::npos) << diag.message;
    });
}
