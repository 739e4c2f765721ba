// The session a borrower changes does not reach the next borrower: a generated corpus of statements
// that change an SQLite connection's session (PRAGMA sets, ATTACH, TEMP tables, views, indexes,
// triggers, virtual tables; in upper and lower case, after a comment, inside scripts, made by CTEs) run
// on a pool whose next borrower gets the same connection (the writer; one reader), each followed by a
// borrower that checks every per-connection pragma against a fresh connection's and that no database
// is attached and no TEMP object left. A clean borrow is not reset (a trace of the statements run shows
// none but the borrower's); mark_dirty() and reset_policy::always reset, reset_policy::none does not; a
// PRAGMA the reset does not restore gets the connection destroyed; a session-changing statement in a
// read batch does not reach the other statements of the batch.
#include "sqlite_test_support.hpp"

#include <boost/asio/as_tuple.hpp>

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <vector>

using namespace sqlite_test;
using respool::error_code;

namespace {

// What a borrower sees of the session. Read with plain statements (reads do not change the session).
struct session_view {
    std::map<std::string, std::string> pragmas;
    std::vector<std::string> databases;  // but temp
    std::vector<std::string> temps;      // TEMP objects but SQLite's own (an emptied sqlite_sequence stays)
    bool operator==(const session_view&) const = default;
};

std::ostream& operator<<(std::ostream& o, const session_view& v) {
    for (const auto& [k, x] : v.pragmas) o << k << '=' << x << ' ';
    o << "| databases:";
    for (const auto& d : v.databases) o << ' ' << d;
    o << " | temps:";
    for (const auto& t : v.temps) o << ' ' << t;
    return o;
}

const char* const watched_pragmas[] = {
    "query_only",
    "foreign_keys",
    "defer_foreign_keys",
    "synchronous",
    "journal_mode",
    "journal_size_limit",
    "locking_mode",
    "busy_timeout",
    "cache_size",
    "cache_spill",
    "temp_store",
    "mmap_size",
    "threads",
    "max_page_count",
    "automatic_index",
    "cell_size_check",
    "checkpoint_fullfsync",
    "fullfsync",
    "ignore_check_constraints",
    "legacy_alter_table",
    "recursive_triggers",
    "reverse_unordered_selects",
    "secure_delete",
    "trusted_schema",
    "writable_schema",
    "wal_autocheckpoint",
    "analysis_limit",
};

asio::awaitable<session_view> look(sqlite::connection& c) {
    session_view v;
    for (const char* p : watched_pragmas) {
        // (A reader refuses PRAGMA journal_mode: SQLite does not call even its read read-only.)
        auto [ec, r] =
            co_await c.async_query(std::string("PRAGMA ") + p, asio::as_tuple(asio::use_awaitable));
        v.pragmas[p] = ec ? ec.message() : r.rows() ? std::string(r.text(0, 0)) : "(none)";
    }
    auto dbs = co_await c.async_query("PRAGMA database_list", asio::use_awaitable);
    for (std::size_t i = 0; i < dbs.rows(); ++i)
        if (dbs.text(i, 1) != "temp") v.databases.emplace_back(dbs.text(i, 1));  // listed once it is used
    auto temps = co_await c.async_query(
        "SELECT type || ' ' || name FROM temp.sqlite_schema WHERE name <> 'sqlite_sequence' ORDER BY 1",
        asio::use_awaitable);
    for (std::size_t i = 0; i < temps.rows(); ++i) v.temps.emplace_back(temps.text(i, 0));
    co_return v;
}

// One statement (or script) of the corpus.
struct change {
    std::string sql;
    bool on_reader = false;  // read-only for SQLite: a reader runs it (and pool::async_query sends it there)
    bool restorable = true;  // false: the reset gives up and the pool destroys the connection
    bool via_pool = true;    // also through pool::async_query (which may route it to a reader)
};

std::vector<change> bases(const std::string& attach_file) {
    std::vector<change> v;
    auto pragma = [&](std::string s, bool via_pool = true) {
        v.push_back({std::move(s), true, true, via_pool});
    };
    for (const char* p : {"PRAGMA foreign_keys=OFF",
                          "PRAGMA main.foreign_keys = off",
                          "PRAGMA foreign_keys = 0;",
                          "PRAGMA synchronous=OFF",
                          "PRAGMA synchronous = FULL",
                          "PRAGMA cache_size=17",
                          "PRAGMA cache_size = -500",
                          "PRAGMA temp_store=MEMORY",
                          "PRAGMA recursive_triggers=ON",
                          "PRAGMA reverse_unordered_selects=1",
                          "PRAGMA ignore_check_constraints=yes",
                          "PRAGMA legacy_alter_table=ON",
                          "PRAGMA secure_delete=FAST",
                          "PRAGMA automatic_index=0",
                          "PRAGMA cell_size_check=1",
                          "PRAGMA wal_autocheckpoint=7",
                          "PRAGMA busy_timeout=1",
                          "PRAGMA mmap_size=65536",
                          "PRAGMA threads=2",
                          "PRAGMA journal_size_limit=4096",
                          "PRAGMA trusted_schema=0",
                          "PRAGMA fullfsync=1",
                          "PRAGMA checkpoint_fullfsync=1",
                          "PRAGMA defer_foreign_keys=1",
                          "PRAGMA max_page_count=100000",
                          "PRAGMA analysis_limit=50",
                          "PRAGMA cache_spill=0",
                          "PRAGMA writable_schema=1"})
        pragma(p);
    v.push_back({"PRAGMA query_only=1", false, true, false});
    for (std::string a :
         {"ATTACH DATABASE '" + attach_file + "' AS aux", std::string("ATTACH ':memory:' AS m"),
          std::string("ATTACH 'file:session_mem?mode=memory' AS m2")})
        v.push_back({a, true, true, true});
    for (const char* t : {
             "CREATE TEMP TABLE x(a)",
             "CREATE TEMPORARY TABLE x(a)",
             "CREATE TABLE temp.x(a)",
             "CREATE TABLE \"temp\".\"we\"\"ird name\"(a)",
             "CREATE TEMP TABLE x AS SELECT 1 AS a",
             "CREATE TEMP TABLE x AS WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n "
             "< 3) "
             "SELECT n FROM c",
             "CREATE TEMP TABLE x(id INTEGER PRIMARY KEY AUTOINCREMENT, v); INSERT INTO x(v) VALUES (1)",
             "CREATE TEMP VIEW tv AS SELECT 1",
             "CREATE VIEW temp.tv AS WITH c(v) AS (SELECT 2) SELECT v FROM c",
             "CREATE TEMP TRIGGER tr AFTER INSERT ON t BEGIN INSERT INTO log VALUES ('fired'); END",
             "CREATE TEMP TABLE x(a); CREATE INDEX temp.ix ON x(a)",
             "CREATE TEMP TABLE x(a); CREATE TEMP TRIGGER xt AFTER INSERT ON x BEGIN SELECT 1; END",
             "CREATE VIRTUAL TABLE temp.f USING fts5(a)",
             "CREATE TEMP TABLE p(id INTEGER PRIMARY KEY); CREATE TEMP TABLE ch(p REFERENCES p(id)); "
             "INSERT INTO p VALUES (1); INSERT INTO ch VALUES (1)",
         })
        v.push_back({t, false, true, true});
    return v;
}

// The text with every letter outside quotes in `upper` or lower case.
std::string recase(const std::string& sql, bool upper) {
    std::string out;
    char quote = 0;
    for (char ch : sql) {
        if (quote) {
            if (ch == quote) quote = 0;
        } else if (ch == '\'' || ch == '"') {
            quote = ch;
        } else {
            ch = static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(ch))
                                         : std::tolower(static_cast<unsigned char>(ch)));
        }
        out += ch;
    }
    return out;
}

