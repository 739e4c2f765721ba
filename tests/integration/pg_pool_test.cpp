// respool::pg::pool against a real PostgreSQL server (the pg_cluster fixture): its defaults, queries
// on the pool, with_connection and transaction (commit, rollback, retry of serialization failures),
// poisoning only on connection-level failures, and the reset on return (nothing of a borrower's
// session reaches the next one; a clean release costs no round trip: the server's last statement of
// that backend is still the borrower's). Each pool tags its connections with an application_name,
// so an admin connection can count them in pg_stat_activity. No step waits on a guessed time.
#include "pg_test_support.hpp"

#include <respool/pg/pool.hpp>

#include <boost/asio/bind_executor.hpp>

#include <atomic>
#include <stdexcept>
#include <vector>

using namespace pg_test;
using respool::error_code;

namespace {

class pg_pool : public ::testing::Test {
protected:
    void SetUp() override {
        if (conninfo().empty())
            GTEST_SKIP() << "RESPOOL_PG_CONNINFO_FILE not set: run through ctest -L integration";
    }
};

pg::pool_config config(const std::string& app, std::size_t max = 4, std::size_t min_idle = 1) {
    pg::pool_config c;
    c.conninfo = tagged(app);
    c.statements = pg_test::statements();
    c.max = max;
    c.min_idle = min_idle;
    return c;
}

asio::awaitable<int> pid_of(pg::connection& c) {
    auto r = co_await c.async_query("SELECT pg_backend_pid()", asio::use_awaitable);
    co_return r.get<std::int32_t>(0, 0);
}

}  // namespace

TEST_F(pg_pool, defaults_are_the_spec_s_and_min_idle_connections_are_made_at_once) {
    const pg::pool_config d;
    EXPECT_EQ(d.max, 16u);
    EXPECT_EQ(d.min_idle, 2u);
    EXPECT_EQ(d.borrow_timeout, std::chrono::seconds(5));
    EXPECT_EQ(d.idle_ttl, std::chrono::seconds(300));
    EXPECT_EQ(d.acquire_ttl, std::chrono::seconds(30));
    EXPECT_EQ(d.validate_after, std::chrono::seconds(1));
    EXPECT_TRUE(d.health_check_on_borrow);
    EXPECT_TRUE(d.circuit.has_value()) << "the failure-threshold circuit is on";
    EXPECT_EQ(d.statement_cache_capacity, 512u);
    EXPECT_EQ(d.reset, pg::reset_policy::tracked);
    run([]() -> asio::awaitable<void> {
        pg::pool_config c;
        c.conninfo = tagged("t_defaults");
        pg::pool db(co_await asio::this_coro::executor, c);
        auto [ready] = co_await db.async_wait_ready(asio::as_tuple(asio::use_awaitable));
        EXPECT_FALSE(ready) << ready.message();
        EXPECT_EQ(db.stats().idle, 2u);
        admin a = co_await admin::open();
        EXPECT_EQ(co_await a.backends("t_defaults"), 2);
        EXPECT_EQ(db.state(), respool::circuit_state::closed);
    });
}

TEST_F(pg_pool, a_query_on_the_pool_borrows_runs_and_returns) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, config("t_query"));
        pg::result r = co_await db.async_query("SELECT $1::int + 1 AS n, $2::text AS s", pg::params(41, "x"),
                                               asio::use_awaitable);
        EXPECT_EQ(r.get<std::int32_t>(0, 0), 42);
        EXPECT_EQ(r.get<std::string>(0, 1), "x");
        r = co_await db.async_query("SELECT 1; SELECT 2 AS two", asio::use_awaitable);
        EXPECT_EQ(r.get<std::int32_t>(0, 0), 2);
        const auto s = db.stats();
        EXPECT_EQ(s.acquires, 2u);
        EXPECT_EQ(s.active, 0u) << "returned";
        EXPECT_EQ(s.poisoned, 0u);
    });
}

TEST_F(pg_pool, an_sql_error_or_the_callers_exception_never_poisons_the_connection) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, config("t_sqlerr", 1, 1));
        co_await db.async_query("CREATE TABLE IF NOT EXISTS pool_unique (id int PRIMARY KEY)",
                                asio::use_awaitable);
        co_await db.async_query("DELETE FROM pool_unique", asio::use_awaitable);
        const int before = co_await db.with_connection(pid_of, asio::use_awaitable);
        auto [ec, r] = co_await db.async_query("INSERT INTO pool_unique VALUES (1), (1)",
                                               asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, pg::condition::unique_violation) << ec.message();
        auto [e2, r2] = co_await db.async_query("SELEC 1", asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(e2, pg::condition::syntax_error);
        bool threw = false;
        try {
            co_await db.with_connection(
                [](pg::connection&) -> asio::awaitable<void> { throw std::runtime_error("handler bug"); },
                asio::use_awaitable);
        } catch (const std::runtime_error&) {
            threw = true;
        }
        EXPECT_TRUE(threw);
        EXPECT_EQ(co_await db.with_connection(pid_of, asio::use_awaitable), before) << "the same connection";
        EXPECT_EQ(db.stats().poisoned, 0u);
        EXPECT_EQ(db.stats().destructions, 0u);
    });
}

TEST_F(pg_pool, a_connection_level_failure_poisons_the_connection_and_the_pool_replaces_it) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, config("t_poison", 1, 1));
        const int first = co_await db.with_connection(pid_of, asio::use_awaitable);
        // The backend ends itself: FATAL 57P01 (admin_shutdown), a connection-level failure.
        bool broken = false;
        try {
            co_await db.with_connection(
                [](pg::connection& c) -> asio::awaitable<void> {
                    co_await c.async_query("SELECT pg_terminate_backend(pg_backend_pid())",
                                           asio::use_awaitable);
                },
                asio::use_awaitable);
        } catch (const boost::system::system_error& e) {
            broken = e.code() == pg::condition::connection_broken;
        }
        EXPECT_TRUE(broken);
        EXPECT_EQ(db.stats().poisoned, 1u);
        const int second = co_await db.with_connection(pid_of, asio::use_awaitable);
        EXPECT_NE(second, first) << "a new connection";
    });
}

