// pg::batch on a real server: several statements on one borrowed connection in one round trip, each
// with its own outcome; a failure in the middle leaves the others (each its own implicit transaction);
// a statement past the deadline ends alone; a session change reset on return; COPY refused before
// anything is sent; an empty batch.
#include "pg_test_support.hpp"

#include <respool/pg/batch.hpp>
#include <respool/pg/pool.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <atomic>
#include <thread>

namespace {

using namespace pg_test;

class pg_batch : public ::testing::Test {
protected:
    void SetUp() override {
        if (conninfo().empty()) GTEST_SKIP() << "RESPOOL_PG_CONNINFO_FILE not set (run through ctest)";
        run([]() -> asio::awaitable<void> {
            admin a = co_await admin::open();
            co_await a.query(
                "DROP TABLE IF EXISTS batch_t; CREATE TABLE batch_t (id int PRIMARY KEY, n int)");
        });
    }
    pg::pool_config config() const {
        return {.conninfo = conninfo(), .max = 1, .min_idle = 0, .statements = statements()};
    }
};

TEST_F(pg_batch, each_statement_has_its_outcome_and_a_failure_leaves_the_others) {
    const auto cfg = config();
    run([&]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, cfg);
        pg::batch b;
        b.add("INSERT INTO batch_t VALUES ($1, $2)", pg::params(1, 10))
            .add("SELECT 1 / $1::int", pg::params(0))
            .add("INSERT INTO batch_t VALUES ($1, $2)", pg::params(2, 20))
            .add("SELECT id, n FROM batch_t ORDER BY id");
        auto [ec, out] = co_await db.async_execute(std::move(b), asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, pg::sqlstate_error("22012"));  // the first failure
        if (out.size() != 4u) co_return ADD_FAILURE() << out.size();
        EXPECT_FALSE(out[0].error);
        EXPECT_EQ(out[0].rows.affected_rows(), 1u);
        EXPECT_EQ(out[1].error, pg::sqlstate_error("22012"));
        EXPECT_NE(out[1].message.find("division by zero"), std::string::npos) << out[1].message;
        EXPECT_FALSE(out[2].error) << out[2].message;
        EXPECT_EQ(out[3].rows.rows(), 2u);
        EXPECT_EQ(out[3].rows.get<std::int32_t>(1, 1), 20);
        // Committed, both: each statement was its own transaction.
        const pg::result r = co_await db.async_query("SELECT count(*) FROM batch_t", asio::use_awaitable);
        EXPECT_EQ(r.get<std::int64_t>(0, 0), 2);
        db.close();
    });
}

TEST_F(pg_batch, a_statement_past_its_deadline_ends_alone_and_a_session_change_is_reset) {
    auto cfg = config();
    cfg.statement_timeout = 200ms;
    run([&]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, cfg);
        pg::batch b;
        b.add("SELECT 1")
            .add("SELECT pg_sleep(5)")
            .add("SELECT 3")
            .add("SET application_name = 'from_batch'");
        const auto t0 = std::chrono::steady_clock::now();
        auto [ec, out] = co_await db.async_execute(std::move(b), asio::as_tuple(asio::use_awaitable));
        EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
        if (out.size() != 4u) co_return ADD_FAILURE() << out.size();
        EXPECT_FALSE(out[0].error);
        EXPECT_EQ(out[1].error, pg::error::statement_timeout) << out[1].error.message();
        EXPECT_FALSE(out[2].error) << out[2].message;
        EXPECT_EQ(out[2].rows.get<std::int32_t>(0, 0), 3);
        EXPECT_FALSE(out[3].error) << out[3].message;
        // The same connection (max 1), reset on return: the next borrower does not see the SET.
        const pg::result r = co_await db.async_query("SHOW application_name", asio::use_awaitable);
        EXPECT_NE(r.text(0, 0), "from_batch");
        db.close();
    });
}

