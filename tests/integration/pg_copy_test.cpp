// COPY on a real server: 10,000 rows in and out in both formats, through a pool and on a held
// connection; values that need escaping (tab, newline, backslash, NULL, unicode) come back as they
// went in; rows from tuples and described structs; a deadline and an Asio cancellation in the middle of
// a COPY (the table unchanged, the connection usable after); a value the server refuses (its words in
// the error); a rows' range and a sink that throw (copy_aborted, the exception's words).
#include "pg_table_lock.hpp"
#include "pg_test_support.hpp"

#include <respool/pg/pool.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/post.hpp>
#include <boost/describe/class.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <ranges>
#include <string>
#include <tuple>
#include <vector>

namespace copy_test {
struct reading {
    std::int32_t id;
    std::string sensor;
    std::optional<std::int64_t> value;
    double ratio;
};
BOOST_DESCRIBE_STRUCT(reading, (), (id, sensor, value, ratio))
}  // namespace copy_test

namespace {

using namespace pg_test;
using copy_test::reading;
using respool::error_code;

constexpr int ten_thousand = 10'000;
// (Named, not a braced list in the loop: GCC 12 mishandles initializer lists inside coroutines.)
constexpr std::array<pg::copy_format, 2> both_formats{pg::copy_format::text, pg::copy_format::binary};

std::vector<reading> readings(int n) {
    std::vector<reading> out;
    out.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i)
        out.push_back({i, "sensor-" + std::to_string(i % 7),
                       i % 10 == 0 ? std::nullopt : std::optional<std::int64_t>(std::int64_t{i} * 1000),
                       i / 4.0});
    return out;
}

class pg_copy : public ::testing::Test {
protected:
    void SetUp() override {
        if (conninfo().empty()) GTEST_SKIP() << "RESPOOL_PG_CONNINFO_FILE not set (run through ctest)";
        run([]() -> asio::awaitable<void> {
            admin a = co_await admin::open();
            co_await a.query(
                "DROP TABLE IF EXISTS copy_t; CREATE TABLE copy_t (id int4 PRIMARY KEY, sensor text, value "
                "int8, "
                "ratio float8)");
        });
    }
    pg::pool_config config() const {
        return {.conninfo = conninfo(), .max = 1, .min_idle = 0, .statements = statements()};
    }
};

asio::awaitable<pg::connection> connect() {
    pg::connection c(co_await asio::this_coro::executor);
    c.set_statement_mode(statements());
    co_await c.async_connect(conninfo(), 10s, asio::use_awaitable);
    co_return c;
}

TEST_F(pg_copy, ten_thousand_described_structs_go_in_and_come_out_in_both_formats) {
    const auto cfg = config();
    run([&]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, cfg);
        const std::vector<reading> rows = readings(ten_thousand);
        for (const pg::copy_format f : both_formats) {
            SCOPED_TRACE(f == pg::copy_format::text ? "text" : "binary");
            co_await db.async_query("TRUNCATE copy_t", asio::use_awaitable);
            const pg::copy_options o{.format = f};
            const std::uint64_t in = co_await db.async_copy_in("copy_t", rows, o, asio::use_awaitable);
            EXPECT_EQ(in, std::uint64_t{ten_thousand});
            const pg::result r = co_await db.async_query(
                "SELECT count(*), count(value), sum(id)::int8, sum(ratio)::float8 FROM copy_t",
                asio::use_awaitable);
            EXPECT_EQ(r.get<std::int64_t>(0, 0), ten_thousand);
            EXPECT_EQ(r.get<std::int64_t>(0, 1), ten_thousand - ten_thousand / 10);
            EXPECT_EQ(r.get<std::int64_t>(0, 2), std::int64_t{ten_thousand} * (ten_thousand - 1) / 2);
            EXPECT_DOUBLE_EQ(r.get<double>(0, 3), (ten_thousand - 1) * ten_thousand / 2 / 4.0);
            const pg::result back =
                co_await db.async_query("SELECT * FROM copy_t WHERE id = 4321", asio::use_awaitable);
            const reading one = back.row(0).as<reading>();
            EXPECT_EQ(one.sensor, rows[4321].sensor);
            EXPECT_EQ(one.value, rows[4321].value);
            EXPECT_EQ(one.ratio, rows[4321].ratio);

            std::size_t pieces = 0, bytes = 0;
            std::string first;
            auto sink = [&](std::string_view piece) {
                if (pieces++ == 0) first = piece;
                bytes += piece.size();
            };
            const std::uint64_t out =
                co_await db.async_copy_out("SELECT * FROM copy_t ORDER BY id", sink, o, asio::use_awaitable);
            EXPECT_EQ(out, std::uint64_t{ten_thousand});
            EXPECT_GT(bytes, std::size_t{ten_thousand} * 10);
            if (f == pg::copy_format::text) {
                EXPECT_EQ(pieces, std::size_t{ten_thousand});  // one row each
                EXPECT_EQ(first, "0\tsensor-0\t\\N\t0\n");
            } else {
                EXPECT_EQ(first.substr(0, 11), std::string("PGCOPY\n\377\r\n\0", 11));
            }
        }
        db.close();
    });
}

