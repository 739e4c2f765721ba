// The one duration spelling of the library's messages and the CLI: exact, in the largest whole unit.
#include <respool/detail/duration_text.hpp>

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using respool::detail::duration_text;

TEST(duration_text, writes_the_largest_unit_that_divides_the_value) {
    EXPECT_EQ(duration_text(250ms), "250ms");
    EXPECT_EQ(duration_text(5s), "5s");
    EXPECT_EQ(duration_text(2min), "2min");
    EXPECT_EQ(duration_text(1h), "1h");
    EXPECT_EQ(duration_text(90s), "90s");
    EXPECT_EQ(duration_text(1500ms), "1500ms");
    EXPECT_EQ(duration_text(500us), "500us");
    EXPECT_EQ(duration_text(1ns), "1ns");
    EXPECT_EQ(duration_text(173'482'911ns), "173482911ns");
}

TEST(duration_text, zero_and_negative_values_keep_a_unit) {
    EXPECT_EQ(duration_text(0ns), "0ms");
    EXPECT_EQ(duration_text(-1ms), "-1ms");
    EXPECT_EQ(duration_text(-5ms), "-5ms");
    EXPECT_EQ(duration_text(-1s), "-1s");
}
