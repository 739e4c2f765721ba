// The names of the enums the public headers declare, as /health, metrics and log lines print them.
#include <respool/destroy_reason.hpp>
#include <respool/stats.hpp>

#include <gtest/gtest.h>

namespace {

// One name per circuit state, the enumerator's: /health, the metrics' state label, log lines and
// error messages all say it the same way.
TEST(enum_names, circuit_states_are_the_enumerators) {
    EXPECT_STREQ(respool::to_string(respool::circuit_state::closed), "closed");
    EXPECT_STREQ(respool::to_string(respool::circuit_state::open), "open");
    EXPECT_STREQ(respool::to_string(respool::circuit_state::half_open), "half_open");
    EXPECT_STREQ(respool::to_string(static_cast<respool::circuit_state>(7)), "unknown");
}

TEST(enum_names, destroy_reasons_are_the_enumerators) {
    EXPECT_STREQ(respool::to_string(respool::destroy_reason::idle_timeout), "idle_timeout");
    EXPECT_STREQ(respool::to_string(respool::destroy_reason::surplus), "surplus");
    EXPECT_STREQ(respool::to_string(static_cast<respool::destroy_reason>(99)), "unknown");
}

}  // namespace
