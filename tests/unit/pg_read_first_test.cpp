// When a statement reads its reply before it waits for the socket (src/pg/read_first.hpp): while at
// least half of a connection's last eight reads found the reply, and otherwise once in eight
// statements.
#include "read_first.hpp"

#include <gtest/gtest.h>

using respool::pg::detail::read_first_record;

namespace {

// How many of the next `n` statements read first, each read finding the reply or not as `found` says.
int tries_in(read_first_record& r, int n, bool found) {
    int tries = 0;
    for (int i = 0; i < n; ++i) {
        if (!r.try_now()) continue;
        ++tries;
        r.tried(found);
    }
    return tries;
}

}  // namespace

TEST(pg_read_first, a_new_connection_reads_first_and_keeps_doing_so_while_the_reply_is_there) {
    read_first_record r;
    EXPECT_EQ(tries_in(r, 100, true), 100);
}

TEST(pg_read_first, reads_that_find_nothing_stop_it_after_five_and_leave_one_try_in_eight) {
    read_first_record r;
    // Eight found replies on record: four misses still leave half of the last eight found.
    EXPECT_EQ(tries_in(r, 5, false), 5);  // the fifth miss takes it below half
    EXPECT_FALSE(r.try_now());
    // From here: one statement in eight tries (the seven skipped before it count too).
    read_first_record quiet;
    for (int i = 0; i < 8; ++i) quiet.tried(false);
    EXPECT_EQ(tries_in(quiet, 80, false), 10);
}

TEST(pg_read_first, a_loop_that_gets_busy_again_is_noticed_within_a_few_tries) {
    read_first_record r;
    for (int i = 0; i < 8; ++i) r.tried(false);
    // The once-in-eight tries now find the reply: after four of them it reads first every time.
    int statements = 0;
    int found = 0;
    while (found < 4) {
        ++statements;
        if (r.try_now()) {
            r.tried(true);
            ++found;
        }
    }
    EXPECT_EQ(statements, 32);
    EXPECT_EQ(tries_in(r, 10, true), 10);
}

TEST(pg_read_first, half_found_is_enough) {
    read_first_record r;
    for (int i = 0; i < 8; ++i) r.tried(i % 2 == 0);  // four of the last eight found the reply
    EXPECT_TRUE(r.try_now());
    r.tried(false);  // now three of the last eight
    EXPECT_FALSE(r.try_now());
}
