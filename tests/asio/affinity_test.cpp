// pool_options::thread_affinity: a thread's released resource waits in the thread's own slot and comes
// back to that thread first; other threads steal it before they fail or wait; anything that needs the
// core (a parked waiter, an open circuit, close, an observer, the lifecycle timers) drains the slots.
// Each step runs on a named thread and is checked through stats() and the resources' ids.
#include "test_support.hpp"

#include <boost/asio/executor_work_guard.hpp>

#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using respool::pool_options;

namespace {

// A thread_safe pool with the thread-affinity cache, its executor run by a thread of its own.
struct affinity_fixture : test::threaded_fixture {
    std::unique_ptr<pool<conn>> make(pool_options o) { return make(o, test::counting_hooks(t)); }
    std::unique_ptr<pool<conn>> make(pool_options o, respool::hooks<conn> h) {
        o.thread_safe = true;
        o.thread_affinity = true;
        return std::make_unique<pool<conn>>(io.get_executor(), o, std::move(h));
    }
};

}  // namespace

TEST(affinity_options, thread_affinity_requires_thread_safe) {
    asio::io_context io;
    try {
        pool<conn> p(io.get_executor(), {.max = 2, .thread_affinity = true},
                     test::counting_hooks(std::make_shared<test::tracker>()));
        FAIL() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("thread_affinity requires thread_safe"), std::string::npos)
            << e.what();
    }
}

TEST_F(affinity_fixture, a_thread_gets_back_the_resource_it_released_and_stats_count_it_idle) {
    auto p = make({.min = 3, .max = 3});
    int first;
    {
        auto l = p->try_acquire();
        ASSERT_TRUE(l);
        first = l->id;
    }
    auto s = p->stats();
    EXPECT_EQ(s.idle, 3u) << "a cached resource is idle";
    EXPECT_EQ(s.active, 0u);
    EXPECT_EQ(s.total, 3u);
    for (int i = 0; i < 5; ++i) {
        auto l = p->try_acquire();
        ASSERT_TRUE(l);
        EXPECT_EQ(l->id, first) << "FIFO idle order would have lent the next resource";
        EXPECT_EQ(p->stats().active, 1u);
    }
    EXPECT_EQ(p->stats().acquires, 6u) << "takes from the cache are counted";
}

TEST_F(affinity_fixture, another_thread_steals_a_cached_resource_before_failing) {
    auto p = make({.min = 1, .max = 1});
    p->try_acquire().release();  // now in this thread's slot; the core has no idle resource
    auto stolen = on_other_thread([&] { return p->try_acquire(); });
    ASSERT_TRUE(stolen) << "try_acquire must find a resource that sits in another thread's slot";
    EXPECT_FALSE(p->try_acquire()) << "one resource, lent once";
    EXPECT_EQ(p->stats().active, 1u);
}

TEST_F(affinity_fixture, a_parked_waiter_is_served_by_the_release_and_the_releaser_cannot_barge) {
    auto p = make({.min = 1, .max = 1});
    auto held = p->try_acquire();
    ASSERT_TRUE(held);
    std::promise<lease<conn>> served;
    std::thread waiter([&] {
        p->async_acquire([&](error_code ec, lease<conn> l) {
            EXPECT_FALSE(ec);
            served.set_value(std::move(l));  // kept until this test returns it
        });
    });
    waiter.join();
    ASSERT_TRUE(wait_for(*p, [](const auto& s) { return s.waiting == 1; }));
    const int id = held->id;
    held.release();  // a waiter is parked: to the core, reserved for it, not to this thread's slot
    EXPECT_FALSE(p->try_acquire()) << "the releaser must not take the place reserved for the waiter";
    lease<conn> got = served.get_future().get();
    ASSERT_TRUE(got);
    EXPECT_EQ(got->id, id);
    EXPECT_FALSE(p->try_acquire()) << "lent to the waiter";
    got.release();  // nobody waits now: into this thread's slot
    EXPECT_TRUE(p->try_acquire()) << "free again once the waiter returned it";
}

TEST_F(affinity_fixture, close_destroys_cached_resources_at_once) {
    auto p = make({.min = 0, .max = 2});
    p->try_acquire().release();
    EXPECT_EQ(p->stats().idle, 1u);
    EXPECT_EQ(t->live(), 1);
    p->close();
    EXPECT_EQ(t->live(), 0) << "close must drain the slots";
    EXPECT_EQ(p->stats().total, 0u);
    EXPECT_FALSE(p->try_acquire());
}