// A transaction's BEGIN and COMMIT are prepared once per connection and run by name (the server parses
// them no more). A DEALLOCATE of them by hand is seen and they are prepared again; one done out of sight
// (inside a DO block) costs the BEGIN nothing (it runs again) and a COMMIT its transaction, reported,
// never a silent loss; the next transaction commits. Behind a transaction pooler nothing is prepared.
TEST_F(pg_pool, a_transactions_begin_and_commit_are_prepared_once_and_a_deallocate_by_hand_is_survived) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, config("t_tx_control", 1, 1));
        co_await db.async_query(
            "CREATE TABLE IF NOT EXISTS pool_tx_control (id int PRIMARY KEY); DELETE FROM pool_tx_control",
            asio::use_awaitable);
        auto insert = [&db](int id) -> asio::awaitable<error_code> {
            error_code failed;
            try {
                co_await db.transaction(
                    [id](pg::connection& c) -> asio::awaitable<void> {
                        co_await c.async_query("INSERT INTO pool_tx_control VALUES ($1)", pg::params(id),
                                               asio::use_awaitable);
                    },
                    {}, asio::use_awaitable);
            } catch (const boost::system::system_error& e) {
                failed = e.code();
            }
            co_return failed;
        };
        auto on_the_connection = [&db](std::string sql) {  // the pool's one connection
            return db.with_connection(
                [sql](pg::connection& c) -> asio::awaitable<pg::result> {
                    co_return co_await c.async_query(sql, asio::use_awaitable);
                },
                asio::use_awaitable);
        };
        auto name_of = [&](const char* statement) -> asio::awaitable<std::string> {
            pg::result r = co_await on_the_connection(
                std::string("SELECT name FROM pg_prepared_statements WHERE statement = '") + statement + "'");
            co_return r.rows() == 1 ? std::string(r.text(0, 0)) : std::string();
        };
        auto committed = [&]() -> asio::awaitable<std::int64_t> {
            pg::result r = co_await on_the_connection("SELECT count(*) FROM pool_tx_control");
            co_return r.get<std::int64_t>(0, 0);
        };

        const error_code first = co_await insert(1);
        EXPECT_FALSE(first) << first.message();
        if (pg_test::statements() == pg::statement_mode::unnamed) {
            EXPECT_EQ(co_await name_of("BEGIN"), "");
            EXPECT_EQ(co_await name_of("COMMIT"), "");
            co_return;
        }
        const std::string begin = co_await name_of("BEGIN");
        const std::string commit = co_await name_of("COMMIT");
        EXPECT_NE(begin, "");
        EXPECT_NE(commit, "");

        // Seen: prepared again under new names.
        co_await on_the_connection("DEALLOCATE " + commit);
        const error_code second = co_await insert(2);
        EXPECT_FALSE(second) << second.message();
        const std::string commit2 = co_await name_of("COMMIT");
        EXPECT_NE(commit2, "");
        EXPECT_NE(commit2, commit);
        co_await on_the_connection("DEALLOCATE ALL");
        const error_code third = co_await insert(3);
        EXPECT_FALSE(third) << third.message();

        // Out of sight, the BEGIN: it fails, opens nothing, and runs again by a new name.
        const std::string begin3 = co_await name_of("BEGIN");
        co_await on_the_connection("DO $$BEGIN EXECUTE 'DEALLOCATE " + begin3 + "'; END$$");
        const error_code fourth = co_await insert(4);
        EXPECT_FALSE(fourth) << fourth.message();
        EXPECT_NE(co_await name_of("BEGIN"), begin3);
        EXPECT_EQ(co_await committed(), 4);

        // Out of sight, the COMMIT: inside the transaction it cannot run again; the transaction fails
        // with the server's word for it (nothing committed), and the next one commits.
        const std::string commit4 = co_await name_of("COMMIT");
        co_await on_the_connection("DO $$BEGIN EXECUTE 'DEALLOCATE " + commit4 + "'; END$$");
        const error_code fifth = co_await insert(5);
        EXPECT_EQ(pg::sqlstate_of(fifth), "26000") << fifth.message();
        EXPECT_EQ(co_await committed(), 4);
        const error_code sixth = co_await insert(6);
        EXPECT_FALSE(sixth) << sixth.message();
        EXPECT_EQ(co_await committed(), 5);

        // Out of sight, the ROLLBACK, inside a transaction: the failed Bind aborted the transaction, and
        // rolling back is still what was asked: it runs again by a new name and succeeds.
        const bool rolled_back = co_await db.with_connection(
            [](pg::connection& c) -> asio::awaitable<bool> {
                co_await c.async_query("ROLLBACK", asio::use_awaitable);  // prepared (a warning: none open)
                pg::result r = co_await c.async_query(
                    "SELECT name FROM pg_prepared_statements WHERE statement = 'ROLLBACK'",
                    asio::use_awaitable);
                const std::string name(r.text(0, 0));
                co_await c.async_query("BEGIN", asio::use_awaitable);
                co_await c.async_query("INSERT INTO pool_tx_control VALUES (7)", asio::use_awaitable);
                co_await c.async_query("DO $$BEGIN EXECUTE 'DEALLOCATE " + name + "'; END$$",
                                       asio::use_awaitable);
                auto [ec, done] = co_await c.async_query("ROLLBACK", asio::as_tuple(asio::use_awaitable));
                EXPECT_FALSE(ec) << ec.message() << ": " << c.last_error().message;
                const bool idle = !ec && c.transaction_state() == pg::transaction_status::idle;
                pg::result again = co_await c.async_query(
                    "SELECT name FROM pg_prepared_statements WHERE statement = 'ROLLBACK'",
                    asio::use_awaitable);
                EXPECT_EQ(again.rows(), 1u);
                if (again.rows() == 1) {
                    EXPECT_NE(again.text(0, 0), name) << "prepared again, under a new name";
                }
                co_return idle;
            },
            asio::use_awaitable);
        EXPECT_TRUE(rolled_back);
        EXPECT_EQ(co_await committed(), 5) << "the row of the rolled back transaction is not there";
        EXPECT_EQ(db.stats().poisoned, 0u);
    });
}