// Each base as written, in upper and lower case, after a comment, and inside a script.
std::vector<change> corpus(const std::string& attach_file) {
    std::vector<change> all;
    for (const change& b : bases(attach_file)) {
        all.push_back(b);
        all.push_back({recase(b.sql, true), b.on_reader, b.restorable, b.via_pool});
        all.push_back({recase(b.sql, false), b.on_reader, b.restorable, b.via_pool});
        all.push_back({"/* a comment */ " + b.sql, b.on_reader, b.restorable, b.via_pool});
        // A script: the writer's (a reader runs one statement at a time).
        all.push_back({"SELECT 1; " + b.sql + "; SELECT 2", false, b.restorable, b.via_pool});
    }
    return all;
}

class sqlite_session : public ::testing::Test {
protected:
    temp_dir dir;
    asio::io_context io;

    sqlite::pool_config settings(std::size_t readers,
                                 sqlite::reset_policy policy = sqlite::reset_policy::tracked) {
        auto c = config(dir.file("session.db"), readers);
        c.reset = policy;
        return c;
    }
    void schema(sqlite::pool& db) {
        run(io,
            db.async_query("CREATE TABLE IF NOT EXISTS t (v INT); CREATE TABLE IF NOT EXISTS log (what TEXT)",
                           asio::use_awaitable));
    }
    session_view writer_view(sqlite::pool& db) {
        return run(io,
                   db.with_connection([](sqlite::connection& c) { return look(c); }, asio::use_awaitable));
    }
    session_view reader_view(sqlite::pool& db) {
        return run(io, db.with_reader([](sqlite::connection& c) { return look(c); }, asio::use_awaitable));
    }
    // Runs `sql` on a lease of the writer (or the reader); it must succeed.
    void run_on(sqlite::pool& db, const std::string& sql, bool reader) {
        auto fn = [sql](sqlite::connection& c) -> asio::awaitable<void> {
            auto [ec, r] = co_await c.async_query(sql, asio::as_tuple(asio::use_awaitable));
            EXPECT_FALSE(ec) << sql << ": " << ec.message() << " " << c.last_error().message;
            EXPECT_TRUE(c.needs_reset()) << sql;
        };
        run(io,
            reader ? db.with_reader(fn, asio::use_awaitable) : db.with_connection(fn, asio::use_awaitable));
    }
};

