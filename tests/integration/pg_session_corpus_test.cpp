// The reset on return against a generated corpus of statements that change the session: temporary
// tables however made, set_config, advisory locks, SET, LISTEN, PREPARE, cursors WITH HOLD, DO blocks,
// each as written, in lower and in upper case, alone and inside scripts, through the simple protocol
// and (single statements) through the statement cache. After each, the next borrower — the same
// backend, checked by its pid — must find the session as the pool made it.
#include "pg_test_support.hpp"

#include <respool/pg/pool.hpp>

#include <algorithm>
#include <cctype>
#include <tuple>
#include <utility>
#include <vector>

using namespace pg_test;

namespace {

class pg_session_corpus : public ::testing::Test {
protected:
    void SetUp() override {
        if (conninfo().empty())
            GTEST_SKIP() << "RESPOOL_PG_CONNINFO_FILE not set: run through ctest -L integration";
    }
};

struct statement {
    std::string sql;
    bool single = true;      // one statement: may also go through the statement cache
    bool case_folds = true;  // still valid in lower and upper case (no quoted identifier)
};

// Statements whose effect on the session its command tag does not show, or shows only at the end of
// a script, or hides inside a DO block's body.
const std::vector<statement> corpus = {
    {"CREATE TEMP TABLE scratch AS SELECT 1 AS x"},
    {"SELECT 1 AS x INTO TEMP scratch"},
    {"SELECT 1 AS x INTO TEMPORARY TABLE scratch"},
    {"SELECT * INTO TEMP scratch FROM (SELECT 1 AS x) s"},
    {"CREATE TEMPORARY TABLE scratch (x int)"},
    {"CREATE GLOBAL TEMPORARY TABLE scratch (x int)"},
    {"CREATE TABLE pg_temp.scratch (x int)"},
    {"CREATE OR REPLACE TEMP VIEW scratch AS SELECT 1 AS x"},
    {"SELECT set_config('work_mem', '1234', false)"},
    {"SELECT pg_catalog.set_config('work_mem', '1234', false)"},
    {"SELECT \"set_config\"('work_mem', '1234', false)", true, false},
    {"WITH c AS (SELECT set_config('work_mem', '1234', false)) SELECT * FROM c"},
    {"SELECT pg_advisory_lock(4242)"},
    {"SELECT pg_try_advisory_lock(4242)"},
    {"WITH l AS (SELECT pg_advisory_lock(4242)) SELECT 1 FROM l"},
    {"SET work_mem = 1234"},
    {"SET SESSION work_mem TO 1234"},
    {"SET search_path = nowhere, public"},
    {"LISTEN somewhere"},
    {"PREPARE mine AS SELECT 1"},
    {"DECLARE cur CURSOR WITH HOLD FOR SELECT 1"},
    {"DO $$ BEGIN PERFORM set_config('work_mem', '1234', false); END $$"},
    {"DO $$ BEGIN EXECUTE 'CREATE TEMP TABLE scratch (x int)'; END $$"},
    {"DO $$ BEGIN EXECUTE 'LISTEN somewhere'; END $$"},
    {"DO $body$ BEGIN PERFORM pg_advisory_lock(4242); END $body$"},
    {"/* a comment; with a semicolon */ SELECT set_config('work_mem', '1234', false) -- and a tail"},
    {"SELECT 1; SELECT set_config('work_mem', '1234', false); SELECT 2", false},
    {"SELECT 'harmless'; CREATE TEMP TABLE scratch AS SELECT 1 AS x; SELECT 3", false},
    {"SELECT 'a;b'; SELECT pg_advisory_lock(4242)", false},
    {"SELECT $$ -- not a comment $$; SET work_mem = 1234; SELECT 4", false},
};

std::string folded(std::string s, int (*fold)(int)) {
    std::transform(s.begin(), s.end(), s.begin(), [fold](char c) { return static_cast<char>(fold(c)); });
    return s;
}

// A pool of one connection, so that every borrow meets the same backend; no validation query in the way.
pg::pool_config one_connection(const char* app) {
    pg::pool_config cfg;
    cfg.conninfo = tagged(app);
    cfg.max = 1;
    cfg.min_idle = 1;
    cfg.validate_after = std::chrono::hours(1);
    return cfg;
}

asio::awaitable<int> pid_of(pg::connection& c) {
    auto r = co_await c.async_query("SELECT pg_backend_pid()", asio::use_awaitable);
    co_return r.get<std::int32_t>(0, 0);
}

// What the next borrower must find: every setting at its default, nothing of the last borrower's.
asio::awaitable<std::string> leftovers(pg::connection& c) {
    auto r = co_await c.async_query(
        "SELECT current_setting('work_mem'), current_setting('search_path'), "
        "(SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema()), "
        "(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()), "
        "(SELECT count(*) FROM pg_listening_channels()), "
        "(SELECT count(*) FROM pg_prepared_statements WHERE from_sql), "
        "(SELECT count(*) FROM pg_cursors)",
        asio::use_awaitable);
    std::string found;
    if (r.text(0, 0) != "4MB") found += " work_mem=" + std::string(r.text(0, 0));
    if (r.text(0, 1) != "\"$user\", public") found += " search_path=" + std::string(r.text(0, 1));
    const char* what[] = {
        "", "", " temporary objects", " advisory locks", " LISTENs", " prepared statements", " cursors"};
    for (int col = 2; col <= 6; ++col)
        if (const auto n = r.get<std::int64_t>(0, col); n != 0) found += " " + std::to_string(n) + what[col];
    co_return found;
}

}  // namespace

