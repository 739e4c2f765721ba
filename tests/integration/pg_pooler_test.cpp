// respool behind PgBouncer in transaction mode (the pgbouncer fixture, tests/integration/pgbouncer.sh),
// through its database respool_single: a pool of one server connection, so that every client's
// transactions run on the same backend one after the other and what one client leaves there is what
// the next finds. The claims of docs/06-postgresql.md ("Behind PgBouncer"):
// - named prepared statements (statement_mode::cache) collide on a server connection PgBouncer shares,
//   unnamed ones leave nothing behind;
// - a session change reaches the next client of that server connection unless the reset on return
//   runs, and the tracked reset runs on the server connection PgBouncer lends for it;
// - clients taking turns on one server connection stay clean (no reset for nothing);
// - a startup setting (options=-c ...) is refused at connect, naming it.
#include "pg_test_support.hpp"

#include <respool/pg/errors.hpp>
#include <respool/pg/pool.hpp>

#include <boost/asio/as_tuple.hpp>

#include <gtest/gtest.h>

#include <string>

using namespace pg_test;

namespace {

class pg_pooler : public ::testing::Test {
protected:
    void SetUp() override {
        if (conninfo().empty() || !behind_pooler())
            GTEST_SKIP() << "needs PgBouncer: run through ctest -L pooler";
    }
};

// PgBouncer's database with one server connection (a later dbname overrides the first).
std::string single() {
    return conninfo() + " dbname=respool_single";
}

asio::awaitable<pg::connection> open(pg::statement_mode mode) {
    pg::connection c(co_await asio::this_coro::executor);
    co_await c.async_connect(single(), 10s, asio::use_awaitable);
    c.set_statement_mode(mode);
    co_return c;
}

}  // namespace

