// Invalid options are rejected before anything is created, with a message naming the option.
#include "test_support.hpp"

#include <stdexcept>
#include <string>

using respool::pool_options;
using test::tracker;

namespace {
std::string rejection(pool_options o, std::shared_ptr<tracker> t = std::make_shared<tracker>()) {
    asio::io_context io;
    try {
        pool<conn> p(io.get_executor(), o, test::counting_hooks(t));
    } catch (const std::invalid_argument& e) {
        EXPECT_EQ(t->created, 0) << "nothing is created when options are invalid";
        return e.what();
    }
    return "accepted";
}
}  // namespace

TEST(options, min_above_max_names_both_values) {
    EXPECT_EQ(rejection({.min = 12, .max = 10}), "respool: min (12) must not exceed max (10)");
}

TEST(options, max_zero_is_rejected) {
    EXPECT_EQ(rejection({.max = 0}), "respool: max (0) must be at least 1");
}

TEST(options, negative_durations_are_rejected) {
    EXPECT_EQ(rejection({.healthcheck_interval = -5ms}),
              "respool: healthcheck_interval (-5ms) must not be negative");
    EXPECT_EQ(rejection({.acquire_timeout = -1ms}), "respool: acquire_timeout (-1ms) must not be negative");
}

TEST(options, zero_concurrent_creations_is_rejected) {
    EXPECT_EQ(rejection({.max_concurrent_creations = 0}),
              "respool: max_concurrent_creations (0) must be at least 1");
}

TEST(options, missing_factory_is_rejected) {
    asio::io_context io;
    EXPECT_THROW((pool<conn>(io.get_executor(), {}, respool::hooks<conn>{})), std::invalid_argument);
}

TEST(options, valid_options_are_accepted) {
    EXPECT_EQ(rejection({.min = 10, .max = 10}), "accepted");
}
