// The statement text scanner without a server: what counts as a session change or a streaming COPY,
// what is hidden in comments and literals, and what common statements must not be taken for either
// (a false "dirty" costs every such statement a reset round trip).
#include "statement_text.hpp"

#include <gtest/gtest.h>

#include <string>

using respool::pg::detail::scan_statement;

namespace {

bool dirty(const std::string& sql) {
    return scan_statement(sql).session_effects;
}
bool copy(const std::string& sql) {
    return scan_statement(sql).copy_stream;
}

}  // namespace

TEST(pg_statement_text, session_changes_are_seen_in_any_case_and_anywhere_in_a_script) {
    for (const char* sql : {
             "CREATE TEMP TABLE t AS SELECT 1",
             "create temporary table t (x int)",
             "CREATE GLOBAL TEMPORARY TABLE t (x int)",
             "CREATE LOCAL TEMP TABLE t (x int)",
             "CREATE OR REPLACE TEMP VIEW v AS SELECT 1",
             "SELECT 1 INTO TEMP t",
             "select * into temporary table t from x",
             "CREATE TABLE pg_temp.t (x int)",
             "CREATE TABLE PG_TEMP_3.t (x int)",
             "SELECT set_config('a.b', 'c', false)",
             "SELECT pg_catalog.SET_CONFIG('a.b', 'c', false)",
             "SELECT \"set_config\"('a.b', 'c', false)",
             "WITH x AS (SELECT set_config('a', 'b', false)) SELECT * FROM x",
             "SELECT pg_advisory_lock(1)",
             "SELECT pg_try_advisory_lock_shared(1)",
             "SELECT pg_advisory_xact_lock(1)",
             "SET work_mem = 1",
             "  set local work_mem = 1",
             "RESET ALL",
             "LISTEN x",
             "UNLISTEN *",
             "PREPARE p AS SELECT 1",
             "DECLARE c CURSOR WITH HOLD FOR SELECT 1",
             "DISCARD TEMP",
             "LOAD 'auto_explain'",
             "DO $$ BEGIN END $$",
             "do 'BEGIN END'",
             "SELECT 1; SET work_mem = 1",
             "SELECT 'x;'; SET work_mem = 1",
             "/* c */ SET work_mem = 1",
             "-- c\nSET work_mem = 1",
             "/* nested /* comment */ still */ SET work_mem = 1",
             "SELECT $$;$$; SET work_mem = 1",
             "SELECT $a$ ' $a$; LISTEN x",
             "SELECT E'\\''; SET work_mem = 1",
         })
        EXPECT_TRUE(dirty(sql)) << sql;
}

TEST(pg_statement_text, literals_comments_and_ordinary_statements_are_not_session_changes) {
    for (const char* sql : {
             "SELECT 1",
             "UPDATE t SET x = 1 WHERE id = $1",
             "INSERT INTO t (temp) VALUES ($1)",
             "SELECT temp, temporary FROM readings",
             "SELECT 'SET work_mem = 1'",
             "SELECT 'pg_advisory_lock(1)', 'set_config'",
             "SELECT $$ LISTEN x $$",
             "SELECT $tag$ CREATE TEMP TABLE t $tag$",
             "SELECT 1 -- SET work_mem = 1",
             "SELECT /* pg_advisory_lock(1) */ 1",
             "SELECT E'\\' SET work_mem = 1'",
             "SELECT 'it''s'; SELECT 2",
             "WITH x AS (SELECT 1) UPDATE t SET y = 2",
             "SELECT x FROM t WHERE name = 'temp'",
             "SELECT a$b FROM t",
             "SELECT $1::text",
             "ALTER TABLE t SET (fillfactor = 70)",
             "",
         })
        EXPECT_FALSE(dirty(sql)) << sql;
}

TEST(pg_statement_text, a_streaming_copy_is_seen_and_a_server_side_one_is_not) {
    for (const char* sql : {"COPY t FROM STDIN", "copy t (a, b) from stdin with (format csv)",
                            "COPY (SELECT 1) TO STDOUT", "/* x */ Copy t TO stdout",
                            "SELECT 1; COPY t TO STDOUT", "COPY \"t\" FROM STDIN", "COPY t FROM STDIN;"})
        EXPECT_TRUE(copy(sql)) << sql;
    for (const char* sql : {"COPY t FROM '/tmp/f'", "COPY t TO '/tmp/stdout'", "SELECT 'COPY t FROM STDIN'",
                            "SELECT stdin FROM t", "COPY t FROM PROGRAM 'cat'",
                            "-- COPY t FROM STDIN\nSELECT 1", "SELECT 1; SELECT stdout FROM t"})
        EXPECT_FALSE(copy(sql)) << sql;
}

TEST(pg_statement_text, unterminated_quotes_and_comments_end_the_scan_without_reading_past_the_text) {
    for (const char* sql :
         {"SELECT '", "SELECT E'\\", "SELECT \"", "SELECT $a$", "SELECT /*", "SELECT $", "--", "$$", "SET"}) {
        (void)scan_statement(sql);  // the sanitizers watch the reads
    }
    EXPECT_TRUE(dirty("SET"));
    EXPECT_FALSE(dirty("SELECT '; SET x = 1"));
}
