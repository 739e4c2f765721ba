// Pipelined pool statements (pool_config::pipeline_depth > 1) against a real server: statements from
// many callers share connections and each gets its own reply; one failure (an error, a failed Parse)
// stays with its statement; cancellation and the deadline complete a statement at once and the server
// stops it; a broken connection fails what it carried and is replaced; statements that change the
// session never share a connection; close fails the waiting ones. Waits are on states (counters, the
// server's pg_stat_activity), bounded.
#include "pg_test_support.hpp"

#include <respool/pg/pool.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/detached.hpp>

#include <utility>
#include <vector>

using namespace pg_test;
using respool::error_code;

namespace {

class pg_pipeline : public ::testing::Test {
protected:
    void SetUp() override {
        if (conninfo().empty())
            GTEST_SKIP() << "RESPOOL_PG_CONNINFO_FILE not set: run through ctest -L integration";
    }
};

pg::pool_config pipelined(const std::string& app, std::size_t max, std::size_t depth = 8) {
    pg::pool_config c;
    c.conninfo = tagged(app);
    c.max = max;
    c.min_idle = 0;
    c.pipeline_depth = depth;
    return c;
}

using outcome = std::pair<error_code, pg::result>;
using statement = std::pair<std::string, pg::params>;

// (A function, not a braced pair: g++ 12 rejects string literals in braced pairs inside coroutines.)
statement q(std::string sql, pg::params p) {
    return {std::move(sql), std::move(p)};
}

// Waits (bounded) until `n` callbacks have counted.
asio::awaitable<void> until(const std::size_t& done, std::size_t n, std::chrono::milliseconds limit = 20s) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    for (auto end = std::chrono::steady_clock::now() + limit; done < n;) {
        if (std::chrono::steady_clock::now() > end) throw std::runtime_error("statements never completed");
        t.expires_after(1ms);
        co_await t.async_wait(asio::use_awaitable);
    }
}

// Sends every statement before any reply is read (they go out together), then waits for all.
// (Variadic rather than a braced list: g++ 12 rejects initializer lists inside coroutines.)
asio::awaitable<std::vector<outcome>> send_all(pg::pool& db, std::vector<statement> s) {
    std::vector<outcome> out(s.size());
    std::size_t done = 0;
    for (std::size_t i = 0; i < s.size(); ++i)
        db.async_query(s[i].first, s[i].second, [&out, &done, i](error_code ec, pg::result r) {
            out[i] = {ec, std::move(r)};
            ++done;
        });
    co_await until(done, s.size());
    co_return out;
}
template <class... S>
asio::awaitable<std::vector<outcome>> together(pg::pool& db, S... s) {
    std::vector<statement> v;
    (v.push_back(std::move(s)), ...);
    return send_all(db, std::move(v));
}

// Until the server runs a statement starting with `prefix` for `app`.
asio::awaitable<void> until_running(admin& a, const std::string& app, const std::string& prefix) {
    co_await a.wait_until([&](admin& x) -> asio::awaitable<bool> {
        co_return co_await x.count(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND "
            "application_name = '" +
            app + "' AND query LIKE '" + prefix + "%'") > 0;
    });
}

}  // namespace

TEST_F(pg_pipeline, many_callers_share_few_connections_and_each_gets_its_own_reply) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, pipelined("t_pipe_many", 2));
        admin a = co_await admin::open();
        constexpr int callers = 32, rounds = 20;
        std::size_t done = 0;
        int wrong = 0, failed = 0;
        for (int w = 0; w < callers; ++w)
            asio::co_spawn(
                co_await asio::this_coro::executor,
                [&, w]() -> asio::awaitable<void> {
                    for (int i = 0; i < rounds; ++i) {
                        const int v = w * 1000 + i;
                        auto [ec, r] = co_await db.async_query("SELECT $1::int * 2", pg::params(v),
                                                               asio::as_tuple(asio::use_awaitable));
                        if (ec)
                            ++failed;
                        else if (r.get<std::int32_t>(0, 0) != 2 * v)
                            ++wrong;
                    }
                    ++done;
                },
                asio::detached);
        std::int64_t most = 0;
        asio::steady_timer t(co_await asio::this_coro::executor);
        for (int samples = 0; done < callers && samples < 4000; ++samples) {  // bounded
            most = std::max(most, co_await a.backends("t_pipe_many"));
            t.expires_after(5ms);
            co_await t.async_wait(asio::use_awaitable);
        }
        co_await until(done, callers);
        EXPECT_EQ(failed, 0);
        EXPECT_EQ(wrong, 0) << "every caller got its own reply";
        EXPECT_LE(most, 2);
        EXPECT_LT(db.stats().acquires, static_cast<std::uint64_t>(callers * rounds))
            << "statements shared borrowed connections";
    });
}