TEST_F(affinity_fixture, an_open_circuit_fails_acquires_even_with_a_cached_resource) {
    auto p = make({.min = 0, .max = 1});
    int id;
    {
        auto l = p->try_acquire();
        id = l->id;
    }
    p->deactivate();
    EXPECT_FALSE(p->try_acquire()) << "open circuit: nothing is lent, not even from this thread's slot";
    std::promise<error_code> result;
    p->async_acquire([&](error_code ec, lease<conn>) { result.set_value(ec); });
    EXPECT_EQ(result.get_future().get(), errc::unavailable);
    EXPECT_EQ(p->stats().idle, 1u) << "the drained resource waits in the core";
    p->activate();
    auto l = p->try_acquire();
    ASSERT_TRUE(l);
    EXPECT_EQ(l->id, id);
}

TEST_F(affinity_fixture, an_observer_sees_every_take_and_release) {
    struct counter : respool::observer {
        std::atomic<int> taken{0}, released{0};
        void on_taken(std::chrono::nanoseconds) override { ++taken; }
        void on_released(std::chrono::nanoseconds) override { ++released; }
    };
    auto p = make({.min = 1, .max = 1});
    p->try_acquire().release();  // cached
    auto obs = std::make_shared<counter>();
    p->set_observer(obs);
    for (int i = 0; i < 3; ++i) p->try_acquire().release();
    EXPECT_EQ(obs->taken.load(), 3);
    EXPECT_EQ(obs->released.load(), 3);
}

TEST_F(affinity_fixture, cached_resources_are_health_checked) {
    respool::hooks<conn> h = test::counting_hooks(t);
    h.healthcheck = [](conn& c) { return c.id != 1; };
    auto p = make({.min = 1, .max = 1, .healthcheck_interval = 10ms}, std::move(h));
    auto l = p->try_acquire();
    ASSERT_TRUE(l);
    ASSERT_EQ(l->id, 1);
    l.release();  // into this thread's slot
    ASSERT_TRUE(wait_for(*p, [](const auto& s) { return s.unhealthy >= 1; }))
        << "the health check must reach a resource that sits in a slot";
    ASSERT_TRUE(wait_for(*p, [](const auto& s) { return s.total == 1 && s.idle == 1; }));
    auto next = p->try_acquire();
    ASSERT_TRUE(next);
    EXPECT_NE(next->id, 1);
}

TEST_F(affinity_fixture, idle_ttl_evicts_a_cached_resource) {
    auto p = make({.min = 0, .max = 2, .idle_ttl = 40ms});
    p->try_acquire().release();
    ASSERT_TRUE(wait_for(*p, [](const auto& s) { return s.evicted == 1 && s.total == 0; }));
    // The pool uncounts the resource, then its runner thread runs the destructor: wait for that too
    // (reading live() right after the stats raced with it under TSan).
    const auto give_up = std::chrono::steady_clock::now() + 20s;
    while (t->live() != 0 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    EXPECT_EQ(t->live(), 0);
}

TEST_F(affinity_fixture, max_lifetime_retires_a_resource_that_keeps_cycling_through_the_cache) {
    auto p = make({.min = 0, .max = 1, .max_lifetime = 40ms});
    const auto give_up = std::chrono::steady_clock::now() + 20s;
    int first = -1;
    while (p->stats().retired == 0 && std::chrono::steady_clock::now() < give_up) {
        auto l = p->try_acquire();
        ASSERT_TRUE(l);
        if (first < 0) first = l->id;
    }
    EXPECT_GE(p->stats().retired, 1u);
    auto l = p->try_acquire();
    ASSERT_TRUE(l);
    EXPECT_NE(l->id, first) << "a retired resource is never lent again";
}

TEST_F(affinity_fixture, acquires_are_counted_exactly_when_threads_outnumber_the_slots) {
    // 96 threads at once: the 65th and later share slots with earlier ones. Every successful take
    // must show up in stats().acquires, whichever path (slot, core, steal) served it.
    auto p = make({.min = 4, .max = 4});
    std::atomic<std::uint64_t> taken{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> ts;
    for (int i = 0; i < 96; ++i)
        ts.emplace_back([&] {
            while (!go.load()) std::this_thread::yield();
            for (int k = 0; k < 300; ++k)
                if (auto l = p->try_acquire()) ++taken;
        });
    go = true;
    for (auto& th : ts) th.join();
    const auto s = p->stats();
    EXPECT_EQ(s.acquires, taken.load());
    EXPECT_EQ(s.active, 0u);
    EXPECT_EQ(s.idle, 4u);
}
