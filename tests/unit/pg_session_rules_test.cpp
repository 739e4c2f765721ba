// Session tracking of respool::pg (src/pg/session_rules.hpp), without a server: command tags, the
// failover signal, and the reset a returned connection gets.
#include "session_rules.hpp"

#include <gtest/gtest.h>

using namespace respool::pg::detail;
using respool::pg::reset_policy;

TEST(pg_session_rules, data_statements_leave_nothing_behind) {
    for (const char* tag : {"", "SELECT 3", "INSERT 0 1", "UPDATE 2", "DELETE 0", "COMMIT", "BEGIN",
                            "ROLLBACK", "FETCH 1", "SETOF", "CREATED", "TRUNCATE TABLE"})
        EXPECT_EQ(classify_command_tag(tag), tag_effect::none) << tag;
}

TEST(pg_session_rules, session_commands_make_the_session_dirty) {
    for (const char* tag : {"SET", "RESET", "LISTEN", "UNLISTEN", "DECLARE CURSOR", "CREATE TABLE",
                            "CREATE FUNCTION", "LOAD", "DISCARD TEMP", "DISCARD SEQUENCES", "DISCARD PLANS"})
        EXPECT_EQ(classify_command_tag(tag), tag_effect::dirty) << tag;
}

TEST(pg_session_rules, prepare_by_hand_and_dropping_one_or_every_statement_are_told_apart) {
    EXPECT_EQ(classify_command_tag("PREPARE"), tag_effect::user_prepared);
    EXPECT_EQ(classify_command_tag("DISCARD ALL"), tag_effect::statements_dropped);
    EXPECT_EQ(classify_command_tag("DEALLOCATE ALL"), tag_effect::statements_dropped);
    // One statement by name: maybe one of the connection's own BEGIN, COMMIT or ROLLBACK.
    EXPECT_EQ(classify_command_tag("DEALLOCATE"), tag_effect::statement_dropped);
    EXPECT_EQ(classify_command_tag("DEALLOCATED"), tag_effect::none);
}

TEST(pg_session_rules, read_only_errors_mean_failover_only_on_a_server_that_says_it_is_read_only) {
    EXPECT_TRUE(failover_signal("25006", true, false));
    EXPECT_TRUE(failover_signal("25006", false, true));
    EXPECT_FALSE(failover_signal("25006", false, false));  // the borrower's own read-only transaction
    EXPECT_FALSE(failover_signal("23505", true, true));
}

TEST(pg_session_rules, the_policy_decides_the_full_reset) {
    EXPECT_TRUE(full_reset(reset_policy::always, false));
    EXPECT_TRUE(full_reset(reset_policy::tracked, true));
    EXPECT_FALSE(full_reset(reset_policy::tracked, false));
    EXPECT_FALSE(full_reset(reset_policy::none, true));
}

TEST(pg_session_rules, the_reset_script_rolls_back_then_resets_the_session) {
    EXPECT_EQ(reset_script(transaction_phase::idle, false, false), std::string());  // clean: no round trip
    EXPECT_EQ(reset_script(transaction_phase::open, false, true), std::string("ROLLBACK"));
    EXPECT_EQ(reset_script(transaction_phase::unusable, true, false), std::nullopt);
    const std::string full = *reset_script(transaction_phase::open, true, false);
    EXPECT_EQ(full.rfind("ROLLBACK; CLOSE ALL;", 0), 0u) << full;
    for (const char* step : {"RESET ALL", "UNLISTEN *", "pg_advisory_unlock_all()", "DISCARD TEMP",
                             "DISCARD SEQUENCES", "SET SESSION AUTHORIZATION DEFAULT"})
        EXPECT_NE(full.find(step), std::string::npos) << step;
    EXPECT_EQ(full.find("DEALLOCATE ALL"), std::string::npos);  // the statement cache survives
    EXPECT_EQ(full.find("DISCARD ALL"), std::string::npos);
    const std::string prepared = *reset_script(transaction_phase::idle, true, true);
    EXPECT_EQ(prepared.rfind("CLOSE ALL;", 0), 0u) << prepared;
    EXPECT_EQ(prepared.size() - prepared.rfind("; DEALLOCATE ALL"), std::string("; DEALLOCATE ALL").size());
}