TEST_F(pg_copy, values_that_need_escaping_come_back_as_they_went_in_from_tuples_on_a_held_connection) {
    using row = std::tuple<std::int32_t, std::optional<std::string>>;
    const std::vector<row> rows{{1, "tab\there"},
                                {2, "new\nline\r\n"},
                                {3, "back\\slash \\N"},
                                {4, std::nullopt},
                                {5, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x98"},
                                {6, ""},
                                {7, "\\."}};
    const std::vector<std::string> want{"tab\\there\n", "new\\nline\\r\\n\n", "back\\\\slash \\\\N\n",
                                        "\\N\n"};
    run([&]() -> asio::awaitable<void> {
        pg::connection c = co_await connect();
        for (const pg::copy_format f : both_formats) {
            SCOPED_TRACE(f == pg::copy_format::text ? "text" : "binary");
            co_await c.async_query("TRUNCATE copy_t", asio::use_awaitable);
            const std::uint64_t n =
                co_await c.async_copy_in("copy_t (id, sensor)", rows, {.format = f}, asio::use_awaitable);
            EXPECT_EQ(n, rows.size());
            const pg::result r =
                co_await c.async_query("SELECT id, sensor FROM copy_t ORDER BY id", asio::use_awaitable);
            if (r.rows() != rows.size()) co_return ADD_FAILURE() << r.rows();
            for (std::size_t i = 0; i < rows.size(); ++i)
                EXPECT_EQ(r.get<std::optional<std::string>>(i, 1), std::get<1>(rows[i])) << i;
        }
        std::vector<std::string> lines;
        auto sink = [&](std::string_view line) { lines.emplace_back(line); };
        co_await c.async_copy_out("SELECT sensor FROM copy_t WHERE id <= 4 ORDER BY id", sink, {},
                                  asio::use_awaitable);
        EXPECT_EQ(lines, want);
    });
}

// A generator of rows far longer than any deadline here lets run.
auto endless_rows() {
    return std::views::iota(0, 100'000'000) | std::views::transform([](int i) {
               return std::tuple<std::int32_t, std::string>{i, "filler text"};
           });
}

TEST_F(pg_copy, a_deadline_mid_copy_rolls_it_back_and_the_connection_stays_usable) {
    run([&]() -> asio::awaitable<void> {
        pg::connection c = co_await connect();
        c.set_statement_timeout(300ms);
        const auto started = std::chrono::steady_clock::now();
        auto [ec, n] = co_await c.async_copy_in("copy_t (id, sensor)", endless_rows(), {},
                                                asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, pg::error::statement_timeout) << ec.message() << ": " << c.last_error().message;
        EXPECT_EQ(n, 0u);
        EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
        c.set_statement_timeout({});
        EXPECT_EQ((co_await c.async_query("SELECT count(*) FROM copy_t", asio::use_awaitable))
                      .get<std::int64_t>(0, 0),
                  0);
        EXPECT_EQ(c.transaction_state(), pg::transaction_status::idle);
    });
}

TEST_F(pg_copy, a_deadline_while_the_copy_waits_for_a_lock_cancels_it_on_the_server) {
    test::table_lock lock(conninfo());
    if (!lock.connected() || !lock.take("copy_t")) FAIL() << lock.error();
    const std::vector<std::tuple<std::int32_t>> rows{{1}, {2}};
    run([&]() -> asio::awaitable<void> {
        pg::connection c = co_await connect();
        c.set_statement_timeout(300ms);
        const auto started = std::chrono::steady_clock::now();
        auto [ec, n] = co_await c.async_copy_in("copy_t (id)", rows, {}, asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, pg::error::statement_timeout) << ec.message() << ": " << c.last_error().message;
        EXPECT_LT(std::chrono::steady_clock::now() - started,
                  1s);  // cancelled, not closed at the drain limit
        EXPECT_TRUE(c.is_open());
        EXPECT_EQ((co_await c.async_query("SELECT 5", asio::use_awaitable)).get<std::int32_t>(0, 0), 5);
    });
}

TEST_F(pg_copy, a_deadline_after_all_rows_are_sent_cancels_the_copy_on_the_server) {
    run([]() -> asio::awaitable<void> {
        admin a = co_await admin::open();
        co_await a.query(
            "CREATE OR REPLACE FUNCTION copy_slow() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN PERFORM pg_sleep(2); RETURN NEW; END $$; "
            "CREATE TRIGGER slow BEFORE INSERT ON copy_t FOR EACH ROW EXECUTE FUNCTION copy_slow()");
    });
    const std::vector<std::tuple<std::int32_t>> rows{{1}, {2}};
    run([&]() -> asio::awaitable<void> {
        pg::connection c = co_await connect();
        c.set_statement_timeout(300ms);
        // Two rows: all of the data and CopyDone are sent at once; the server is still storing them.
        auto [ec, n] = co_await c.async_copy_in("copy_t (id)", rows, {}, asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, pg::error::statement_timeout) << ec.message() << ": " << c.last_error().message;
        EXPECT_TRUE(c.is_open());  // cancelled on the server, not closed at the drain limit
        c.set_statement_timeout({});
        EXPECT_EQ((co_await c.async_query("SELECT count(*) FROM copy_t", asio::use_awaitable))
                      .get<std::int64_t>(0, 0),
                  0);
    });
}

TEST_F(pg_copy, a_cancel_mid_copy_in_and_mid_copy_out_ends_it_and_the_connection_stays_usable) {
    run([&]() -> asio::awaitable<void> {
        pg::connection c = co_await connect();
        asio::cancellation_signal cancel;
        const auto ex = co_await asio::this_coro::executor;
        // The 20,000th row asks for the cancellation: mid-COPY for sure, whatever the timing.
        auto rows = std::views::iota(0, 100'000'000) | std::views::transform([&](int i) {
                        if (i == 20'000)
                            asio::post(ex, [&] { cancel.emit(asio::cancellation_type::terminal); });
                        return std::tuple<std::int32_t, std::string>{i, "filler text"};
                    });
        auto token = asio::bind_cancellation_slot(cancel.slot(), asio::as_tuple(asio::use_awaitable));
        auto [ec, n] = co_await c.async_copy_in("copy_t (id, sensor)", rows, {}, token);
        EXPECT_EQ(ec, asio::error::operation_aborted) << ec.message() << ": " << c.last_error().message;
        EXPECT_EQ((co_await c.async_query("SELECT count(*) FROM copy_t", asio::use_awaitable))
                      .get<std::int64_t>(0, 0),
                  0);

        // Out: a large output, cancelled after its first 1,000 rows; the rest is dropped.
        std::size_t seen = 0;
        auto sink = [&](std::string_view) {
            if (++seen == 1000) asio::post(ex, [&] { cancel.emit(asio::cancellation_type::terminal); });
        };
        auto token2 = asio::bind_cancellation_slot(cancel.slot(), asio::as_tuple(asio::use_awaitable));
        auto [ec2, n2] = co_await c.async_copy_out(
            "SELECT i, repeat('x', 100) FROM generate_series(1, 2000000) i", sink, {}, token2);
        EXPECT_EQ(ec2, asio::error::operation_aborted) << ec2.message() << ": " << c.last_error().message;
        EXPECT_LT(seen, std::size_t{2'000'000});
        EXPECT_EQ((co_await c.async_query("SELECT 42", asio::use_awaitable)).get<std::int32_t>(0, 0), 42);
    });
}

TEST_F(pg_copy, a_value_the_server_refuses_fails_with_its_words) {
    const auto cfg = config();
    const std::vector<std::tuple<std::string, std::string>> rows{{"1", "ok"}, {"two", "bad id"}};
    const std::vector<std::tuple<std::int32_t, std::int32_t>> narrow{{1, 2}};
    run([&]() -> asio::awaitable<void> {
        pg::connection c = co_await connect();
        auto [ec, n] =
            co_await c.async_copy_in("copy_t (id, sensor)", rows, {}, asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, pg::sqlstate_error("22P02"));
        EXPECT_NE(c.last_error().message.find("invalid input syntax for type integer: \"two\""),
                  std::string::npos)
            << c.last_error().message;
        EXPECT_EQ((co_await c.async_query("SELECT count(*) FROM copy_t", asio::use_awaitable))
                      .get<std::int64_t>(0, 0),
                  0);
        // Binary format: a value of another width than its column's type (int4 into int8): the server
        // reads past the field and says so (08P01); the connection stays usable.
        auto [ec3, n3] =
            co_await c.async_copy_in("copy_t (id, value)", narrow, {.format = pg::copy_format::binary},
                                     asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec3, pg::sqlstate_error("08P01"));
        EXPECT_NE(c.last_error().message.find("insufficient data left in message"), std::string::npos)
            << c.last_error().message;
        EXPECT_EQ((co_await c.async_query("SELECT count(*) FROM copy_t", asio::use_awaitable))
                      .get<std::int64_t>(0, 0),
                  0);
        // Through a pool: the words in the diagnostics the options point to.
        pg::pool db(co_await asio::this_coro::executor, cfg);
        respool::diagnostics diag;
        const pg::copy_options with_words{.diag = &diag};
        auto [ec4, n4] = co_await db.async_copy_in("copy_t (id, sensor)", rows, with_words,
                                                   asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec4, pg::sqlstate_error("22P02"));
        EXPECT_NE(diag.message.find("invalid input syntax for type integer: \"two\""), std::string::npos)
            << diag.message;
        EXPECT_TRUE(diag.error);
        db.close();
        // A table that does not exist: the server's words too.
        auto [ec2, n2] = co_await c.async_copy_in("nope", rows, {}, asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec2, pg::sqlstate_error("42P01"));
        EXPECT_NE(c.last_error().message.find("\"nope\" does not exist"), std::string::npos)
            << c.last_error().message;
    });
}

TEST_F(pg_copy, a_range_or_a_sink_that_throws_aborts_the_copy_with_its_words) {
    const auto cfg = config();
    run([&]() -> asio::awaitable<void> {
        pg::connection c = co_await connect();
        auto rows = std::views::iota(0, 100'000) | std::views::transform([](int i) {
                        if (i == 5000) throw std::runtime_error("row 5000 is broken");
                        return std::tuple<std::int32_t>{i};
                    });
        auto [ec, n] = co_await c.async_copy_in("copy_t (id)", rows, {}, asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, pg::error::copy_aborted);
        EXPECT_EQ(c.last_error().message, "row 5000 is broken");
        EXPECT_EQ((co_await c.async_query("SELECT count(*) FROM copy_t", asio::use_awaitable))
                      .get<std::int64_t>(0, 0),
                  0);

        int calls = 0;
        auto sink = [&](std::string_view) {
            if (++calls == 10) throw std::runtime_error("the disk is full");
        };
        auto [ec2, n2] = co_await c.async_copy_out("SELECT i FROM generate_series(1, 2000000) i", sink, {},
                                                   asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec2, pg::error::copy_aborted);
        EXPECT_EQ(c.last_error().message, "the disk is full");
        EXPECT_EQ(calls, 10);
        EXPECT_EQ((co_await c.async_query("SELECT 7", asio::use_awaitable)).get<std::int32_t>(0, 0), 7);

        // Through a pool: the same error, and the connection goes back usable.
        pg::pool db(co_await asio::this_coro::executor, cfg);
        calls = 0;
        auto [ec3, n3] = co_await db.async_copy_out("copy_t", sink, {}, asio::as_tuple(asio::use_awaitable));
        EXPECT_FALSE(ec3) << ec3.message();  // an empty table: the sink is never called
        co_await c.async_query("INSERT INTO copy_t (id) SELECT generate_series(1, 100)", asio::use_awaitable);
        auto [ec4, n4] = co_await db.async_copy_out("copy_t", sink, {}, asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec4, pg::error::copy_aborted);
        EXPECT_EQ((co_await db.async_query("SELECT 8", asio::use_awaitable)).get<std::int32_t>(0, 0), 8);
        EXPECT_EQ(db.stats().destructions, 0u);
        db.close();
    });
}

TEST_F(pg_copy, a_string_with_a_nul_byte_aborts_the_copy_naming_it_and_nothing_is_stored) {
    const std::vector<std::tuple<std::int32_t, std::string>> rows{{1, "fine"}, {2, std::string("a\0b", 3)}};
    run([&]() -> asio::awaitable<void> {
        pg::connection c = co_await connect();
        auto [ec, n] =
            co_await c.async_copy_in("copy_t (id, sensor)", rows, {}, asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, pg::error::copy_aborted);
        EXPECT_NE(c.last_error().message.find("NUL byte"), std::string::npos) << c.last_error().message;
        EXPECT_EQ((co_await c.async_query("SELECT count(*) FROM copy_t", asio::use_awaitable))
                      .get<std::int64_t>(0, 0),
                  0);
    });
}

TEST_F(pg_copy, a_copy_in_a_transaction_is_part_of_it_and_rolls_back_with_it) {
    const auto cfg = config();
    run([&]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, cfg);
        const std::vector<reading> rows = readings(100);
        // The transaction's BEGIN goes out with the COPY (it is the first statement).
        auto rolled_back = [&](pg::connection& c) -> asio::awaitable<void> {
            const std::uint64_t n = co_await c.async_copy_in("copy_t", rows, {}, asio::use_awaitable);
            EXPECT_EQ(n, 100u);
            EXPECT_EQ(c.transaction_state(), pg::transaction_status::in_transaction);
            throw std::runtime_error("changed my mind");
        };
        auto [e] = co_await db.transaction(rolled_back, {}, asio::as_tuple(asio::use_awaitable));
        EXPECT_TRUE(e);
        EXPECT_EQ((co_await db.async_query("SELECT count(*) FROM copy_t", asio::use_awaitable))
                      .get<std::int64_t>(0, 0),
                  0);
        auto committed = [&](pg::connection& c) -> asio::awaitable<void> {
            co_await c.async_copy_in("copy_t", rows, {.format = pg::copy_format::binary},
                                     asio::use_awaitable);
        };
        co_await db.transaction(committed, {}, asio::use_awaitable);
        EXPECT_EQ((co_await db.async_query("SELECT count(*) FROM copy_t", asio::use_awaitable))
                      .get<std::int64_t>(0, 0),
                  100);
        db.close();
    });
}

