// The idle order of a thread_safe pool without the thread-affinity cache, taken and given back from
// threads other than the pool's executor: the pool lends in exactly the order it promises (oldest
// release first, or newest with idle_order::lifo), its resources count as idle the moment they are
// back, a parked waiter gets the next release (the releaser cannot barge), close destroys what is idle,
// and an attached observer sees every release. The races themselves run in tests/tsan/stress_test.cpp.
#include "test_support.hpp"

#include <vector>

using respool::pool_options;

namespace {

struct thread_safe_order_fixture : test::threaded_fixture {
    std::unique_ptr<pool<conn>> make(pool_options o) {
        o.thread_safe = true;
        return std::make_unique<pool<conn>>(io.get_executor(), o, test::counting_hooks(t));
    }

    // Borrows every resource of `p` (made inline, ids 1..n in order) and gives them back in `order`.
    static void cycle_in_order(pool<conn>& p, std::size_t n, const std::vector<int>& order) {
        std::vector<lease<conn>> held(n + 1);
        for (std::size_t i = 0; i < n; ++i) {
            auto l = p.try_acquire();
            ASSERT_TRUE(l);
            held[static_cast<std::size_t>(l->id)] = std::move(l);
        }
        for (int id : order) held[static_cast<std::size_t>(id)].release();
    }

    // The ids of `n` leases taken one after another (all held until every one is taken).
    static std::vector<int> take_ids(pool<conn>& p, std::size_t n) {
        std::vector<lease<conn>> held;
        std::vector<int> ids;
        for (std::size_t i = 0; i < n; ++i) {
            held.push_back(p.try_acquire());
            ids.push_back(held.back() ? held.back()->id : 0);
        }
        return ids;
    }
};

}  // namespace

TEST_F(thread_safe_order_fixture, fifo_order_is_exact_across_releases) {
    auto p = make({.min = 0, .max = 4});
    cycle_in_order(*p, 4, {3, 1, 4, 2});
    EXPECT_EQ(take_ids(*p, 4), (std::vector<int>{3, 1, 4, 2})) << "the oldest release is lent first";

    // Two idle in the pool's order (4, 2 after taking 3 and 1), then 1 and 3 given back: the returned
    // ones are younger than the idle ones, and keep their own order behind them.
    {
        auto a = p->try_acquire();
        auto b = p->try_acquire();
        ASSERT_TRUE(a && b);
        EXPECT_EQ(a->id, 3);
        EXPECT_EQ(b->id, 1);
        b.release();
        a.release();
    }
    EXPECT_EQ(take_ids(*p, 4), (std::vector<int>{4, 2, 1, 3}));
}

TEST_F(thread_safe_order_fixture, lifo_order_lends_the_last_release_first) {
    auto p = make({.min = 0, .max = 3, .order = respool::idle_order::lifo});
    cycle_in_order(*p, 3, {2, 3, 1});
    EXPECT_EQ(take_ids(*p, 3), (std::vector<int>{1, 3, 2}));
}

TEST_F(thread_safe_order_fixture, returned_resources_count_as_idle_at_once) {
    auto p = make({.min = 0, .max = 3});
    cycle_in_order(*p, 3, {1, 2, 3});
    const auto s = p->stats();
    EXPECT_EQ(s.idle, 3u);
    EXPECT_EQ(s.active, 0u);
    EXPECT_EQ(s.total, 3u);
    EXPECT_EQ(s.acquires, 3u);
}

TEST_F(thread_safe_order_fixture, a_parked_waiter_is_served_by_the_release_and_the_releaser_cannot_barge) {
    auto p = make({.min = 0, .max = 1});
    auto held = p->try_acquire();
    ASSERT_TRUE(held);
    std::promise<lease<conn>> served;
    on_other_thread([&] {
        p->async_acquire([&](error_code ec, lease<conn> l) {
            EXPECT_FALSE(ec);
            served.set_value(std::move(l));
        });
        return 0;
    });
    ASSERT_TRUE(wait_for(*p, [](const auto& s) { return s.waiting == 1; }));
    const int id = held->id;
    held.release();  // a waiter is parked: the release goes to the waiter
    EXPECT_FALSE(p->try_acquire()) << "the releaser must not take the place reserved for the waiter";
    lease<conn> got = served.get_future().get();
    ASSERT_TRUE(got);
    EXPECT_EQ(got->id, id);
    got.release();  // nobody waits now: idle again
    EXPECT_TRUE(p->try_acquire()) << "free again once the waiter returned it";
}

TEST_F(thread_safe_order_fixture, close_destroys_released_resources_at_once) {
    auto p = make({.min = 0, .max = 2});
    cycle_in_order(*p, 2, {2, 1});
    EXPECT_EQ(t->live(), 2);
    p->close();
    EXPECT_EQ(t->live(), 0) << "close must destroy every idle resource";
    EXPECT_EQ(p->stats().total, 0u);
    EXPECT_FALSE(p->try_acquire());
}

TEST_F(thread_safe_order_fixture, an_observer_sees_every_release_once_it_is_attached) {
    struct counting_observer : respool::observer {
        std::atomic<int> released{0};
        void on_released(std::chrono::nanoseconds) override { ++released; }
    };
    auto p = make({.min = 0, .max = 2});
    cycle_in_order(*p, 2, {1, 2});  // both idle, unobserved
    auto o = std::make_shared<counting_observer>();
    p->add_observer(o);
    cycle_in_order(*p, 2, {2, 1});
    EXPECT_EQ(o->released.load(), 2) << "with an observer, releases take the path that reports them";
    EXPECT_EQ(take_ids(*p, 2), (std::vector<int>{2, 1}));
}