TEST_F(pg_batch, copy_is_refused_before_anything_is_sent_and_an_empty_batch_is_nothing) {
    const auto cfg = config();
    run([&]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, cfg);
        pg::batch b;
        b.add("INSERT INTO batch_t VALUES (9, 9)").add("COPY batch_t TO STDOUT");
        auto [ec, out] = co_await db.async_execute(std::move(b), asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, pg::error::unsupported_statement);
        if (out.size() != 2u) co_return ADD_FAILURE() << out.size();
        EXPECT_NE(out[1].message.find("COPY"), std::string::npos) << out[1].message;
        const pg::result r = co_await db.async_query("SELECT count(*) FROM batch_t", asio::use_awaitable);
        EXPECT_EQ(r.get<std::int64_t>(0, 0), 0);  // the INSERT was not sent either
        auto [eec, none] = co_await db.async_execute(pg::batch{}, asio::as_tuple(asio::use_awaitable));
        EXPECT_FALSE(eec);
        EXPECT_TRUE(none.empty());
        EXPECT_EQ(db.stats().active, 0u);
        db.close();
    });
}

// A batch the caller cancels (an Asio cancellation) ends at once: the statement the server runs is
// stopped there, every statement not yet answered ends with operation_aborted, and the connection
// serves the next borrower. A cancellation during the borrow sends nothing.
TEST_F(pg_batch, a_cancelled_batch_ends_at_once_and_the_connection_serves_the_next) {
    const auto cfg = config();
    run([&]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, cfg);
        admin a = co_await admin::open();
        struct ending {
            bool done = false;
            boost::system::error_code ec;
            std::vector<pg::batch_outcome> out;
        };
        // Starts the batch on `exec` (the pool or a borrowed connection) with `signal` as its slot. (The
        // ending is shared: a failed expectation that leaves early must not leave the handler a dangling
        // reference.)
        auto start = [](auto& exec, pg::batch b, asio::cancellation_signal& signal,
                        std::shared_ptr<ending> e) {
            exec.async_execute(std::move(b), asio::bind_cancellation_slot(
                                                 signal.slot(), [e](boost::system::error_code ec, auto out) {
                                                     e->ec = ec;
                                                     e->out = std::move(out);
                                                     e->done = true;
                                                 }));
        };
        auto ended = [](std::shared_ptr<ending> e) { return poll_until([e] { return e->done; }); };
        auto sleeping = [](admin& x) -> asio::awaitable<bool> {
            co_return co_await x.count(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND "
                "query LIKE 'SELECT pg_sleep%'") == 1;
        };
        auto slow_then_insert = [] {
            pg::batch b;
            b.add("SELECT pg_sleep($1::float8)", pg::params(20.0))
                .add("INSERT INTO batch_t VALUES ($1, $2)", pg::params(1, 10));
            return b;
        };
        // Cancelled while the server runs the first statement.
        {
            asio::cancellation_signal signal;
            auto e = std::make_shared<ending>();
            const auto t0 = std::chrono::steady_clock::now();
            start(db, slow_then_insert(), signal, e);
            co_await a.wait_until(sleeping);
            signal.emit(asio::cancellation_type::terminal);
            co_await ended(e);
            EXPECT_TRUE(e->done);
            EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
            EXPECT_EQ(e->ec, asio::error::operation_aborted) << e->ec.message();
            if (e->out.size() != 2u) co_return ADD_FAILURE() << e->out.size();
            for (const auto& o : e->out) EXPECT_EQ(o.error, asio::error::operation_aborted) << o.message;
            EXPECT_NE(e->out[0].message.find("cancelled"), std::string::npos) << e->out[0].message;
            // The sleep was stopped on the server, and the pool's one connection serves the next.
            EXPECT_FALSE(co_await sleeping(a));
            const pg::result r = co_await db.async_query("SELECT 7", asio::use_awaitable);
            EXPECT_EQ(r.get<std::int32_t>(0, 0), 7);
            // (The INSERT was on its way, in a transaction of its own: the server may have run it.)
            co_await a.query("DELETE FROM batch_t");
        }
        // Cancelled while it waits for a connection (the only one is held): nothing is sent.
        {
            respool::lease<pg::connection> held = co_await db.async_acquire(asio::use_awaitable);
            asio::cancellation_signal signal;
            auto e = std::make_shared<ending>();
            pg::batch b;
            b.add("INSERT INTO batch_t VALUES ($1, $2)", pg::params(2, 20));
            start(db, std::move(b), signal, e);
            co_await poll_until([&] { return db.stats().waiting != 0; });
            EXPECT_EQ(db.stats().waiting, 1u);
            EXPECT_FALSE(e->done);
            signal.emit(asio::cancellation_type::partial);
            co_await ended(e);
            EXPECT_TRUE(e->done);
            EXPECT_EQ(e->ec, respool::errc::cancelled) << e->ec.message();
            if (e->out.size() != 1u) co_return ADD_FAILURE() << e->out.size();
            EXPECT_EQ(e->out[0].error, respool::errc::cancelled) << e->out[0].message;
            EXPECT_EQ(db.stats().waiting, 0u);
        }
        EXPECT_EQ((co_await db.async_query("SELECT count(*) FROM batch_t", asio::use_awaitable))
                      .get<std::int64_t>(0, 0),
                  0)
            << "the batch cancelled during its borrow ran";
        // Cancelled inside a transaction, the batch its first statement (its BEGIN went first): the
        // transaction rolls back, and the connection comes back fit.
        auto cancelled_in_transaction = [&](pg::connection& c) -> asio::awaitable<void> {
            asio::cancellation_signal signal;
            auto e = std::make_shared<ending>();
            start(c, slow_then_insert(), signal, e);
            co_await a.wait_until(sleeping);
            signal.emit(asio::cancellation_type::total);
            co_await ended(e);
            EXPECT_EQ(e->ec, asio::error::operation_aborted) << e->ec.message();
            throw std::runtime_error("cancelled");
        };
        auto [te] =
            co_await db.transaction(cancelled_in_transaction, {}, asio::as_tuple(asio::use_awaitable));
        EXPECT_TRUE(te);
        // Cancelled before the transaction's BEGIN, which goes ahead of the batch, is answered (no reply
        // can be read before this coroutine waits): none of the batch's statements is sent.
        auto cancelled_before_begin = [&](pg::connection& c) -> asio::awaitable<void> {
            asio::cancellation_signal signal;
            auto e = std::make_shared<ending>();
            start(c, slow_then_insert(), signal, e);
            signal.emit(asio::cancellation_type::terminal);
            co_await ended(e);
            EXPECT_EQ(e->ec, asio::error::operation_aborted) << e->ec.message();
            EXPECT_EQ(e->out.size(), 2u);
            for (const auto& o : e->out) {
                EXPECT_EQ(o.error, asio::error::operation_aborted);
                EXPECT_EQ(o.message, "not sent: the batch was cancelled");
            }
            throw std::runtime_error("cancelled");
        };
        auto [be] = co_await db.transaction(cancelled_before_begin, {}, asio::as_tuple(asio::use_awaitable));
        EXPECT_TRUE(be);
        EXPECT_FALSE(co_await sleeping(a));
        EXPECT_EQ((co_await db.async_query("SELECT count(*) FROM batch_t", asio::use_awaitable))
                      .get<std::int64_t>(0, 0),
                  0)
            << "the transaction's statements outlived its rollback";
        db.close();
    });
}

