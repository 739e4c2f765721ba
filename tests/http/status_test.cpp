// The error -> HTTP mapping (docs/08-http.md): every enumerator of respool::errc, pg::error and
// sqlite::error, the SQLSTATEs and SQLite result codes it singles out, and the error response.
#include <respool/db_condition.hpp>
#include <respool/http/response.hpp>
#include <respool/http/status.hpp>
#include <respool/pg/errors.hpp>
#include <respool/sqlite/errors.hpp>

#include <gtest/gtest.h>

#include <boost/asio/error.hpp>

#include <string>
#include <vector>

namespace {

namespace http = respool::http;
namespace pg = respool::pg;
namespace sqlite = respool::sqlite;
using respool::errc;
using respool::error_code;

struct row {
    error_code ec;
    unsigned status;
    bool retry_after;
    std::string error;
};

void expect_rows(const std::vector<row>& rows) {
    for (const auto& r : rows) {
        SCOPED_TRACE(r.ec.category().name() + std::string(":") + std::to_string(r.ec.value()) + " " +
                     r.ec.message());
        const auto m = http::map_error(r.ec);
        EXPECT_EQ(m.status, r.status);
        EXPECT_EQ(m.retry_after, r.retry_after);
        EXPECT_EQ(m.error, r.error);
        EXPECT_FALSE(m.message.empty());
    }
}

TEST(http_status, every_pool_error_has_its_status) {
    expect_rows({
        {errc::closed, 503, true, "pool_closed"},
        {errc::timeout, 503, true, "pool_timeout"},
        {errc::cancelled, 503, true, "cancelled"},
        {errc::unavailable, 503, true, "circuit_open"},
        {errc::exhausted, 503, true, "pool_exhausted"},
        {errc::create_failed, 503, true, "database_unavailable"},
        {errc::broken, 500, false, "internal_error"},
        {errc::poisoned, 500, false, "internal_error"},
        {errc::not_supported, 500, false, "internal_error"},
        {errc::hook_timeout, 503, true, "database_unavailable"},
    });
}

TEST(http_status, every_pg_error_has_its_status) {
    expect_rows({
        {pg::error::bad_connection_string, 500, false, "internal_error"},
        {pg::error::connect_failed, 503, true, "database_unavailable"},
        {pg::error::authentication_failed, 503, true, "database_unavailable"},
        {pg::error::connect_timeout, 503, true, "database_unavailable"},
        {pg::error::connection_broken, 503, true, "database_unavailable"},
        {pg::error::not_connected, 503, true, "database_unavailable"},
        {pg::error::busy, 500, false, "internal_error"},
        {pg::error::statement_timeout, 504, false, "statement_timeout"},
    });
}

TEST(http_status, sqlstates_of_an_unreachable_server_are_503_and_a_cancelled_statement_504) {
    expect_rows({
        {pg::sqlstate_error("08006"), 503, true, "database_unavailable"},  // connection_failure
        {pg::sqlstate_error("08001"), 503, true, "database_unavailable"},
        {pg::sqlstate_error("57P01"), 503, true, "database_unavailable"},  // admin_shutdown
        {pg::sqlstate_error("57P02"), 503, true, "database_unavailable"},
        {pg::sqlstate_error("57P03"), 503, true, "database_unavailable"},  // cannot_connect_now
        {pg::sqlstate_error("53300"), 503, true, "database_unavailable"},  // too_many_connections
        {pg::sqlstate_error("28P01"), 503, true, "database_unavailable"},  // invalid_password
        {pg::sqlstate_error("25006"), 503, true, "database_unavailable"},  // read-only: a failover
        {pg::sqlstate_error("57014"), 504, false, "statement_timeout"},    // query_canceled
        {pg::sqlstate_error("23505"), 500, false, "database_error"},       // unique_violation
        {pg::sqlstate_error("40001"), 500, false, "database_error"},       // serialization_failure
        {pg::sqlstate_error("40P01"), 500, false, "database_error"},       // deadlock
        {pg::sqlstate_error("42601"), 500, false, "database_error"},       // syntax_error
        {pg::sqlstate_error("53100"), 500, false, "database_error"},       // disk_full
        {pg::sqlstate_error("57000"), 500, false, "database_error"},       // operator_intervention
    });
}

TEST(http_status, every_sqlite_error_has_its_status) {
    expect_rows({
        {sqlite::error::statement_timeout, 504, false, "statement_timeout"},
        {sqlite::error::not_open, 503, true, "database_unavailable"},
        {sqlite::error::operation_in_progress, 500, false, "internal_error"},
        {sqlite::error::writes_on_reader, 500, false, "internal_error"},
        {sqlite::error::multiple_statements, 500, false, "internal_error"},
        {sqlite::error::parameter_count, 500, false, "internal_error"},
    });
}

TEST(http_status, sqlite_result_codes_map_by_their_primary_code) {
    expect_rows({
        {sqlite::from_result_code(5), 503, true, "database_unavailable"},    // SQLITE_BUSY
        {sqlite::from_result_code(517), 503, true, "database_unavailable"},  // SQLITE_BUSY_SNAPSHOT
        {sqlite::from_result_code(6), 503, true, "database_unavailable"},    // SQLITE_LOCKED
        {sqlite::from_result_code(14), 503, true, "database_unavailable"},   // SQLITE_CANTOPEN
        {sqlite::from_result_code(526), 503, true, "database_unavailable"},  // SQLITE_CANTOPEN_ISDIR
        {sqlite::from_result_code(10), 503, true, "database_unavailable"},   // SQLITE_IOERR
        {sqlite::from_result_code(266), 503, true, "database_unavailable"},  // SQLITE_IOERR_READ
        {sqlite::from_result_code(9), 504, false, "statement_timeout"},      // SQLITE_INTERRUPT
        {sqlite::from_result_code(2067), 500, false, "database_error"},      // SQLITE_CONSTRAINT_UNIQUE
        {sqlite::from_result_code(11), 500, false, "database_error"},        // SQLITE_CORRUPT
        {sqlite::from_result_code(26), 500, false, "database_error"},        // SQLITE_NOTADB
        {sqlite::from_result_code(13), 500, false, "database_error"},        // SQLITE_FULL
        {sqlite::from_result_code(8), 500, false, "database_error"},         // SQLITE_READONLY
        {sqlite::from_result_code(1), 500, false, "database_error"},         // SQLITE_ERROR
    });
}

TEST(http_status, unknown_errors_and_no_error_are_500_and_a_cancelled_operation_503) {
    expect_rows({
        {boost::asio::error::operation_aborted, 503, true, "cancelled"},
        {boost::asio::error::connection_refused, 500, false, "internal_error"},
        {error_code{}, 500, false, "internal_error"},
    });
}

TEST(http_status, misuse_of_a_connection_is_an_internal_error) {
    expect_rows({
        {pg::error::unsupported_statement, 500, false, "internal_error"},  // COPY through async_query
        {sqlite::error::session_not_restorable, 500, false, "internal_error"},
    });
}

// A database layer respool::http has never heard of: its codes say which neutral conditions they mean
// (value n means db::condition n), and the mapping follows what they mean, not whose they are.
class other_database final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "other.database"; }
    std::string message(int v) const override { return "other database error " + std::to_string(v); }
    bool equivalent(int v, const boost::system::error_condition& cond) const noexcept override {
        return cond.category() == respool::db::condition_category() && cond.value() == v;
    }
};