TEST_F(pg_copy, the_pools_statement_timeout_ends_a_copy_and_the_connection_goes_back) {
    auto cfg = config();
    cfg.statement_timeout = 300ms;
    run([&]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, cfg);
        auto [ec, n] = co_await db.async_copy_in("copy_t (id, sensor)", endless_rows(), {},
                                                 asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, pg::error::statement_timeout) << ec.message();
        std::size_t pieces = 0;
        auto sink = [&pieces](std::string_view) { ++pieces; };
        auto [ec2, n2] =
            co_await db.async_copy_out("SELECT i, pg_sleep(0.001) FROM generate_series(1, 100000) i", sink,
                                       {}, asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec2, pg::error::statement_timeout) << ec2.message();
        EXPECT_EQ((co_await db.async_query("SELECT count(*) FROM copy_t", asio::use_awaitable))
                      .get<std::int64_t>(0, 0),
                  0);
        EXPECT_EQ(db.stats().destructions, 0u);
        db.close();
    });
}

TEST_F(pg_copy, an_asio_cancellation_of_a_pool_copy_ends_it_on_the_server) {
    const auto cfg = config();
    run([&]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, cfg);
        asio::cancellation_signal cancel;
        const auto ex = co_await asio::this_coro::executor;
        std::size_t pieces = 0;
        auto sink = [&](std::string_view) {
            if (++pieces == 10) asio::post(ex, [&] { cancel.emit(asio::cancellation_type::terminal); });
        };
        auto token = asio::bind_cancellation_slot(cancel.slot(), asio::as_tuple(asio::use_awaitable));
        auto [ec, n] = co_await db.async_copy_out(
            "SELECT i, pg_sleep(0.0005) FROM generate_series(1, 100000) i", sink, {}, token);
        EXPECT_EQ(ec, asio::error::operation_aborted) << ec.message();
        EXPECT_LT(pieces, std::size_t{100'000});
        EXPECT_EQ((co_await db.async_query("SELECT 9", asio::use_awaitable)).get<std::int32_t>(0, 0), 9);
        EXPECT_EQ(db.stats().destructions, 0u);
        db.close();
    });
}