TEST_F(pg_pipeline, a_failing_statement_fails_alone) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, pipelined("t_pipe_fail", 1));
        co_await db.async_query("CREATE TABLE IF NOT EXISTS pipe_fail (id int PRIMARY KEY)",
                                asio::use_awaitable);
        co_await db.async_query("TRUNCATE pipe_fail", asio::use_awaitable);
        auto out = co_await together(
            db, q("INSERT INTO pipe_fail VALUES ($1)", pg::params(1)),
            q("SELECT 10 / $1::int", pg::params(0)), q("INSERT INTO pipe_fail VALUES ($1)", pg::params(1)),
            q("INSERT INTO pipe_fail VALUES ($1)", pg::params(2)), q("SELECT 10 / $1::int", pg::params(5)));
        EXPECT_FALSE(out[0].first) << out[0].first.message();
        EXPECT_EQ(pg::sqlstate_of(out[1].first), "22012") << out[1].first.message();
        EXPECT_EQ(out[2].first, pg::condition::unique_violation) << out[2].first.message();
        EXPECT_FALSE(out[3].first) << "committed on its own, after its neighbour failed";
        EXPECT_FALSE(out[4].first);
        if (!out[4].first) {
            EXPECT_EQ(out[4].second.get<std::int32_t>(0, 0), 2);
        }
        auto n = co_await db.async_query("SELECT count(*)::int FROM pipe_fail", asio::use_awaitable);
        EXPECT_EQ(n.get<std::int32_t>(0, 0), 2);
        EXPECT_EQ(db.stats().poisoned, 0u);
    });
}

// Two statements with the same text go out before the first Parse is answered: the second uses the
// first one's Parse, and when that fails both report the syntax error (not "prepared statement does
// not exist"). The text fixed, it works.
TEST_F(pg_pipeline, a_failed_parse_is_reported_to_every_statement_that_relied_on_it) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, pipelined("t_pipe_parse", 1));
        auto out =
            co_await together(db, q("SELEC $1::int", pg::params(1)), q("SELEC $1::int", pg::params(2)));
        EXPECT_EQ(out[0].first, pg::condition::syntax_error) << out[0].first.message();
        EXPECT_EQ(out[1].first, pg::condition::syntax_error) << out[1].first.message();
        out = co_await together(db, q("SELECT $1::int", pg::params(1)), q("SELECT $1::int", pg::params(2)));
        EXPECT_FALSE(out[0].first);
        EXPECT_FALSE(out[1].first);
    });
}

// Cancelling a statement completes it at once; the server stops it (it was running), and the
// statement behind it on the same connection gets its reply; nothing is replaced.
TEST_F(pg_pipeline, a_cancelled_statement_completes_at_once_and_the_one_behind_it_runs) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, pipelined("t_pipe_cancel", 1));
        admin a = co_await admin::open();
        asio::cancellation_signal cancel;
        std::size_t done = 0;
        outcome slow, behind;
        db.async_query("SELECT pg_sleep($1::int)", pg::params(30),
                       asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec, pg::result r) {
                           slow = {ec, std::move(r)};
                           ++done;
                       }));
        db.async_query("SELECT $1::int", pg::params(5), [&](error_code ec, pg::result r) {
            behind = {ec, std::move(r)};
            ++done;
        });
        co_await until_running(a, "t_pipe_cancel", "SELECT pg_sleep");
        const auto t0 = std::chrono::steady_clock::now();
        cancel.emit(asio::cancellation_type::terminal);
        co_await until(done, 2);
        EXPECT_EQ(slow.first, asio::error::operation_aborted);
        EXPECT_FALSE(behind.first) << behind.first.message();
        if (!behind.first) {
            EXPECT_EQ(behind.second.get<std::int32_t>(0, 0), 5);
        }
        EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s) << "the server stopped the sleep";
        EXPECT_EQ(db.stats().poisoned, 0u);
    });
}