TEST_F(sqlite_session, no_session_change_reaches_the_next_borrower) {
    sqlite::pool db(io.get_executor(), settings(1));
    schema(db);
    const session_view writer = writer_view(db);
    const session_view reader = reader_view(db);
    run(io, db.with_connection(
                [](sqlite::connection& c) -> asio::awaitable<void> {
                    co_await look(c);
                    EXPECT_FALSE(c.needs_reset());  // looking changes nothing
                },
                asio::use_awaitable));
    ASSERT_EQ(writer.pragmas.at("foreign_keys"), "1");
    ASSERT_EQ(reader.pragmas.at("query_only"), "1");
    ASSERT_EQ(writer.databases, (std::vector<std::string>{"main"}));
    ASSERT_TRUE(writer.temps.empty());
    const auto items = corpus(dir.file("attached.db"));
    std::size_t runs = 0;
    for (const change& item : items) {
        SCOPED_TRACE(item.sql);
        // The writer, twice: the second run comes from the statement cache (not authorized again).
        for (int time = 0; time < 2; ++time) {
            const auto before = db.writer_stats();
            run_on(db, item.sql, false);
            EXPECT_EQ(writer_view(db), writer);
            EXPECT_EQ(db.writer_stats().destructions, before.destructions) << "reset, not destroyed";
            ++runs;
        }
        if (item.on_reader) {
            const auto before = db.reader_stats();
            run_on(db, item.sql, true);
            EXPECT_EQ(reader_view(db), reader);
            EXPECT_EQ(db.reader_stats().destructions, before.destructions);
            ++runs;
        }
        if (item.via_pool) {
            auto [ec, r] = run(io, db.async_query(item.sql, asio::as_tuple(asio::use_awaitable)));
            EXPECT_FALSE(ec) << ec.message();
            EXPECT_EQ(writer_view(db), writer);
            EXPECT_EQ(reader_view(db), reader);
            ++runs;
        }
    }
    EXPECT_GT(runs, 400u);
    // The temporary trigger of the corpus never fired for a later borrower's insert.
    run(io, db.async_query("INSERT INTO t VALUES (1)", asio::use_awaitable));
    EXPECT_EQ(run(io, db.async_query("SELECT count(*) FROM log", asio::use_awaitable)).get<int>(0, 0), 0);
}

