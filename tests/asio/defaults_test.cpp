// A setting left at its default follows the settings the user set instead of contradicting them; two
// settings that were both set and contradict each other are still refused, naming both.
#include "test_support.hpp"

#include <respool/defaulted.hpp>

#include <stdexcept>
#include <string>

using namespace std::chrono_literals;
using respool::pool_options;
using test::tracker;

namespace {

std::string rejection(const pool_options& o) {
    try {
        respool::validate(o);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "accepted";
}

}  // namespace

TEST(defaulted, knows_whether_it_was_set) {
    pool_options o;
    EXPECT_FALSE(o.max.is_set());
    EXPECT_EQ(o.max, 10u);
    o.max = 10;  // the default's own value, written: set
    EXPECT_TRUE(o.max.is_set());
    const pool_options copy = o;
    EXPECT_TRUE(copy.max.is_set()) << "a copy keeps whether it was set";
    const pool_options braced{.create_retry_max = {}};  // `{}` written: set, to zero
    EXPECT_TRUE(braced.create_retry_max.is_set());
    EXPECT_EQ(braced.create_retry_max, respool::duration::zero());
    EXPECT_FALSE(braced.create_retry_initial.is_set());
}

TEST(defaults, max_left_at_its_default_is_raised_to_min) {
    EXPECT_EQ(rejection({.min = 12}), "accepted");
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    pool<conn> p(io.get_executor(), {.min = 12}, test::counting_hooks(t));
    EXPECT_EQ(p.options().max, 12u);
    EXPECT_EQ(p.stats().max, 12u);
    EXPECT_EQ(t->created, 12) << "the pre-warm made min";
}

TEST(defaults, min_above_a_max_that_was_set_is_refused_even_at_the_default_value) {
    EXPECT_EQ(rejection({.min = 12, .max = 10}), "respool: min (12) must not exceed max (10)");
}

TEST(defaults, create_retry_max_left_at_its_default_follows_a_larger_initial) {
    EXPECT_EQ(rejection({.create_retry_initial = 30s}), "accepted");
    const pool_options o = respool::resolve_defaults({.create_retry_initial = 30s});
    EXPECT_EQ(o.create_retry_max, 30s);
    EXPECT_EQ(o.create_retry_initial, 30s);
}

TEST(defaults, create_retry_initial_left_at_its_default_follows_a_smaller_max) {
    EXPECT_EQ(rejection({.create_retry_max = 5ms}), "accepted");
    const pool_options o = respool::resolve_defaults({.create_retry_max = 5ms});
    EXPECT_EQ(o.create_retry_initial, 5ms);
    EXPECT_EQ(o.create_retry_max, 5ms);
    EXPECT_EQ(rejection({.create_retry_max = {}}), "accepted") << "0: retry at once";
}

TEST(defaults, create_retry_pair_both_set_and_contradicting_is_refused) {
    EXPECT_EQ(rejection({.create_retry_initial = 50ms, .create_retry_max = 10ms}),
              "respool: create_retry_max (10ms) must not be below create_retry_initial (50ms)");
}

TEST(defaults, settings_that_agree_are_left_as_they_are) {
    const pool_options o = respool::resolve_defaults({.min = 2, .create_retry_initial = 1ms});
    EXPECT_EQ(o.max, 10u);
    EXPECT_EQ(o.create_retry_initial, 1ms);
    EXPECT_EQ(o.create_retry_max, 10s);
}