TEST_F(pg_pipeline, a_statement_waiting_for_room_past_the_borrow_timeout_fails_with_exhausted) {
    run([]() -> asio::awaitable<void> {
        auto c = pipelined("t_pipe_wait_timeout", 1, 2);  // one carrier, two statements on it
        c.borrow_timeout = 300ms;
        pg::pool db(co_await asio::this_coro::executor, c);
        const auto t0 = std::chrono::steady_clock::now();
        auto out = co_await together(db, q("SELECT pg_sleep($1::int)", pg::params(2)),
                                     q("SELECT $1::int", pg::params(6)), q("SELECT $1::int", pg::params(7)));
        EXPECT_FALSE(out[0].first) << out[0].first.message();
        EXPECT_FALSE(out[1].first) << out[1].first.message();
        EXPECT_EQ(out[2].first, respool::errc::exhausted) << out[2].first.message();
        EXPECT_GE(std::chrono::steady_clock::now() - t0, 300ms);
        // The carrier is free again: the next statement runs.
        auto [ec, r] =
            co_await db.async_query("SELECT $1::int", pg::params(8), asio::as_tuple(asio::use_awaitable));
        EXPECT_FALSE(ec) << ec.message();
    });
}

TEST_F(pg_pipeline, a_cancelled_waiting_statement_leaves_the_queue_and_the_others_keep_their_order) {
    run([]() -> asio::awaitable<void> {
        // One carrier, two statements on it: the sleep and the one behind it; the others wait.
        pg::pool db(co_await asio::this_coro::executor, pipelined("t_pipe_wait_cancel", 1, 2));
        admin a = co_await admin::open();
        asio::cancellation_signal cancel;
        std::vector<int> order;
        std::size_t done = 0;
        error_code cancelled_ec;
        db.async_query("SELECT pg_sleep($1::int)", pg::params(1), [&](error_code ec, pg::result) {
            EXPECT_FALSE(ec) << ec.message();
            order.push_back(0);
            ++done;
        });
        db.async_query("SELECT $1::int", pg::params(1), [&](error_code ec, pg::result) {
            EXPECT_FALSE(ec) << ec.message();
            order.push_back(1);
            ++done;
        });
        db.async_query("SELECT $1::int", pg::params(2),
                       asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec, pg::result) {
                           cancelled_ec = ec;
                           order.push_back(2);
                           ++done;
                       }));
        for (int i = 3; i < 5; ++i)
            db.async_query("SELECT $1::int", pg::params(i), [&, i](error_code ec, pg::result r) {
                EXPECT_FALSE(ec) << ec.message();
                if (!ec) {
                    EXPECT_EQ(r.get<std::int32_t>(0, 0), i);
                }
                order.push_back(i);
                ++done;
            });
        co_await until_running(a, "t_pipe_wait_cancel", "SELECT pg_sleep");
        cancel.emit(asio::cancellation_type::terminal);
        co_await until(done, 1);  // the cancelled one, while the sleep still runs
        EXPECT_EQ(cancelled_ec, asio::error::operation_aborted);
        co_await until(done, 5);
        EXPECT_EQ(order, (std::vector<int>{2, 0, 1, 3, 4}));
    });
}

TEST_F(pg_pipeline, a_statement_past_its_deadline_fails_with_statement_timeout) {
    run([]() -> asio::awaitable<void> {
        auto c = pipelined("t_pipe_deadline", 1);
        c.statement_timeout = 300ms;
        pg::pool db(co_await asio::this_coro::executor, c);
        auto out = co_await together(db, q("SELECT pg_sleep($1::int)", pg::params(30)),
                                     q("SELECT $1::int", pg::params(6)));
        EXPECT_EQ(out[0].first, pg::error::statement_timeout) << out[0].first.message();
        EXPECT_FALSE(out[1].first) << out[1].first.message();
        if (!out[1].first) {
            EXPECT_EQ(out[1].second.get<std::int32_t>(0, 0), 6);
        }
    });
}