TEST_F(pg_pool, a_transaction_commits_or_rolls_back_and_the_exception_goes_on) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, config("t_tx", 2, 1));
        co_await db.async_query(
            "CREATE TABLE IF NOT EXISTS pool_tx (id int PRIMARY KEY); DELETE FROM pool_tx",
            asio::use_awaitable);
        co_await db.transaction(
            [](pg::connection& c) -> asio::awaitable<void> {
                co_await c.async_query("INSERT INTO pool_tx VALUES ($1)", pg::params(1), asio::use_awaitable);
            },
            {}, asio::use_awaitable);
        bool threw = false;
        try {
            co_await db.transaction(
                [](pg::connection& c) -> asio::awaitable<void> {
                    co_await c.async_query("INSERT INTO pool_tx VALUES ($1)", pg::params(2),
                                           asio::use_awaitable);
                    throw std::runtime_error("changed my mind");
                },
                {}, asio::use_awaitable);
        } catch (const std::runtime_error&) {
            threw = true;
        }
        EXPECT_TRUE(threw);
        const int n = co_await db.transaction(
            [](pg::connection& c) -> asio::awaitable<int> {
                auto r = co_await c.async_query("SELECT count(*)::int FROM pool_tx", asio::use_awaitable);
                co_return r.get<std::int32_t>(0, 0);
            },
            {.level = pg::isolation::repeatable_read, .read_only = true}, asio::use_awaitable);
        EXPECT_EQ(n, 1) << "the first committed, the second rolled back";
        // A read-only transaction refuses writes (read_only, the borrower's own: no failover).
        auto [e] = co_await db.transaction(
            [](pg::connection& c) -> asio::awaitable<void> {
                co_await c.async_query("INSERT INTO pool_tx VALUES (3)", asio::use_awaitable);
            },
            {.read_only = true}, asio::as_tuple(asio::use_awaitable));
        EXPECT_TRUE(e);
        EXPECT_EQ(db.stats().poisoned, 0u);
        EXPECT_EQ(db.stats().replaced, 0u) << "a read-only transaction of one's own is not a failover";
    });
}

// A transaction that fn ended itself (or whose BEGIN failed) is not reported as committed: at COMMIT
// no transaction is open, so fn's statements were not one transaction; transaction() says so (25P01)
// instead of sending a COMMIT that would only warn.
TEST_F(pg_pool, a_transaction_no_longer_open_at_commit_is_an_error) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, config("t_tx_gone", 1, 1));
        auto [e] = co_await db.transaction(
            [](pg::connection& c) -> asio::awaitable<void> {
                co_await c.async_query("SELECT 1", asio::use_awaitable);
                co_await c.async_query("COMMIT", asio::use_awaitable);
            },
            {}, asio::as_tuple(asio::use_awaitable));
        std::string what;
        try {
            if (e) std::rethrow_exception(e);
        } catch (const boost::system::system_error& x) {
            EXPECT_EQ(pg::sqlstate_of(x.code()), "25P01");
            what = x.what();
        }
        EXPECT_NE(what.find("no transaction was open at COMMIT"), std::string::npos) << what;
        EXPECT_EQ(db.stats().poisoned, 0u);
    });
}