// The pool's batch completes on the caller's executor (here an event loop on another thread), as every
// other operation does: not on the pool's own.
TEST_F(pg_batch, the_handler_runs_on_its_own_executor) {
    const auto cfg = config();
    loop caller;
    std::atomic<bool> done{false};
    std::thread::id ran_on;
    run([&]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, cfg);
        pg::batch b;
        b.add("SELECT 1");
        db.async_execute(std::move(b), asio::bind_executor(caller.io.get_executor(),
                                                           [&](boost::system::error_code ec, auto out) {
                                                               EXPECT_FALSE(ec) << ec.message();
                                                               EXPECT_EQ(out.size(), 1u);
                                                               ran_on = std::this_thread::get_id();
                                                               done = true;
                                                           }));
        co_await poll_until([&] { return done.load(); });
        db.close();
    });
    EXPECT_TRUE(done);
    EXPECT_EQ(ran_on, caller.thread.get_id());
}

// A batch that is a transaction's first statement belongs to the transaction: its BEGIN (which waits
// to travel with the first statement) goes first, so the batch's changes roll back with it.
TEST_F(pg_batch, a_batch_first_in_a_transaction_is_part_of_it_and_rolls_back_with_it) {
    const auto cfg = config();
    run([&]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, cfg);
        auto two_rows = [] {
            pg::batch b;
            b.add("INSERT INTO batch_t VALUES ($1, $2)", pg::params(1, 10))
                .add("INSERT INTO batch_t VALUES ($1, $2)", pg::params(2, 20));
            return b;
        };
        auto rolled_back = [&](pg::connection& c) -> asio::awaitable<void> {
            auto [ec, out] = co_await c.async_execute(two_rows(), asio::as_tuple(asio::use_awaitable));
            EXPECT_FALSE(ec) << ec.message();
            EXPECT_EQ(out.size(), 2u);
            EXPECT_EQ(c.transaction_state(), pg::transaction_status::in_transaction);
            throw std::runtime_error("changed my mind");
        };
        auto [e] = co_await db.transaction(rolled_back, {}, asio::as_tuple(asio::use_awaitable));
        EXPECT_TRUE(e);
        EXPECT_EQ((co_await db.async_query("SELECT count(*) FROM batch_t", asio::use_awaitable))
                      .get<std::int64_t>(0, 0),
                  0)
            << "the batch ran outside the transaction";
        auto committed = [&](pg::connection& c) -> asio::awaitable<void> {
            auto [ec, out] = co_await c.async_execute(two_rows(), asio::as_tuple(asio::use_awaitable));
            EXPECT_FALSE(ec) << ec.message();
        };
        co_await db.transaction(committed, {}, asio::use_awaitable);
        EXPECT_EQ((co_await db.async_query("SELECT count(*) FROM batch_t", asio::use_awaitable))
                      .get<std::int64_t>(0, 0),
                  2);
        // The BEGIN went unnamed: it takes no place in the statement cache (the pool has one connection).
        EXPECT_EQ(
            (co_await db.async_query("SELECT count(*) FROM pg_prepared_statements WHERE statement ILIKE "
                                     "'BEGIN%'",
                                     asio::use_awaitable))
                .get<std::int64_t>(0, 0),
            0);
        // Inside the transaction a statement that fails aborts it: the server's own statement_timeout
        // (57014) is that statement's error, not sent again, and the one after it fails with 25P02.
        auto timed_out = [&](pg::connection& c) -> asio::awaitable<void> {
            co_await c.async_query("SET LOCAL statement_timeout = 50", asio::use_awaitable);
            pg::batch b;
            b.add("SELECT pg_sleep($1::float8)", pg::params(5.0)).add("SELECT $1::int", pg::params(1));
            auto [ec, out] = co_await c.async_execute(std::move(b), asio::as_tuple(asio::use_awaitable));
            EXPECT_EQ(pg::sqlstate_of(ec), "57014");
            if (out.size() != 2u) co_return ADD_FAILURE() << out.size();
            EXPECT_EQ(pg::sqlstate_of(out[0].error), "57014") << out[0].message;
            EXPECT_EQ(pg::sqlstate_of(out[1].error), "25P02") << out[1].message;
        };
        auto [e1] = co_await db.transaction(timed_out, {}, asio::as_tuple(asio::use_awaitable));
        EXPECT_TRUE(e1);
        // The BEGIN cannot be sent (the backend is gone): the batch fails whole, nothing of it ran.
        auto broken = [&](pg::connection& c) -> asio::awaitable<void> {
            admin a = co_await admin::open();
            co_await a.terminate(c.backend_pid());
            auto [ec, out] = co_await c.async_execute(two_rows(), asio::as_tuple(asio::use_awaitable));
            EXPECT_TRUE(ec);
            EXPECT_EQ(out.size(), 2u);
            for (const auto& o : out) {
                EXPECT_TRUE(o.error);
                EXPECT_NE(o.message.find("BEGIN failed"), std::string::npos) << o.message;
            }
        };
        auto [e2] = co_await db.transaction(broken, {}, asio::as_tuple(asio::use_awaitable));
        EXPECT_TRUE(e2);
        EXPECT_EQ((co_await db.async_query("SELECT count(*) FROM batch_t", asio::use_awaitable))
                      .get<std::int64_t>(0, 0),
                  2);
        db.close();
    });
}

}  // namespace
