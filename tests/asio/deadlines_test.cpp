// Acquire deadlines on the pool's clock (a manual clock here: nothing depends on wall time): relative
// and absolute, distinct per request, huge, zero, and already past.
#include "test_support.hpp"

#include <algorithm>
#include <random>
#include <vector>

namespace {

using fixture = test::clocked_fixture;
using outcome = test::outcome<conn>;

}  // namespace

TEST(deadlines, an_absolute_deadline_ends_the_wait_at_that_instant) {
    fixture f;
    pool<conn> p(f.io.get_executor(), f.options(1), test::counting_hooks(f.t));
    auto held = p.try_acquire();
    outcome o;
    p.async_acquire(f.clock->now() + 5s, o.handler());
    test::step(f.io, *f.clock, 4999ms);
    EXPECT_EQ(o.completions, 0);
    test::step(f.io, *f.clock, 1ms);
    EXPECT_EQ(o.completions, 1);
    EXPECT_EQ(o.ec, errc::timeout);
    EXPECT_EQ(p.stats().timeouts, 1u);
}

TEST(deadlines, distinct_deadlines_expire_each_at_its_own_time_in_deadline_order) {
    fixture f;
    pool<conn> p(f.io.get_executor(), f.options(1), test::counting_hooks(f.t));
    auto held = p.try_acquire();
    constexpr int n = 200;
    std::vector<int> ms(n);
    for (int i = 0; i < n; ++i) ms[i] = 10 + 7 * i;  // all different
    std::shuffle(ms.begin(), ms.end(), std::mt19937(42));
    std::vector<int> expired_order;
    const auto start = f.clock->now();
    for (int i = 0; i < n; ++i)
        p.async_acquire(start + std::chrono::milliseconds(ms[i]), [&, v = ms[i]](error_code ec, lease<conn>) {
            EXPECT_EQ(ec, errc::timeout);
            EXPECT_EQ(f.clock->now(), start + std::chrono::milliseconds(v)) << "expired at its own instant";
            expired_order.push_back(v);
        });
    test::step(f.io, *f.clock, 0ms);
    EXPECT_EQ(p.stats().waiting, static_cast<std::uint32_t>(n));
    test::step(f.io, *f.clock, std::chrono::milliseconds(10 + 7 * n));
    ASSERT_EQ(expired_order.size(), static_cast<std::size_t>(n));
    EXPECT_TRUE(std::is_sorted(expired_order.begin(), expired_order.end()));
}

TEST(deadlines, a_huge_timeout_means_a_long_wait_not_an_overflow) {  // adversary D3
    fixture f;
    auto o_max = f.options(1);
    o_max.acquire_timeout = respool::duration::max();
    o_max.max_lifetime = respool::duration::max();
    pool<conn> p(f.io.get_executor(), o_max, test::counting_hooks(f.t));
    auto held = p.try_acquire();
    outcome by_default, by_argument, by_time_point;
    p.async_acquire(by_default.handler());
    p.async_acquire(respool::duration::max(), by_argument.handler());
    p.async_acquire(std::chrono::steady_clock::time_point::max(), by_time_point.handler());
    test::step(f.io, *f.clock, 24h * 365);
    EXPECT_EQ(by_default.completions + by_argument.completions + by_time_point.completions, 0)
        << "still waiting after a year";
    held.release();
    test::step(f.io, *f.clock, 0ms);
    EXPECT_EQ(by_default.completions, 1);
    EXPECT_FALSE(by_default.ec) << by_default.ec.message();
}

TEST(deadlines, a_zero_timeout_on_a_cold_pool_creates_with_a_synchronous_factory) {  // adversary D7
    fixture f;
    pool<conn> p(f.io.get_executor(), f.options(2), test::counting_hooks(f.t));
    outcome zero, past;
    p.async_acquire(0ns, zero.handler());
    p.async_acquire(f.clock->now() - 1s, past.handler());
    test::step(f.io, *f.clock, 0ms);
    EXPECT_EQ(zero.completions, 1);
    EXPECT_FALSE(zero.ec) << zero.ec.message();
    EXPECT_EQ(past.completions, 1);
    EXPECT_FALSE(past.ec) << past.ec.message();
    outcome none;  // both places are lent now: a zero timeout fails at once
    p.async_acquire(0ns, none.handler());
    test::step(f.io, *f.clock, 0ms);
    EXPECT_EQ(none.completions, 1);
    EXPECT_EQ(none.ec, errc::timeout);
}