// transaction() sends its BEGIN with the first statement, in the same round trip (as pgjdbc does): a
// simple-protocol statement goes as one script "BEGIN ...;\n<statement>" (pg_stat_activity shows it),
// a statement with parameters in one pipeline with it; either way it runs inside the transaction, with
// its options. A transaction that runs no statement sends nothing at all.
TEST_F(pg_pool, a_transaction_sends_its_begin_with_its_first_statement) {
    run([]() -> asio::awaitable<void> {
        auto cfg = config("t_begin", 1, 1);
        cfg.validate_after = std::chrono::hours(1);  // no validation query in the way
        pg::pool db(co_await asio::this_coro::executor, cfg);
        admin a = co_await admin::open();
        const int pid = co_await db.with_connection(
            [](pg::connection& c) -> asio::awaitable<int> { co_return co_await pid_of(c); },
            asio::use_awaitable);
        auto last = [&]() -> asio::awaitable<std::string> {
            auto r =
                co_await a.query("SELECT query FROM pg_stat_activity WHERE pid = " + std::to_string(pid));
            co_return r.text(0, 0);
        };
        const std::string level = co_await db.transaction(
            [&](pg::connection& c) -> asio::awaitable<std::string> {
                EXPECT_EQ(c.transaction_state(), pg::transaction_status::in_transaction)
                    << "open, not sent yet";
                auto r = co_await c.async_query("SELECT current_setting('transaction_isolation')",
                                                asio::use_awaitable);
                EXPECT_EQ(co_await last(),
                          "BEGIN ISOLATION LEVEL SERIALIZABLE;\nSELECT "
                          "current_setting('transaction_isolation')");
                co_return r.get<std::string>(0, 0);
            },
            {.level = pg::isolation::serializable}, asio::use_awaitable);
        EXPECT_EQ(level, "serializable");
        const std::string bound = co_await db.transaction(
            [](pg::connection& c) -> asio::awaitable<std::string> {
                auto r = co_await c.async_query("SELECT current_setting('transaction_isolation'), $1::int",
                                                pg::params(7), asio::use_awaitable);
                EXPECT_EQ(r.get<std::int32_t>(0, 1), 7);
                co_return r.get<std::string>(0, 0);
            },
            {.level = pg::isolation::repeatable_read}, asio::use_awaitable);
        EXPECT_EQ(bound, "repeatable read");
        EXPECT_EQ(co_await last(), "COMMIT");
        co_await db.async_query("SELECT 'marker-begin'", asio::use_awaitable);
        co_await db.transaction([](pg::connection&) -> asio::awaitable<void> { co_return; }, {},
                                asio::use_awaitable);
        auto [thrown] = co_await db.transaction(
            [](pg::connection&) -> asio::awaitable<void> {
                throw std::runtime_error("before any statement");
                co_return;
            },
            {}, asio::as_tuple(asio::use_awaitable));
        EXPECT_TRUE(thrown);
        EXPECT_EQ(co_await last(), "SELECT 'marker-begin'") << "neither transaction sent anything";
        // The first statement fails: the transaction is rolled back, the connection lent again clean.
        auto [failed] = co_await db.transaction(
            [](pg::connection& c) -> asio::awaitable<void> {
                co_await c.async_query("SELECT 1 / $1::int", pg::params(0), asio::use_awaitable);
            },
            {}, asio::as_tuple(asio::use_awaitable));
        EXPECT_TRUE(failed);
        const auto state = co_await db.with_connection(
            [](pg::connection& c) -> asio::awaitable<pg::transaction_status> {
                co_return c.transaction_state();
            },
            asio::use_awaitable);
        EXPECT_EQ(state, pg::transaction_status::idle);
        EXPECT_EQ(db.stats().poisoned, 0u);
    });
}

TEST_F(pg_pool, a_commit_the_server_turned_into_a_rollback_is_an_error) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, config("t_commit_rb", 1, 1));
        bool reported = false;
        try {
            co_await db.transaction(
                [](pg::connection& c) -> asio::awaitable<void> {
                    auto [ec, r] = co_await c.async_query("SELECT 1/0", asio::as_tuple(asio::use_awaitable));
                    EXPECT_TRUE(ec);  // swallowed by the function: the transaction is aborted all the same
                },
                {}, asio::use_awaitable);
        } catch (const boost::system::system_error& e) {
            reported = pg::sqlstate_of(e.code()) == "25P02";
        }
        EXPECT_TRUE(reported);
    });
}

// A real serialization failure: in REPEATABLE READ the transaction reads a row, another session
// updates it and commits, then the transaction's own update fails with 40001. The second attempt
// (a new snapshot) succeeds.
TEST_F(pg_pool, a_serialization_failure_is_retried_within_the_bound) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, config("t_retry", 2, 1));
        admin other = co_await admin::open();
        co_await other.query(
            "CREATE TABLE IF NOT EXISTS pool_retry (id int PRIMARY KEY, v int); DELETE FROM pool_retry; "
            "INSERT INTO "
            "pool_retry VALUES (1, 0)");
        int attempts = 0;
        auto body = [&](pg::connection& c) -> asio::awaitable<void> {
            ++attempts;
            co_await c.async_query("SELECT v FROM pool_retry WHERE id = 1", asio::use_awaitable);
            if (attempts == 1) co_await other.query("UPDATE pool_retry SET v = v + 100 WHERE id = 1");
            co_await c.async_query("UPDATE pool_retry SET v = v + 1 WHERE id = 1", asio::use_awaitable);
        };
        co_await db.transaction(body, {.level = pg::isolation::repeatable_read, .max_attempts = 3},
                                asio::use_awaitable);
        EXPECT_EQ(attempts, 2);
        EXPECT_EQ(co_await other.count("SELECT v FROM pool_retry WHERE id = 1"), 101);
        // Without attempts left the failure reaches the caller, as serialization_failure.
        attempts = 0;
        bool failed = false;
        try {
            co_await db.transaction(body, {.level = pg::isolation::repeatable_read}, asio::use_awaitable);
        } catch (const boost::system::system_error& e) {
            failed = e.code() == pg::condition::serialization_failure;
        }
        EXPECT_TRUE(failed);
        EXPECT_EQ(attempts, 1);
        EXPECT_EQ(db.stats().poisoned, 0u);
    });
}