TEST_F(pg_pipeline, a_broken_connection_fails_what_it_carried_and_is_replaced) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, pipelined("t_pipe_broken", 1));
        admin a = co_await admin::open();
        std::vector<outcome> out(3);
        std::size_t done = 0;
        for (int i = 0; i < 3; ++i)
            db.async_query(i == 0 ? "SELECT pg_sleep($1::int)" : "SELECT $1::int", pg::params(30),
                           [&out, &done, i](error_code ec, pg::result r) {
                               out[static_cast<std::size_t>(i)] = {ec, std::move(r)};
                               ++done;
                           });
        co_await until_running(a, "t_pipe_broken", "SELECT pg_sleep");
        co_await a.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = "
            "'t_pipe_broken'");
        co_await until(done, 3);
        for (const auto& o : out) EXPECT_EQ(o.first, pg::condition::connection_broken) << o.first.message();
        EXPECT_EQ(db.stats().poisoned, 1u);
        auto r = co_await db.async_query("SELECT $1::int", pg::params(7), asio::use_awaitable);
        EXPECT_EQ(r.get<std::int32_t>(0, 0), 7) << "a new connection";
    });
}

// A statement sent while the only carrier is busy asks the pool for a second one but rides the first
// (which has room); the second arrives with nothing to carry. It must go back to the pool at once, not
// stay lent with nothing in flight (it would be lent until the next statement came, if ever).
TEST_F(pg_pipeline, a_carrier_that_arrives_with_nothing_to_carry_goes_back) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, pipelined("t_pipe_spare", 2));
        admin a = co_await admin::open();
        std::vector<outcome> out(2);
        std::size_t done = 0;
        auto record = [&out, &done](std::size_t i) {
            return [&out, &done, i](error_code ec, pg::result r) {
                out[i] = {ec, std::move(r)};
                ++done;
            };
        };
        db.async_query("SELECT pg_sleep($1::float8)", pg::params(0.3), record(0));
        co_await until_running(a, "t_pipe_spare", "SELECT pg_sleep");
        db.async_query("SELECT $1::int", pg::params(5), record(1));  // the busy carrier has room
        co_await until(done, 2);
        for (const auto& o : out) EXPECT_FALSE(o.first) << o.first.message();
        asio::steady_timer t(co_await asio::this_coro::executor);
        for (int i = 0; i < 300 && (db.stats().active != 0 || db.stats().creating != 0); ++i) {  // 3 s
            t.expires_after(10ms);
            co_await t.async_wait(asio::use_awaitable);
        }
        EXPECT_EQ(db.stats().acquires, 2u) << "the second statement asked for a second carrier";
        EXPECT_EQ(db.stats().active, 0u) << "every carrier went back once nothing was in flight";
        EXPECT_EQ(db.stats().idle, 2u);
    });
}

// set_config changes the session: it borrows a connection of its own and the reset on return undoes
// it before pipelined statements see that connection.
TEST_F(pg_pipeline, a_statement_that_changes_the_session_never_shares_a_connection) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, pipelined("t_pipe_session", 1));
        auto out = co_await together(
            db, q("SELECT current_setting('application_name') || $1::text", pg::params("")),
            q("SELECT set_config('application_name', 'changed', false) || $1::text", pg::params("")),
            q("SELECT current_setting('application_name') || $1::text", pg::params("")));
        for (const auto& o : out)
            if (o.first) throw std::runtime_error(o.first.message());
        EXPECT_EQ(out[0].second.text(0, 0), "t_pipe_session");
        EXPECT_EQ(out[1].second.text(0, 0), "changed");
        EXPECT_EQ(out[2].second.text(0, 0), "t_pipe_session") << "reset before it was shared";
    });
}

TEST_F(pg_pipeline, close_lets_statements_in_flight_finish_and_fails_new_ones) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, pipelined("t_pipe_close", 1, 2));
        std::vector<outcome> out(4);
        std::size_t done = 0;
        for (int i = 0; i < 4; ++i)  // depth 2: two go out, two wait for room
            db.async_query("SELECT $1::int", pg::params(i), [&out, &done, i](error_code ec, pg::result r) {
                out[static_cast<std::size_t>(i)] = {ec, std::move(r)};
                ++done;
            });
        db.close();
        co_await until(done, 4);
        std::size_t ok = 0, closed = 0;
        for (const auto& o : out) {
            if (!o.first) ++ok;
            if (o.first == respool::errc::closed) ++closed;
        }
        EXPECT_EQ(ok + closed, 4u) << "each answered or told the pool closed";
        auto [ec, r] =
            co_await db.async_query("SELECT $1::int", pg::params(1), asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, respool::errc::closed);
    });
}