// The file's journal mode and the locking mode, changed by the writer alone (with a reader open, WAL
// cannot be left), come back as the pool set them.
TEST_F(sqlite_session, journal_and_locking_modes_come_back) {
    sqlite::pool db(io.get_executor(), settings(0));
    schema(db);
    const session_view writer = writer_view(db);
    ASSERT_EQ(writer.pragmas.at("journal_mode"), "wal");
    for (const char* sql :
         {"PRAGMA journal_mode=DELETE", "pragma JOURNAL_MODE = truncate", "PRAGMA locking_mode=EXCLUSIVE",
          "SELECT 1; PRAGMA main.locking_mode=exclusive; SELECT 2"}) {
        SCOPED_TRACE(sql);
        run_on(db, sql, false);
        EXPECT_EQ(writer_view(db), writer);
        EXPECT_EQ(db.writer_stats().destructions, 0u);
    }
}

TEST_F(sqlite_session, a_pragma_the_reset_does_not_restore_destroys_the_connection) {
    sqlite::pool db(io.get_executor(), settings(1));
    schema(db);
    const session_view writer = writer_view(db);
    for (const char* sql :
         {"PRAGMA case_sensitive_like=ON", "PRAGMA temp.cache_size=5", "pragma Encoding='UTF-16'"}) {
        SCOPED_TRACE(sql);
        const auto before = db.writer_stats();
        run_on(db, sql, false);
        EXPECT_EQ(db.writer_stats().destructions, before.destructions + 1);
        EXPECT_EQ(writer_view(db), writer);
        auto like = run(io, db.async_query("SELECT 'a' LIKE 'A'", asio::use_awaitable));
        EXPECT_EQ(like.get<int>(0, 0), 1);  // case-insensitive again
    }
}

// The statements SQLite runs on a connection (sqlite3_trace_v2), the borrowers' and the reset's.
struct statement_log {
    std::mutex m;
    std::vector<std::string> texts;
    static int on_trace(unsigned, void* self, void*, void* sql) {
        auto* log = static_cast<statement_log*>(self);
        std::lock_guard lock(log->m);
        log->texts.emplace_back(static_cast<const char*>(sql));
        return 0;
    }
    std::vector<std::string> take() {
        std::lock_guard lock(m);
        return std::exchange(texts, {});
    }
};

class sqlite_session_trace : public sqlite_session {
protected:
    statement_log log;
    // Installs the trace on the writer (async_run: that borrow's release resets in full) and empties it.
    void trace(sqlite::pool& db) {
        run(io, db.with_connection(
                    [this](sqlite::connection& c) -> asio::awaitable<void> {
                        co_await c.async_run(
                            [this](::sqlite3* h) {
                                ::sqlite3_trace_v2(h, SQLITE_TRACE_STMT, &statement_log::on_trace, &log);
                            },
                            asio::use_awaitable);
                    },
                    asio::use_awaitable));
        log.take();
    }
    std::vector<std::string> borrow(sqlite::pool& db, std::vector<std::string> sqls, bool mark = false) {
        run(io, db.with_connection(
                    [&](sqlite::connection& c) -> asio::awaitable<void> {
                        for (const auto& s : sqls) co_await c.async_query(s, asio::use_awaitable);
                        if (mark) c.mark_dirty();
                    },
                    asio::use_awaitable));
        return log.take();
    }
};