TEST_F(pg_pool, a_dirty_session_never_reaches_the_next_borrower) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, config("t_dirty", 1, 1));
        const int pid = co_await db.with_connection(
            [](pg::connection& c) -> asio::awaitable<int> {
                co_await c.async_query(
                    "SET search_path = nowhere, public; CREATE TEMP TABLE scratch (x int); "
                    "SELECT pg_advisory_lock(4242); LISTEN somewhere; PREPARE mine AS SELECT 1; "
                    "SELECT set_config('work_mem', '77MB', false)",
                    asio::use_awaitable);
                co_await c.async_query("BEGIN; INSERT INTO scratch VALUES (1)",
                                       asio::use_awaitable);  // left open
                co_return co_await pid_of(c);
            },
            asio::use_awaitable);
        co_await db.with_connection(
            [pid](pg::connection& c) -> asio::awaitable<void> {
                EXPECT_EQ(co_await pid_of(c), pid) << "the same connection, reset rather than replaced";
                EXPECT_EQ(c.transaction_state(), pg::transaction_status::idle);
                auto r = co_await c.async_query(
                    "SELECT current_setting('search_path'), to_regclass('pg_temp.scratch') IS NULL, "
                    "(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()), "
                    "(SELECT count(*) FROM pg_listening_channels()), "
                    "(SELECT count(*) FROM pg_prepared_statements WHERE from_sql), "
                    "current_setting('work_mem')",
                    asio::use_awaitable);
                EXPECT_EQ(r.text(0, 0), "\"$user\", public");
                EXPECT_TRUE(r.get<bool>(0, 1)) << "the temporary table is gone";
                EXPECT_EQ(r.get<std::int64_t>(0, 2), 0) << "the advisory lock is released";
                EXPECT_EQ(r.get<std::int64_t>(0, 3), 0) << "no LISTEN left";
                EXPECT_EQ(r.get<std::int64_t>(0, 4), 0) << "the hand-made statement is gone";
                EXPECT_EQ(r.text(0, 5), "4MB") << "set_config undone";
            },
            asio::use_awaitable);
        EXPECT_EQ(db.stats().broken, 0u);
        EXPECT_EQ(db.stats().destructions, 0u);
    });
}

// The server's pg_stat_activity.query keeps the last statement a backend ran: after a clean release
// it is still the borrower's (no ROLLBACK, no reset was sent); after a dirty one it is the reset.
TEST_F(pg_pool, a_clean_release_costs_no_round_trip) {
    run([]() -> asio::awaitable<void> {
        auto c = config("t_clean", 1, 1);
        c.validate_after = std::chrono::hours(1);  // no validation query in the way
        pg::pool db(co_await asio::this_coro::executor, c);
        admin a = co_await admin::open();
        const int pid = co_await db.with_connection(
            [](pg::connection& conn) -> asio::awaitable<int> {
                const int p = co_await pid_of(conn);
                co_await conn.async_query("SELECT 'marker-clean'", asio::use_awaitable);
                co_return p;
            },
            asio::use_awaitable);
        auto last = [&]() -> asio::awaitable<std::string> {
            auto r =
                co_await a.query("SELECT query FROM pg_stat_activity WHERE pid = " + std::to_string(pid));
            co_return r.text(0, 0);
        };
        EXPECT_EQ(co_await last(), "SELECT 'marker-clean'");
        co_await db.async_query("SET statement_timeout = '1min'", asio::use_awaitable);
        // The reset runs on the way back, after the query completed: wait for the server to see it.
        co_await a.wait_until([&](admin&) -> asio::awaitable<bool> {
            co_return (co_await last()).find("RESET ALL") != std::string::npos;
        });
        co_await db.async_query("SELECT 'marker-again'", asio::use_awaitable);
        EXPECT_EQ(co_await last(), "SELECT 'marker-again'") << "clean again after the reset";
    });
}

// A statement still running at release is cancelled on the server and drained; the connection is
// lent again, not replaced.
TEST_F(pg_pool, a_connection_released_mid_statement_is_cancelled_and_drained) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, config("t_midq", 1, 1));
        admin a = co_await admin::open();
        error_code abandoned = pg::error::busy;
        int pid = 0;
        {
            auto l = co_await db.async_acquire(asio::use_awaitable);
            pid = co_await pid_of(*l);
            l->async_query("SELECT pg_sleep(30)", [&](error_code ec, pg::result) { abandoned = ec; });
        }  // released with the statement running
        auto l = co_await db.async_acquire(asio::use_awaitable);
        EXPECT_EQ(co_await pid_of(*l), pid) << "drained, not replaced";
        EXPECT_EQ(abandoned, asio::error::operation_aborted);
        EXPECT_EQ(
            co_await a.count("SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' "
                             "AND state = 'active' AND pid = " +
                             std::to_string(pid)),
            0);
    });
}

// A backend terminated while idle in the pool is found dead before hand-out by reading what the
// socket holds (no validation query: validate_after is an hour) and replaced; the borrower never
// sees it. (alive_check_after 0: the socket is looked at however recently the server answered.)
TEST_F(pg_pool, a_terminated_idle_connection_is_replaced_without_a_round_trip) {
    run([]() -> asio::awaitable<void> {
        auto c = config("t_term_idle", 2, 1);
        c.validate_after = std::chrono::hours(1);
        c.alive_check_after = std::chrono::milliseconds(0);
        pg::pool db(co_await asio::this_coro::executor, c);
        admin a = co_await admin::open();
        const int pid = co_await db.with_connection(pid_of, asio::use_awaitable);
        co_await a.terminate(pid);
        const int next = co_await db.with_connection(pid_of, asio::use_awaitable);
        EXPECT_NE(next, pid);
        EXPECT_EQ(db.stats().rejected, 1u) << "before_acquire (alive_nowait) said no";
    });
}

// The other side of alive_check_after: a connection the server answered on within the window is
// lent without a look at its socket (the system call a busy pool saves per borrow). A backend
// terminated inside the window therefore reaches the borrower, whose statement fails with
// connection_broken; the pool poisons it and the next borrower gets a new connection.
TEST_F(pg_pool, a_connection_that_answered_within_alive_check_after_is_trusted) {
    run([]() -> asio::awaitable<void> {
        auto c = config("t_trust", 2, 1);
        c.validate_after = std::chrono::hours(1);
        c.alive_check_after = std::chrono::hours(1);
        pg::pool db(co_await asio::this_coro::executor, c);
        admin a = co_await admin::open();
        const int pid = co_await db.with_connection(pid_of, asio::use_awaitable);
        co_await a.terminate(pid);
        auto [ec, r] = co_await db.async_query("SELECT 1", asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, pg::condition::connection_broken) << ec.message();
        EXPECT_EQ(db.stats().rejected, 0u) << "not looked at";
        EXPECT_EQ(db.stats().poisoned, 1u);
        const int next = co_await db.with_connection(pid_of, asio::use_awaitable);
        EXPECT_NE(next, pid);
    });
}