TEST_F(pg_session_corpus, no_session_change_in_the_corpus_reaches_the_next_borrower) {
    run([]() -> asio::awaitable<void> {
        pg::pool db(co_await asio::this_coro::executor, one_connection("t_corpus"));
        int tried = 0;
        for (const statement& s : corpus) {
            std::vector<std::string> texts = {s.sql};
            if (s.case_folds) {
                texts.push_back(folded(s.sql, ::tolower));
                texts.push_back(folded(s.sql, ::toupper));
            }
            for (const std::string& sql : texts) {
                for (const bool cached : {false, true}) {
                    if (cached && !s.single) continue;
                    ++tried;
                    const int pid = co_await db.with_connection(
                        [&](pg::connection& c) -> asio::awaitable<int> {
                            respool::error_code ec;
                            if (cached)
                                std::tie(ec, std::ignore) = co_await c.async_query(
                                    sql, pg::params(), asio::as_tuple(asio::use_awaitable));
                            else
                                std::tie(ec, std::ignore) =
                                    co_await c.async_query(sql, asio::as_tuple(asio::use_awaitable));
                            EXPECT_FALSE(ec) << sql << ": " << c.last_error().message;
                            co_return co_await pid_of(c);
                        },
                        asio::use_awaitable);
                    co_await db.with_connection(
                        [&](pg::connection& c) -> asio::awaitable<void> {
                            EXPECT_EQ(co_await pid_of(c), pid) << sql << ": reset, not replaced";
                            EXPECT_EQ(co_await leftovers(c), "")
                                << "left for the next borrower by: " << sql << (cached ? " (cached)" : "");
                        },
                        asio::use_awaitable);
                }
            }
        }
        EXPECT_GT(tried, 120);
        EXPECT_EQ(db.stats().destructions, 0u) << "every reset worked";
    });
}

// The settings the server reports (ParameterStatus) are watched whatever changed them: a function that
// calls set_config on one shows nothing in its text or tag, and the reset still undoes it. Each of the
// six, through the statement cache (no text scan at all once cached) and on the same backend.
TEST_F(pg_session_corpus, a_reported_setting_changed_out_of_sight_is_reset) {
    run([]() -> asio::awaitable<void> {
        admin a = co_await admin::open();
        co_await a.query(
            "CREATE OR REPLACE FUNCTION respool_hidden_report(name text, value text) RETURNS int "
            "LANGUAGE sql AS $$ SELECT 1 FROM (SELECT set_config(name, value, false)) s $$");
        pg::pool db(co_await asio::this_coro::executor, one_connection("t_hidden_report"));
        const std::pair<const char*, const char*> changes[] = {{"application_name", "someone_else"},
                                                               {"client_encoding", "LATIN1"},
                                                               {"DateStyle", "SQL, DMY"},
                                                               {"IntervalStyle", "iso_8601"},
                                                               {"TimeZone", "UTC+3"},
                                                               {"standard_conforming_strings", "off"}};
        for (const auto& [name, value] : changes) {
            std::string before;
            int pid = 0;
            for (int round = 0; round < 2; ++round) {  // the second round runs the cached statement
                std::tie(before, pid) = co_await db.with_connection(
                    [&](pg::connection& c) -> asio::awaitable<std::pair<std::string, int>> {
                        auto now = co_await c.async_query("SELECT current_setting($1)", pg::params(name),
                                                          asio::use_awaitable);
                        const std::string was(now.text(0, 0));
                        auto [ec, r] = co_await c.async_query("SELECT respool_hidden_report($1, $2)",
                                                              pg::params(name, value),
                                                              asio::as_tuple(asio::use_awaitable));
                        EXPECT_FALSE(ec) << name << ": " << c.last_error().message;
                        co_return std::pair(was, co_await pid_of(c));
                    },
                    asio::use_awaitable);
                const std::string after = co_await db.with_connection(
                    [&](pg::connection& c) -> asio::awaitable<std::string> {
                        EXPECT_EQ(co_await pid_of(c), pid) << name << ": reset, not replaced";
                        auto r = co_await c.async_query("SELECT current_setting($1)", pg::params(name),
                                                        asio::use_awaitable);
                        co_return std::string(r.text(0, 0));
                    },
                    asio::use_awaitable);
                EXPECT_EQ(after, before) << name << " set to " << value << " by a function, round " << round;
                EXPECT_NE(before, value) << "the change must be one";
            }
        }
        co_await a.query("DROP FUNCTION respool_hidden_report(text, text)");
    });
}

// A function that calls set_config shows nothing in its text or tag: mark_dirty() is how the borrower
// who knows says so.
TEST_F(pg_session_corpus, mark_dirty_resets_what_no_text_reveals) {
    run([]() -> asio::awaitable<void> {
        admin a = co_await admin::open();
        co_await a.query(
            "CREATE OR REPLACE FUNCTION respool_hidden_effect() RETURNS int LANGUAGE sql AS "
            "$$ SELECT 1 FROM (SELECT set_config('work_mem', '1234', false)) s $$");
        pg::pool db(co_await asio::this_coro::executor, one_connection("t_mark_dirty"));
        for (const bool mark : {false, true}) {
            co_await db.with_connection(
                [mark](pg::connection& c) -> asio::awaitable<void> {
                    co_await c.async_query("SELECT respool_hidden_effect()", asio::use_awaitable);
                    if (mark) c.mark_dirty();
                },
                asio::use_awaitable);
            const std::string left = co_await db.with_connection(
                [](pg::connection& c) -> asio::awaitable<std::string> { co_return co_await leftovers(c); },
                asio::use_awaitable);
            if (mark)
                EXPECT_EQ(left, "") << "marked dirty: reset";
            else
                EXPECT_EQ(left, " work_mem=1234kB")
                    << "the documented limit of tracking: the text says nothing";
            co_await db.async_query("RESET work_mem", asio::use_awaitable);
        }
        co_await a.query("DROP FUNCTION respool_hidden_effect()");
    });
}