TEST_F(pg_copy, an_empty_range_copies_nothing_and_a_moved_in_range_is_owned_by_the_operation) {
    const auto cfg = config();
    run([&]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, cfg);
        for (const pg::copy_format f : both_formats) {
            const pg::copy_options o{.format = f};
            std::vector<reading> none;
            const std::uint64_t n =
                co_await db.async_copy_in("copy_t", std::move(none), o, asio::use_awaitable);
            EXPECT_EQ(n, 0u);
            std::vector<reading> three = readings(3);
            auto op = db.async_copy_in("copy_t", std::move(three), o);  // deferred: the rows live in it
            three.clear();
            EXPECT_EQ(co_await std::move(op)(asio::use_awaitable), 3u);
            co_await db.async_query("TRUNCATE copy_t", asio::use_awaitable);
        }
        db.close();
    });
}

TEST_F(pg_copy, async_query_still_refuses_copy_to_the_client) {
    run([&]() -> asio::awaitable<void> {
        pg::connection c = co_await connect();
        auto [ec, r] = co_await c.async_query("COPY copy_t FROM STDIN", asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, pg::error::unsupported_statement);
        EXPECT_NE(c.last_error().message.find("async_copy_in / async_copy_out"), std::string::npos)
            << c.last_error().message;
    });
}

}  // namespace