TEST_F(pg_pool, the_statement_cache_prepares_once_and_deallocates_what_it_evicts) {
    run([]() -> asio::awaitable<void> {
        auto c = config("t_cache", 1, 1);
        c.statement_cache_capacity = 2;
        pg::pool db(co_await asio::this_coro::executor, c);
        co_await db.with_connection(
            [](pg::connection& conn) -> asio::awaitable<void> {
                for (int round = 0; round < 2; ++round)
                    for (int k = 1; k <= 3; ++k) {
                        auto r = co_await conn.async_query("SELECT $1::int * " + std::to_string(k),
                                                           pg::params(2), asio::use_awaitable);
                        EXPECT_EQ(r.get<std::int32_t>(0, 0), 2 * k);
                    }
                EXPECT_EQ(conn.cached_statements(), 2u);
                auto r = co_await conn.async_query(
                    "SELECT count(*) FROM pg_prepared_statements WHERE NOT from_sql", asio::use_awaitable);
                EXPECT_EQ(r.get<std::int64_t>(0, 0), 2) << "evicted statements are deallocated on the server";
            },
            asio::use_awaitable);
    });
}

// A cached statement whose table changed shape fails with 0A000 on the server; outside a
// transaction it is prepared again and run once more, transparently; inside one the error stands.
TEST_F(pg_pool, a_stale_cached_statement_is_prepared_again_outside_a_transaction) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, config("t_stale", 1, 1));
        co_await db.with_connection(
            [](pg::connection& c) -> asio::awaitable<void> {
                co_await c.async_query(
                    "DROP TABLE IF EXISTS pool_stale; CREATE TABLE pool_stale (id int, a text); "
                    "INSERT INTO pool_stale VALUES (1, 'x')",
                    asio::use_awaitable);
                const std::string q = "SELECT * FROM pool_stale WHERE id = $1";
                auto r = co_await c.async_query(q, pg::params(1), asio::use_awaitable);
                EXPECT_EQ(r.columns(), 2u);
                co_await c.async_query("ALTER TABLE pool_stale ADD COLUMN b int", asio::use_awaitable);
                r = co_await c.async_query(q, pg::params(1), asio::use_awaitable);
                EXPECT_EQ(r.columns(), 3u) << "prepared again, transparently";
                co_await c.async_query("ALTER TABLE pool_stale ADD COLUMN d int", asio::use_awaitable);
                co_await c.async_query("BEGIN", asio::use_awaitable);
                auto [ec, r2] = co_await c.async_query(q, pg::params(1), asio::as_tuple(asio::use_awaitable));
                EXPECT_EQ(pg::sqlstate_of(ec), "0A000") << "in a transaction the error stands";
                co_await c.async_query("ROLLBACK", asio::use_awaitable);
                r = co_await c.async_query(q, pg::params(1), asio::use_awaitable);
                EXPECT_EQ(r.columns(), 4u);
            },
            asio::use_awaitable);
    });
}

TEST_F(pg_pool, unnamed_statements_leave_nothing_prepared_for_pgbouncer) {
    run([]() -> asio::awaitable<void> {
        auto c = config("t_unnamed", 1, 1);
        c.statements = pg::statement_mode::unnamed;
        pg::pool db(co_await asio::this_coro::executor, c);
        auto r = co_await db.async_query("SELECT $1::int", pg::params(5), asio::use_awaitable);
        EXPECT_EQ(r.get<std::int32_t>(0, 0), 5);
        r = co_await db.async_query("SELECT count(*) FROM pg_prepared_statements", pg::params(),
                                    asio::use_awaitable);
        EXPECT_EQ(r.get<std::int64_t>(0, 0), 0);
    });
}

// A statement's handler runs on its own executor, whichever way it is bound: an any_io_executor (read
// once when the statement starts) or an executor of another type (asked when the reply arrives). Here
// both are an event loop on another thread, for a pool's statement, a pipelined pool's and a
// connection's.
TEST_F(pg_pool, a_statements_handler_runs_on_its_own_executor) {
    loop caller;
    std::atomic<int> done{0};
    std::atomic<int> elsewhere{0};
    auto check = [&](error_code ec, pg::result r) {
        EXPECT_FALSE(ec) << ec.message();
        EXPECT_EQ(r.rows(), 1u);
        if (!caller.io.get_executor().running_in_this_thread()) ++elsewhere;
        ++done;
    };
    run([&]() -> asio::awaitable<void> {
        auto piped = config("t_handler_ex", 2);
        piped.pipeline_depth = 4;
        pg::pool db(co_await asio::this_coro::executor, config("t_handler_ex", 2));
        pg::pool pipelined(co_await asio::this_coro::executor, piped);
        pg::connection c(co_await asio::this_coro::executor);
        co_await c.async_connect(conninfo(), 10s, asio::use_awaitable);
        const asio::any_io_executor erased = caller.io.get_executor();
        int started = 0;
        for (const bool as_any : {true, false}) {
            if (as_any) {
                db.async_query("SELECT 1", pg::params(), asio::bind_executor(erased, check));
                pipelined.async_query("SELECT 1", pg::params(), asio::bind_executor(erased, check));
                co_await poll_until([&] { return done.load() == started + 2; });
                c.async_query("SELECT 1", pg::params(), asio::bind_executor(erased, check));
            } else {
                db.async_query("SELECT 1", pg::params(),
                               asio::bind_executor(caller.io.get_executor(), check));
                pipelined.async_query("SELECT 1", pg::params(),
                                      asio::bind_executor(caller.io.get_executor(), check));
                co_await poll_until([&] { return done.load() == started + 2; });
                c.async_query("SELECT 1", pg::params(), asio::bind_executor(caller.io.get_executor(), check));
            }
            started += 3;
            co_await poll_until([&] { return done.load() == started; });
        }
        db.close();
        pipelined.close();
    });
    EXPECT_EQ(done.load(), 6);
    EXPECT_EQ(elsewhere.load(), 0) << "a handler ran off its own executor";
}

