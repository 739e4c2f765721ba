// Rows and parameters against the real server: every integer type, durations as interval and arrays as
// PostgreSQL reads them (= ANY, unnest, the server's own text of the value), and rows read by name, one
// and scalar, and into structs, including the server types the errors name.
#include "pg_test_support.hpp"

#include <boost/describe/class.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

using namespace pg_test;
using namespace std::chrono_literals;

namespace {

class pg_rows : public ::testing::Test {
protected:
    void SetUp() override {
        if (conninfo().empty())
            GTEST_SKIP() << "RESPOOL_PG_CONNINFO_FILE not set: run through ctest -L integration";
    }
};

struct account {
    std::int64_t id = 0;
    std::string owner;
    std::optional<std::chrono::system_clock::time_point> closed;
};
BOOST_DESCRIBE_STRUCT(account, (), (id, owner, closed))

std::string invalid_argument_of(const pg::result& r) {
    try {
        (void)r.one<account>();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "did not throw std::invalid_argument";
}

}  // namespace

TEST_F(pg_rows, integers_durations_and_arrays_as_the_server_reads_them) {
    run([]() -> asio::awaitable<void> {
        admin a = co_await admin::open();
        pg::connection& c = a.connection();
        // Parameters built before the co_await: GCC 12 mishandles some temporaries in its full-expression.
        const std::vector<int> one{1};
        pg::params numbers(41LL, 2u, std::size_t{3}, std::uint64_t{9223372036854775807u}, 36h + 1500ms,
                           -std::chrono::microseconds(1), 1s, one);
        auto r = co_await c.async_query(
            "SELECT $1 + 1, $2::bigint, $3::bigint, $4, $5::interval::text, $6::interval::text, "
            "pg_typeof($7)::text, pg_typeof($8)::text",
            std::move(numbers), asio::use_awaitable);
        EXPECT_EQ(r.get<long long>(0, 0), 42);
        EXPECT_EQ(r.get<unsigned>(0, 1), 2u);
        EXPECT_EQ(r.get<std::size_t>(0, 2), 3u);
        EXPECT_EQ(r.get<std::uint64_t>(0, 3), 9223372036854775807u);
        EXPECT_EQ(r.text(0, 4), "36:00:01.5") << "a duration is all hours, never days of 24 h";
        EXPECT_EQ(r.text(0, 5), "-00:00:00.000001");
        EXPECT_EQ(r.text(0, 6), "interval");
        EXPECT_EQ(r.text(0, 7), "integer[]");

        // A duration comes back as itself, and the server's own intervals read as durations.
        auto back =
            co_await c.async_query("SELECT $1::interval, interval '1 day 1 hour', interval '-1 day 2 hours'",
                                   pg::params(90min), asio::use_awaitable);
        EXPECT_EQ(back.get<std::chrono::minutes>(0, 0), 90min);
        EXPECT_EQ(back.get<std::chrono::hours>(0, 1), 25h);
        EXPECT_EQ(back.get<std::chrono::hours>(0, 2), -22h) << back.text(0, 2);

        const std::vector<std::string> words{"pen", "ink", "it's \"quoted\", {braced}"};
        const std::vector<std::int64_t> ids{1, 2, 3};
        const std::vector<double> reals{0.5, -1};
        const std::vector<std::int16_t> empty;
        const std::vector<std::string_view> spaced{"a b"};
        const std::vector<unsigned> seven{7};
        pg::params lists(ids, reals, words, empty, spaced, seven);
        auto arrays = co_await c.async_query(
            "SELECT 2 = ANY($1), $2::text, (SELECT string_agg(w, '|' ORDER BY w) FROM unnest($3) AS w), "
            "cardinality($4), $5::text, $6::text",
            std::move(lists), asio::use_awaitable);
        EXPECT_TRUE(arrays.get<bool>(0, 0));
        EXPECT_EQ(arrays.text(0, 1), "{0.5,-1}");
        EXPECT_EQ(arrays.text(0, 2), "ink|it's \"quoted\", {braced}|pen") << "each element arrives as sent";
        EXPECT_EQ(arrays.get<int>(0, 3), 0);
        EXPECT_EQ(arrays.text(0, 4), "{\"a b\"}");
        EXPECT_EQ(arrays.text(0, 5), "{7}");
    });
}

TEST_F(pg_rows, rows_by_name_one_scalar_and_structs) {
    run([]() -> asio::awaitable<void> {
        admin a = co_await admin::open();
        pg::connection& c = a.connection();
        const pg::result accounts = co_await c.async_query(
            "SELECT * FROM (VALUES (1::bigint, 'ada', NULL::timestamptz), "
            "(2, 'grace', '2026-01-02 03:04:05+00')) AS t(id, owner, closed) ORDER BY id",
            asio::use_awaitable);
        std::string owners;
        for (pg::row row : accounts) owners += row.get<std::string>("owner") + ";";
        EXPECT_EQ(owners, "ada;grace;");
        const std::vector<account> all = accounts.all<account>();
        EXPECT_EQ(all.size(), 2u);
        if (all.size() == 2) {
            EXPECT_EQ(all[0].closed, std::nullopt);
            EXPECT_EQ(all[1].closed, std::chrono::sys_days{std::chrono::year(2026) / 1 / 2} + 3h + 4min + 5s);
        }

        const auto count =
            co_await c.async_query("SELECT count(*) FROM generate_series(1, 5)", asio::use_awaitable);
        EXPECT_EQ(count.scalar<std::int64_t>(), 5);
        const auto none = co_await c.async_query("SELECT 1 WHERE false", asio::use_awaitable);
        try {
            (void)none.one();
            ADD_FAILURE() << "no throw";
        } catch (const std::logic_error& e) {
            EXPECT_STREQ(e.what(),
                         "respool::pg::result: expected exactly one row, the statement returned no rows");
        }

        const auto wrong = co_await c.async_query(
            "SELECT 'x'::varchar AS id, 'ada' AS owner, NULL::timestamptz AS closed", asio::use_awaitable);
        EXPECT_EQ(invalid_argument_of(wrong),
                  "respool::pg::result: column \"id\" (character varying) holds \"x\", not a 64-bit integer "
                  "(std::int64_t)");
        const auto numeric = co_await c.async_query(
            "SELECT 1.5::numeric AS id, 'ada' AS owner, NULL::timestamptz AS closed", asio::use_awaitable);
        EXPECT_EQ(invalid_argument_of(numeric),
                  "respool::pg::result: column \"id\" (numeric) holds \"1.5\", not a 64-bit integer "
                  "(std::int64_t)");
    });
}