TEST_F(sqlite_session_trace, a_clean_borrow_is_not_reset_a_changed_one_is) {
    sqlite::pool db(io.get_executor(), settings(0));
    schema(db);
    trace(db);
    const std::vector<std::string> clean = {"SELECT 1",
                                            "INSERT INTO t VALUES (1)",
                                            "PRAGMA foreign_keys",
                                            "SELECT * FROM pragma_table_info('t')",
                                            "PRAGMA table_info(t)",
                                            "BEGIN",
                                            "UPDATE t SET v = 2",
                                            "COMMIT",
                                            "WITH c(v) AS (SELECT 1) SELECT v FROM c"};
    auto seen = borrow(db, clean);
    // Only the borrower's statements (and the pragma function's own PRAGMA inside its SELECT).
    for (const auto& s : seen)
        EXPECT_TRUE(std::find(clean.begin(), clean.end(), s) != clean.end() ||
                    s == "-- PRAGMA table_info='t'")
            << s;
    EXPECT_EQ(seen.size(), clean.size() + 1);
    // Twice: the second time every statement comes from the cache.
    EXPECT_EQ(borrow(db, clean).size(), clean.size() + 1);

    // A change: the reset's statements follow the borrower's.
    seen = borrow(db, {"PRAGMA cache_size=5"});
    ASSERT_GT(seen.size(), 1u);
    EXPECT_TRUE(std::any_of(seen.begin(), seen.end(), [](const std::string& s) {
        return s.rfind("PRAGMA query_only=0", 0) == 0;
    })) << ::testing::PrintToString(seen);
    // The same statement again, from the cache: reset all the same.
    EXPECT_GT(borrow(db, {"PRAGMA cache_size=5"}).size(), 1u);
    // mark_dirty: reset although nothing was seen.
    EXPECT_GT(borrow(db, {"SELECT 1"}, true).size(), 1u);
    EXPECT_EQ(borrow(db, {"SELECT 1"}).size(), 1u);
}

TEST_F(sqlite_session_trace, reset_policy_always_resets_every_borrow) {
    sqlite::pool db(io.get_executor(), settings(0, sqlite::reset_policy::always));
    schema(db);
    trace(db);
    EXPECT_GT(borrow(db, {"SELECT 1"}).size(), 1u);
    EXPECT_GT(borrow(db, {"SELECT 1"}).size(), 1u);
}

TEST_F(sqlite_session, reset_policy_none_leaves_the_session_to_the_next_borrower) {
    sqlite::pool db(io.get_executor(), settings(0, sqlite::reset_policy::none));
    schema(db);
    run_on(db, "PRAGMA foreign_keys=OFF", false);
    EXPECT_EQ(writer_view(db).pragmas.at("foreign_keys"), "0");
}

// pool::async_query reads run in batches on one reader, two or more in one read transaction: a PRAGMA
// among them (cache_size: it takes effect inside a transaction too) changes nothing for the others,
// queued with it, before or after.
TEST_F(sqlite_session, a_session_change_in_a_read_batch_stays_its_own) {
    sqlite::pool db(io.get_executor(), settings(1));
    schema(db);
    const std::string cache_size = reader_view(db).pragmas.at("cache_size");
    ASSERT_NE(cache_size, "17");
    std::vector<std::optional<std::string>> seen(16);
    std::optional<error_code> pragma_result;
    for (std::size_t i = 0; i < seen.size(); ++i) {
        if (i == 4)
            db.async_query("PRAGMA cache_size=17",
                           [&](error_code ec, sqlite::result) { pragma_result = ec; });
        db.async_query("PRAGMA cache_size", [&seen, i](error_code ec, sqlite::result r) {
            EXPECT_FALSE(ec) << ec.message();
            if (!ec) seen[i] = std::string(r.text(0, 0));
        });
    }
    io.run();
    io.restart();
    ASSERT_TRUE(pragma_result);
    EXPECT_FALSE(*pragma_result);
    for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], cache_size) << i;
    EXPECT_EQ(reader_view(db).pragmas.at("cache_size"), cache_size);
}

}  // namespace
