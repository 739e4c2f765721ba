// The one hex digit reader of the database layers (bytea text, percent-encoded connection URIs).
#include "hex_digit.hpp"

#include <gtest/gtest.h>

#include <string_view>

TEST(hex_digit, values_of_both_cases_and_nothing_else) {
    constexpr std::string_view digits = "0123456789abcdef", upper = "ABCDEF";
    for (std::size_t i = 0; i < digits.size(); ++i) EXPECT_EQ(respool::detail::hex_digit(digits[i]), int(i));
    for (std::size_t i = 0; i < upper.size(); ++i)
        EXPECT_EQ(respool::detail::hex_digit(upper[i]), int(10 + i));
    for (int c = -128; c < 128; ++c) {
        const char ch = static_cast<char>(c);
        if (digits.find(ch) == std::string_view::npos && upper.find(ch) == std::string_view::npos) {
            EXPECT_EQ(respool::detail::hex_digit(ch), -1) << c;
        }
    }
}
