// Runtime controls (what the database layers need): set_max at run time and retire_all (soft
// eviction after a failover). Never takes a resource from its holder; the pool's invariants hold.
#include "test_support.hpp"

#include <set>
#include <string>
#include <vector>

namespace {

struct fixture : test::clocked_fixture {
    std::set<int> destroyed_ids;

    respool::hooks<conn> hooks() {
        auto h = test::counting_hooks(t);
        h.destructor = [this](conn& c) {
            ++t->destroyed;
            destroyed_ids.insert(c.id);
        };
        return h;
    }
};

}  // namespace

TEST(runtime_controls, raising_max_serves_parked_waiters_at_once) {
    fixture f;
    pool<conn> p(f.io.get_executor(), {.max = 1}, f.hooks());
    auto held = p.try_acquire();
    int served = 0;
    for (int i = 0; i < 3; ++i)
        p.async_acquire([&](error_code ec, lease<conn> l) {
            EXPECT_FALSE(ec);
            if (l) ++served;
            l.release();
        });
    f.io.poll();
    EXPECT_EQ(p.stats().waiting, 3u);
    p.set_max(3);
    f.io.poll();
    EXPECT_EQ(served, 3);
    EXPECT_EQ(p.stats().max, 3u);
    EXPECT_EQ(p.options().max, 3u);
}

TEST(runtime_controls, lowering_max_destroys_idle_now_and_lent_ones_as_they_come_back) {
    fixture f;
    pool<conn> p(f.io.get_executor(), {.min = 0, .max = 4}, f.hooks());
    std::vector<lease<conn>> held;
    for (int i = 0; i < 4; ++i) held.push_back(p.try_acquire());
    held[3].release();  // ids 1..3 lent, 4 idle
    p.set_max(2);
    auto s = p.stats();
    EXPECT_EQ(s.total, 3u) << "the idle one went at once; lent ones stay with their holders";
    EXPECT_EQ(s.surplus, 1u);
    EXPECT_EQ(f.destroyed_ids, (std::set<int>{4}));
    EXPECT_FALSE(p.try_acquire()) << "nothing to lend while over the new max";
    held[0].release();  // total 3 > 2: destroyed
    EXPECT_EQ(p.stats().total, 2u);
    EXPECT_TRUE(f.destroyed_ids.count(1));
    held[1].release();  // total 2 == max: kept
    EXPECT_EQ(p.stats().total, 2u);
    EXPECT_EQ(p.stats().idle, 1u);
    EXPECT_EQ(p.stats().surplus, 2u);
    auto again = p.try_acquire();
    EXPECT_TRUE(again) << "back to normal at the new max";
    EXPECT_FALSE(p.try_acquire());
}

TEST(runtime_controls, lowering_max_under_parked_waiters_serves_them_only_within_the_new_max) {
    fixture f;
    pool<conn> p(f.io.get_executor(), {.max = 3}, f.hooks());
    std::vector<lease<conn>> held;
    for (int i = 0; i < 3; ++i) held.push_back(p.try_acquire());
    lease<conn> got;
    p.async_acquire([&](error_code ec, lease<conn> l) {
        EXPECT_FALSE(ec);
        got = std::move(l);
    });
    f.io.poll();
    p.set_max(1);
    held[0].release();  // 3 -> 2 > 1: destroyed, the waiter still waits
    held[1].release();  // 2 -> 1: destroyed
    f.io.poll();
    EXPECT_FALSE(got);
    held[2].release();  // total would be 1 == max: handed to the waiter
    f.io.poll();
    ASSERT_TRUE(got);
    EXPECT_EQ(got->id, 3);
    EXPECT_EQ(p.stats().total, 1u);
}

TEST(runtime_controls, set_max_is_validated_like_the_option) {
    fixture f;
    pool<conn> p(f.io.get_executor(), {.min = 2, .max = 4}, f.hooks());
    auto msg = [&](std::size_t n) -> std::string {
        try {
            p.set_max(n);
        } catch (const std::invalid_argument& e) {
            return e.what();
        }
        return "";
    };
    EXPECT_EQ(msg(0), "respool: max (0) must be at least 1");
    EXPECT_EQ(msg(1), "respool: min (2) must not exceed max (1)");
    EXPECT_EQ(p.stats().max, 4u) << "unchanged after a rejected value";
}

TEST(runtime_controls, retire_all_replaces_every_resource_that_exists_now_and_none_made_after) {
    fixture f;
    pool<conn> p(f.io.get_executor(), {.min = 2, .max = 4}, f.hooks());
    auto lent = p.try_acquire();  // id 1 lent, 2 idle
    ASSERT_EQ(lent->id, 1);
    p.retire_all();
    auto s = p.stats();
    EXPECT_EQ(f.destroyed_ids, (std::set<int>{2})) << "the idle one went at once";
    EXPECT_EQ(s.total, 2u) << "replaced up to min: the lent one and a new one";
    EXPECT_EQ(s.replaced, 1u);
    auto fresh = p.try_acquire();
    EXPECT_EQ(fresh->id, 3);
    lent.release();  // made before retire_all: destroyed on return
    EXPECT_TRUE(f.destroyed_ids.count(1));
    EXPECT_EQ(p.stats().replaced, 2u);
    fresh.release();  // made after: kept
    EXPECT_FALSE(f.destroyed_ids.count(3));
    EXPECT_EQ(p.stats().total, 2u) << "the floor again";
    EXPECT_EQ(f.t->live(), 2);
}

TEST(runtime_controls, retire_all_reaches_resources_held_in_the_thread_affinity_cache) {
    fixture f;
    pool<conn> p(f.io.get_executor(), {.max = 2, .thread_safe = true, .thread_affinity = true}, f.hooks());
    auto a = p.try_acquire();
    a.release();  // kept in this thread's slot (the core still counts it active)
    p.retire_all();
    auto b = p.try_acquire();
    ASSERT_TRUE(b);
    EXPECT_NE(b->id, a ? a->id : 1) << "the cached one was replaced";
    EXPECT_TRUE(f.destroyed_ids.count(1));
    EXPECT_EQ(p.stats().replaced, 1u);
}