TEST_F(pg_pool, an_exhausted_acquire_says_how_the_pool_stood) {
    run([]() -> asio::awaitable<void> {
        auto c = config("t_exhausted", 1, 1);
        c.borrow_timeout = std::chrono::milliseconds(50);
        pg::pool db(co_await asio::this_coro::executor, c);
        // The first lease may wait for the connect (slow under a sanitizer): not the 50 ms under test.
        auto held =
            co_await db.async_acquire(respool::duration(std::chrono::seconds(30)), asio::use_awaitable);
        respool::diagnostics diag;
        auto [ec, l] =
            co_await db.async_acquire(c.borrow_timeout, &diag, asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, respool::errc::exhausted);
        EXPECT_NE(diag.message.find("1 in use of max 1"), std::string::npos) << diag.message;
        bool thrown = false;
        try {
            co_await db.with_connection(pid_of, asio::use_awaitable);
        } catch (const boost::system::system_error& e) {
            thrown = e.code() == respool::errc::exhausted &&
                     std::string(e.what()).find("max 1") != std::string::npos;
        }
        EXPECT_TRUE(thrown);
    });
}

// Values that look odd but work (docs/10-bad-input.md): statement_cache_capacity 0 turns the cache off
// (statements with parameters go unnamed), an empty validation_query is a round trip that passes
// (PostgreSQL answers an empty query), and connect_timeout = duration::max() means no deadline (not an
// overflow of the pool's create_timeout). A validation_query that fails, by contrast, rejects the
// connection: so the validation did run above.
TEST_F(pg_pool, odd_values_that_work_are_accepted) {
    run([]() -> asio::awaitable<void> {
        auto c = config("t_odd_values", 1, 1);
        c.statement_cache_capacity = 0;
        c.validation_query = "";
        c.validate_after = {};
        c.connect_timeout = respool::duration::max();
        pg::pool db(co_await asio::this_coro::executor, c);
        asio::steady_timer pause(co_await asio::this_coro::executor);
        // The client's connection object, not the server's pid: behind a transaction pooler one client
        // connection meets several server processes.
        const pg::connection* first = nullptr;
        for (int i = 0; i < 3; ++i) {
            pause.expires_after(30ms);  // idle past validate_after on the pool's 10 ms clock
            co_await pause.async_wait(asio::use_awaitable);
            auto l = co_await db.async_acquire(asio::use_awaitable);
            auto r = co_await l->async_query("SELECT $1::int + 1", pg::params(i), asio::use_awaitable);
            EXPECT_EQ(r.get<std::int32_t>(0, 0), i + 1);
            EXPECT_EQ(l->cached_statements(), 0u) << "capacity 0: nothing prepared";
            if (i == 0) first = &*l;
            EXPECT_EQ(&*l, first) << "the empty validation query passed: the same connection";
        }
        EXPECT_EQ(db.stats().rejected, 0u);
        EXPECT_EQ(db.stats().creations, 1u);

        auto bad = config("t_odd_values_bad", 1, 1);
        bad.validation_query = "SELEC 1";
        bad.validate_after = {};
        pg::pool failing(co_await asio::this_coro::executor, bad);
        for (int i = 0; i < 2; ++i) {
            pause.expires_after(30ms);
            co_await pause.async_wait(asio::use_awaitable);
            auto l = co_await failing.async_acquire(asio::use_awaitable);
        }
        EXPECT_GE(failing.stats().rejected, 1u) << "a failing validation query rejects the connection";
    });
}

// libpq 15 parses these and fails only when a connect starts: the pool refuses them at construction,
// naming the option, never quoting the password.
TEST(pg_pool_conninfo, malformed_option_values_are_refused_at_construction_by_name) {
    asio::io_context io;
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"host=127.0.0.1 password=hunter2 port=notaport", "option port: \"notaport\""},
        {"host=127.0.0.1 password=hunter2 port=-5", "option port: \"-5\""},
        {"host=127.0.0.1 password=hunter2 port=70000", "option port: \"70000\""},
        {"host=127.0.0.1 password=hunter2 port=0", "option port: \"0\""},
        {"host=127.0.0.1 password=hunter2 sslmode=bogus", "option sslmode: \"bogus\""},
        {"host=127.0.0.1 password=hunter2 connect_timeout=soon", "option connect_timeout: \"soon\""},
        {"host=127.0.0.1 password=hunter2 connect_timeout=-1", "option connect_timeout"},
        {"host=127.0.0.1 password=hunter2 connect_timeout=99999999999", "option connect_timeout"},
        {"host=127.0.0.1 password=hunter2 keepalives_idle=x", "option keepalives_idle"},
        {"host=127.0.0.1 password=hunter2 gssencmode=maybe", "option gssencmode"},
        {"host=127.0.0.1 password=hunter2 target_session_attrs=writable", "option target_session_attrs"},
        {"host=127.0.0.1 password=hunter2 ssl_min_protocol_version=TLSv9", "option ssl_min_protocol_version"},
        {"postgresql://app:hunter2@h:notaport/db", "option port: \"notaport\""},
        {"postgresql://app:hunter2@h/db?sslmode=bogus", "option sslmode: \"bogus\""},
        {"postgresql://app:hunter2@h/db?connect_timeout=x", "option connect_timeout"},
        {"host=a,b,c port=5432,5433 password=hunter2", "option port: 2 ports for 3 hosts"},
        {"postgresql://app:hunter2@a:1,b:x/db", "option port: \"x\""},
        {"host=a,b hostaddr=127.0.0.1 password=hunter2", "option hostaddr: 1 addresses for 2 hosts"},
    };
    for (const auto& [info, says] : cases) {
        pg::pool_config c;
        c.conninfo = info;
        try {
            pg::pool db(io.get_executor(), c);
            ADD_FAILURE() << "accepted: " << info;
        } catch (const std::invalid_argument& e) {
            const std::string m = e.what();
            EXPECT_NE(m.find(says), std::string::npos) << info << " -> " << m;
            EXPECT_EQ(m.find("hunter2"), std::string::npos) << m;
        }
    }
    // What libpq takes: one port for every host, one per host, empty entries (the default), blanks
    // around a number, the modes in any case libpq allows.
    for (const std::string info :
         {"host=a,b port=5432", "host=a,b port=5432,5433", "host=a,b port=,5433", "port=' 5432 '",
          "postgresql://a:1,b:2/db", "postgresql://a,b:2,c/db", "sslmode=verify-full connect_timeout=0",
          "ssl_min_protocol_version=tlsv1.2 target_session_attrs=prefer-standby", "port="}) {
        pg::pool_config c;
        c.conninfo = info;
        c.min_idle = 0;
        EXPECT_NO_THROW(pg::pool(io.get_executor(), c)) << info;
    }
}