TEST(http_status, another_database_s_codes_map_through_the_neutral_conditions) {
    static const other_database other;
    using respool::db::condition;
    const auto code = [](condition c) { return error_code(static_cast<int>(c), other); };
    expect_rows({
        {code(condition::unavailable), 503, true, "database_unavailable"},
        {code(condition::busy), 503, true, "database_unavailable"},
        {code(condition::statement_timeout), 504, false, "statement_timeout"},
        {code(condition::cancelled), 503, true, "cancelled"},
        {code(condition::database_error), 500, false, "database_error"},
        {code(condition::invalid_statement), 500, false, "internal_error"},  // not the database's own
        {error_code(0x7fff, other), 500, false, "internal_error"},
    });
}

TEST(http_status, the_body_is_json_with_the_fixed_texts) {
    EXPECT_EQ(http::error_body(http::map_error(errc::exhausted)),
              R"({"error":"pool_exhausted","message":"no database connection is free; retry"})");
    EXPECT_EQ(http::error_body({500, false, "x\"y", "a\\b\nc"}),
              R"({"error":"x\"y","message":"a\\b\u000ac"})");
}

TEST(http_status, the_body_says_nothing_of_the_error_text) {
    // The error's own message is not the client's business (for a connect failure it may be libpq's,
    // which names the host and user): only the table's text reaches the body.
    for (error_code ec : {error_code(pg::error::authentication_failed), error_code(pg::error::connect_failed),
                          pg::sqlstate_error("28P01"), sqlite::from_result_code(14)}) {
        const std::string body = http::error_body(http::map_error(ec));
        EXPECT_EQ(body.find(ec.message()), std::string::npos) << body;
        EXPECT_EQ(body, R"({"error":"database_unavailable","message":"the database cannot be reached"})");
    }
}

TEST(http_status, error_response_sets_status_retry_after_and_json) {
    namespace bh = boost::beast::http;
    auto res = http::error_response(errc::timeout, 11, true);
    EXPECT_EQ(res.result_int(), 503u);
    EXPECT_EQ(res[bh::field::retry_after], "1");
    EXPECT_EQ(res[bh::field::content_type], "application/json");
    EXPECT_EQ(res[bh::field::content_length], std::to_string(res.body().size()));
    EXPECT_TRUE(res.keep_alive());
    EXPECT_EQ(res.version(), 11u);

    auto late = http::error_response(pg::error::statement_timeout, 10, false);
    EXPECT_EQ(late.result_int(), 504u);
    EXPECT_EQ(late.count(bh::field::retry_after), 0u);
    EXPECT_FALSE(late.keep_alive());
    EXPECT_EQ(late.body(),
              R"({"error":"statement_timeout","message":"the statement ran past its deadline"})");
}

}  // namespace