TEST_F(pg_pooler, named_statements_collide_on_a_shared_server_connection_and_unnamed_ones_do_not) {
    run([]() -> asio::awaitable<void> {
        pg::connection a = co_await open(pg::statement_mode::cache);
        pg::connection b = co_await open(pg::statement_mode::cache);
        co_await a.async_query("DEALLOCATE ALL", asio::use_awaitable);  // what earlier clients left
        auto r = co_await a.async_query("SELECT $1::int + 1", pg::params(1), asio::use_awaitable);
        EXPECT_EQ(r.get<std::int32_t>(0, 0), 2);
        // b names its first statement as a did: the server connection already has one by that name.
        auto [ec, r2] = co_await b.async_query("SELECT $1::text || '!'", pg::params(std::string("b")),
                                               asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(pg::sqlstate_of(ec), "42P05") << ec.message() << ": " << b.last_error().message;
        co_await a.async_query("DEALLOCATE ALL", asio::use_awaitable);

        a.set_statement_mode(pg::statement_mode::unnamed);
        b.set_statement_mode(pg::statement_mode::unnamed);
        for (int i = 0; i < 50; ++i) {  // interleaved on the one server connection
            r = co_await a.async_query("SELECT $1::int + 1", pg::params(i), asio::use_awaitable);
            EXPECT_EQ(r.get<std::int32_t>(0, 0), i + 1);
            r = co_await b.async_query("SELECT $1::text || '!'", pg::params(std::to_string(i)),
                                       asio::use_awaitable);
            EXPECT_EQ(r.text(0, 0), std::to_string(i) + "!");
        }
        r = co_await b.async_query("SELECT count(*) FROM pg_prepared_statements", pg::params(),
                                   asio::use_awaitable);
        EXPECT_EQ(r.get<std::int64_t>(0, 0), 0) << "unnamed statements leave nothing on the server";
    });
}

TEST_F(pg_pooler, a_session_change_reaches_the_next_client_unless_the_reset_on_return_runs) {
    run([]() -> asio::awaitable<void> {
        pg::connection observer = co_await open(pg::statement_mode::unnamed);
        co_await observer.async_query("RESET ALL", asio::use_awaitable);
        auto work_mem = [&]() -> asio::awaitable<std::string> {
            auto r = co_await observer.async_query("SHOW work_mem", asio::use_awaitable);
            co_return r.text(0, 0);
        };
        EXPECT_EQ(co_await work_mem(), "4MB");
        for (const auto policy : {pg::reset_policy::none, pg::reset_policy::tracked}) {
            const bool none = policy == pg::reset_policy::none;
            pg::pool_config c;
            c.conninfo = single();
            c.statements = pg::statement_mode::unnamed;
            c.max = 1;
            c.min_idle = 0;
            c.reset = policy;
            pg::pool db(co_await asio::this_coro::executor, c);
            co_await db.async_query(none ? "SET work_mem = '1234kB'" : "SET work_mem = '2345kB'",
                                    asio::use_awaitable);
            // The pool's one connection comes back only once its release (and reset) is done.
            co_await db.async_query("SELECT 1", pg::params(), asio::use_awaitable);
            if (none) {
                EXPECT_EQ(co_await work_mem(), "1234kB") << "no reset: another client finds the setting";
                co_await observer.async_query("RESET ALL", asio::use_awaitable);
            } else {
                EXPECT_EQ(co_await work_mem(), "4MB") << "the tracked reset undid it";
            }
            EXPECT_EQ(db.stats().broken, 0u);
        }
    });
}

// PgBouncer sets each client's own application_name (and the other settings it tracks) on the server
// connection it lends: the settings a client sees reported stay its own, so a clean release stays
// clean (the tracked reset costs nothing behind the pooler).
TEST_F(pg_pooler, clients_taking_turns_on_one_server_connection_stay_clean) {
    run([]() -> asio::awaitable<void> {
        auto tagged_open = [](std::string app) -> asio::awaitable<pg::connection> {
            pg::connection c(co_await asio::this_coro::executor);
            co_await c.async_connect(single() + " application_name=" + app, 10s, asio::use_awaitable);
            c.set_statement_mode(pg::statement_mode::unnamed);
            co_return c;
        };
        pg::connection a = co_await tagged_open("turns_a");
        pg::connection b = co_await tagged_open("turns_b");
        for (int i = 0; i < 10; ++i) {
            for (auto* c : {&a, &b}) {
                auto r = co_await c->async_query("SELECT current_setting('application_name')", pg::params(),
                                                 asio::use_awaitable);
                EXPECT_EQ(r.text(0, 0), c == &a ? "turns_a" : "turns_b")
                    << "PgBouncer set it for this client";
                r = co_await c->async_query("SELECT 1", asio::use_awaitable);
                EXPECT_FALSE(c->needs_reset(pg::reset_policy::tracked)) << "round " << i;
            }
        }
    });
}

// A startup setting (conninfo `options=-c ...`) is refused by PgBouncer 1.18 at connect, naming it: set
// such things with SET LOCAL in a transaction behind it.
TEST_F(pg_pooler, a_startup_option_is_refused_at_connect_naming_it) {
    run([]() -> asio::awaitable<void> {
        pg::connection c(co_await asio::this_coro::executor);
        auto [ec] = co_await c.async_connect(conninfo() + " options=-cwork_mem=1MB", 10s,
                                             asio::as_tuple(asio::use_awaitable));
        EXPECT_TRUE(ec);
        EXPECT_NE(c.last_error().message.find("unsupported startup parameter: options"), std::string::npos)
            << ec.message() << ": " << c.last_error().message;
        EXPECT_FALSE(c.is_open());
    });
}

// The reset on return ends with RESET ALL, which brings each setting back to the session's default.
// Behind PgBouncer the server connection's defaults are PgBouncer's (its own startup packet), not the
// client's: the settings the client connected with (application_name, client_encoding, ...) must be
// the client's again after the reset, and the session clean.
TEST_F(pg_pooler, the_reset_keeps_the_settings_the_client_connected_with) {
    run([]() -> asio::awaitable<void> {
        pg::pool_config c;
        c.conninfo = single() + " application_name=kept_app client_encoding=LATIN1";
        c.statements = pg::statement_mode::unnamed;
        c.max = 1;
        c.min_idle = 0;
        pg::pool db(co_await asio::this_coro::executor, c);
        for (int i = 0; i < 3; ++i) {
            co_await db.with_connection(
                [](pg::connection& cc) -> asio::awaitable<void> {
                    auto r = co_await cc.async_query(
                        "SELECT current_setting('application_name'), current_setting('client_encoding')",
                        pg::params(), asio::use_awaitable);
                    EXPECT_EQ(r.text(0, 0), "kept_app");
                    EXPECT_EQ(r.text(0, 1), "LATIN1");
                    EXPECT_FALSE(cc.needs_reset(pg::reset_policy::tracked))
                        << "the previous reset left it clean";
                    co_await cc.async_query("SET work_mem = '1234kB'", asio::use_awaitable);  // dirty
                },
                asio::use_awaitable);
        }
    });
}