TEST_F(pg_pool, bad_settings_are_named_and_the_password_is_masked) {
    asio::io_context io;
    pg::pool_config c;
    c.conninfo = "host=127.0.0.1 password=hunter2 bogus_option=1";
    try {
        pg::pool db(io.get_executor(), c);
        ADD_FAILURE() << "accepted";
    } catch (const std::invalid_argument& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("conninfo"), std::string::npos) << m;
        EXPECT_NE(m.find("bogus_option"), std::string::npos) << m;
        EXPECT_EQ(m.find("hunter2"), std::string::npos) << m;
    }
    c = {};
    c.conninfo = conninfo();
    c.max = 16;  // set, to its default's value: min_idle alone would raise the max it was left at
    c.min_idle = 20;
    EXPECT_THROW(pg::pool(io.get_executor(), c), std::invalid_argument);
    // Each refused setting is named (docs/10-bad-input.md).
    const std::vector<std::pair<std::function<void(pg::pool_config&)>, std::string>> cases = {
        {[](pg::pool_config& b) { b.max = 0; }, "max must be at least 1"},
        {[](pg::pool_config& b) { b.connect_timeout = {}; }, "connect_timeout must be positive"},
        {[](pg::pool_config& b) { b.borrow_timeout = -1ms; }, "borrow_timeout must not be negative"},
        {[](pg::pool_config& b) { b.statement_timeout = -1ms; }, "statement_timeout must not be negative"},
        {[](pg::pool_config& b) { b.cancel_drain_limit = {}; }, "cancel_drain_limit must be positive"},
        {[](pg::pool_config& b) { b.alive_check_after = -1ms; }, "alive_check_after must not be negative"},
        {[](pg::pool_config& b) { b.pipeline_depth = 0; }, "pipeline_depth must be at least 1"},
        {[](pg::pool_config& b) { b.connect_retry_initial = -1ms; },
         "connect_retry_initial must not be negative"},
        {[](pg::pool_config& b) {
             b.connect_retry_initial = 50ms;
             b.connect_retry_max = 10ms;
         },
         "connect_retry_max must not be below connect_retry_initial"},
        {[](pg::pool_config& b) { b.circuit->failures_to_open = 0; },
         "circuit: respool: failures_to_open (0)"},
        {[](pg::pool_config& b) { b.circuit->probes = 0; }, "circuit: respool: probes (0)"},
        {[](pg::pool_config& b) { b.circuit->cool_down = -1s; }, "circuit: respool: cool_down (-1s)"},
        {[](pg::pool_config& b) { b.circuit->successes_to_close = 0; },
         "circuit: respool: successes_to_close (0)"},
        // The rules of the generic pool (respool::validate), which names them as pool_config does.
        {[](pg::pool_config& b) { b.check_timeout = {}; }, "check_timeout (0ms) must be positive"},
        {[](pg::pool_config& b) { b.reset_timeout = {}; }, "reset_timeout (0ms) must be positive"},
        {[](pg::pool_config& b) { b.idle_ttl = -1ms; }, "idle_ttl (-1ms) must not be negative"},
        {[](pg::pool_config& b) { b.healthcheck_interval = -1ms; },
         "healthcheck_interval (-1ms) must not be negative"},
        {[](pg::pool_config& b) { b.acquire_ttl = -1ms; }, "acquire_ttl (-1ms) must not be negative"},
        {[](pg::pool_config& b) { b.max_lifetime = -1ms; }, "max_lifetime (-1ms) must not be negative"},
        {[](pg::pool_config& b) { b.validate_after = -1ms; }, "validate_after (-1ms) must not be negative"},
        {[](pg::pool_config& b) { b.max_waiters = std::size_t{1} << 32; },
         "max_waiters (4294967296) is too large"},
        {[](pg::pool_config& b) { b.max = std::size_t{1} << 31; },
         "max (2147483648) must not exceed 2147483647"},
    };
    for (const auto& [spoil, says] : cases) {
        pg::pool_config b;
        b.conninfo = conninfo();
        spoil(b);
        try {
            pg::pool db(io.get_executor(), b);
            ADD_FAILURE() << "accepted: " << says;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
        }
    }
}
