// Shutdown races under ThreadSanitizer / ASan: the pool's timers (health ticks, lifecycle ticks)
// against the destruction of the pool and of the io_context it ran on. Each round
// destroys the pool and then, at once, its io_context while the pool's timers are due every
// millisecond; a timer thread that still posts into the dead context is a data race and a
// use-after-free. Bounded: a fixed number of short rounds.
#include "../asio/test_support.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

respool::pool_options busy_timers() {
    respool::pool_options o;
    o.min = 2;
    o.max = 4;
    o.healthcheck_interval = 1ms;  // a health tick every millisecond
    o.idle_ttl = 40ms;             // housekeeping every 10 ms
    return o;
}

respool::hooks<int> checked_ints(const std::shared_ptr<test::tracker>& t) {
    respool::hooks<int> h;
    h.factory = [t] { return ++t->created; };
    h.destructor = [t](int&) { ++t->destroyed; };
    h.healthcheck = [](int&) { return true; };
    return h;
}

}  // namespace

TEST(shutdown, a_destroyed_pool_never_posts_into_its_io_context_once_that_is_gone) {
    auto t = std::make_shared<test::tracker>();
    for (int round = 0; round < 300; ++round) {
        auto io = std::make_unique<asio::io_context>();
        {
            std::vector<respool::pool<int>> pools;
            for (int i = 0; i < 16; ++i)
                pools.emplace_back(io->get_executor(), busy_timers(), checked_ints(t));
            io->poll();
            // The health ticks armed by that poll fall due about now, while the pools and then the
            // context are destroyed: the timer thread's posts race the teardown.
            std::this_thread::sleep_for(std::chrono::microseconds(900 + 20 * (round % 10)));
        }
        io.reset();  // nothing of the pools may touch the context after ~pool
    }
    EXPECT_EQ(t->live(), 0);
}

TEST(shutdown, a_pool_closed_before_its_io_context_dies_outlives_it) {
    auto t = std::make_shared<test::tracker>();
    for (int round = 0; round < 50; ++round) {
        auto io = std::make_unique<asio::io_context>();
        std::vector<respool::pool<int>> pools;
        for (int i = 0; i < 16; ++i) pools.emplace_back(io->get_executor(), busy_timers(), checked_ints(t));
        io->poll();
        for (auto& p : pools) p.close();
        io.reset();  // a documented misuse for an open pool; a closed one must survive it
        std::this_thread::sleep_for(
            2ms);  // timers that were due stay due: none may fire into the dead context
    }
    EXPECT_EQ(t->live(), 0);
}

// Review appendix 1: async_close on a thread_safe pool completes exactly once when its grace period
// ends while other threads return the last leases (the drain and the grace timer race).
TEST(shutdown, async_close_completes_once_when_the_grace_period_races_the_last_release) {
    auto t = std::make_shared<test::tracker>();
    for (int round = 0; round < 200; ++round) {
        asio::io_context io;
        auto work = asio::make_work_guard(io);
        std::thread loop([&] { io.run(); });
        respool::pool<test::conn> p(io.get_executor(), {.max = 4, .thread_safe = true},
                                    test::counting_hooks(t));
        std::vector<respool::lease<test::conn>> held;
        for (int i = 0; i < 4; ++i) held.push_back(p.try_acquire());
        std::atomic<int> completions{0};
        std::atomic<bool> go{false};
        std::vector<std::thread> releasers;
        for (auto& l : held)
            releasers.emplace_back([&go, l = std::move(l)]() mutable {
                while (!go) std::this_thread::yield();
                l.release();
            });
        p.async_close(std::chrono::microseconds(round % 50), [&](respool::error_code) { ++completions; });
        go = true;
        for (auto& r : releasers) r.join();
        // `loop` runs the context: wait for the completion here (bounded), never mind who won.
        for (int i = 0; i < 20000 && completions == 0; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        ASSERT_EQ(completions, 1) << "round " << round;
        work.reset();
        loop.join();
        EXPECT_EQ(completions, 1) << "round " << round;
    }
    EXPECT_EQ(t->live(), 0);
}

// Review appendix 2: the pool object is destroyed on one thread while another returns the last lease.
// The releasing thread still runs the destructor hook and the drain after the pool's count reached
// zero: the pool's state must outlive that. The destructor hooks are slow on purpose, to hold each
// thread inside the window where the other one acts: close() destroys the idle resource (main thread)
// while the releaser's own destruction is under way.
TEST(shutdown, a_pool_destroyed_while_another_thread_returns_the_last_lease_outlives_the_release) {
    auto created = std::make_shared<std::atomic<int>>(0);
    auto destroyed = std::make_shared<std::atomic<int>>(0);
    asio::io_context io;
    // Without and with the thread-affinity cache: the release goes under the pool's lock or into the
    // thread's slot, and must not read the pool after that (it may be freed the next moment).
    for (int round = 0; round < 200; ++round) {
        const bool affinity = round % 2 == 1;
        respool::hooks<int> h;
        h.factory = [created] { return ++*created; };
        h.destructor = [destroyed](int&) {
            std::this_thread::sleep_for(std::chrono::microseconds(300));
            ++*destroyed;
        };
        auto p = std::make_unique<respool::pool<int>>(
            io.get_executor(),
            respool::pool_options{.min = 1, .max = 2, .thread_safe = true, .thread_affinity = affinity},
            std::move(h));
        auto first = p->try_acquire();
        auto l = p->try_acquire();  // created: two resources
        ASSERT_TRUE(first && l);
        first.release();  // idle: close() destroys it on the main thread
        std::atomic<bool> go{false};
        std::thread releaser([&go, l = std::move(l)]() mutable {
            while (!go) std::this_thread::yield();
            std::this_thread::sleep_for(std::chrono::microseconds(100 + 5 * (std::rand() % 40)));
            l.release();
        });
        go = true;
        p.reset();  // close: destroys the idle one (slowly) while the releaser returns its lease
        releaser.join();
    }
    io.poll();
    EXPECT_EQ(created->load(), destroyed->load());
}

// Adversary D6: the io_context is destroyed without being run to completion while (a) a woken
// acquire is still queued in the pool, or (b) a coroutine factory is suspended. Destroying a context
// destroys its pending handlers; nothing of the pool may leak (the hooks, and what they capture, are
// freed with it).
TEST(shutdown, an_io_context_destroyed_under_a_woken_acquire_leaks_nothing) {
    auto t = std::make_shared<test::tracker>();
    auto sentinel = std::make_shared<int>(0);
    std::weak_ptr<int> alive = sentinel;
    {
        auto io = std::make_unique<asio::io_context>();
        auto h = test::counting_hooks(t);
        h.destructor = [t, sentinel](test::conn&) { ++t->destroyed; };
        sentinel.reset();
        auto p = std::make_unique<respool::pool<test::conn>>(io->get_executor(),
                                                             respool::pool_options{.max = 1}, std::move(h));
        auto held = p->try_acquire();
        int completions = 0;
        p->async_acquire([&](respool::error_code, respool::lease<test::conn>) { ++completions; });
        io->poll();      // parked
        held.release();  // woken: its resumption is queued on the context
        p.reset();
        io.reset();  // never run again
        EXPECT_EQ(completions, 0) << "destroyed, not run";
    }
    EXPECT_TRUE(alive.expired()) << "the pool (and its hooks) were freed";
    EXPECT_EQ(t->live(), 0);
}

TEST(shutdown, an_io_context_destroyed_under_a_suspended_coroutine_factory_leaks_nothing) {
    auto sentinel = std::make_shared<int>(0);
    std::weak_ptr<int> alive = sentinel;
    {
        auto io = std::make_unique<asio::io_context>();
        respool::hooks<int> h;
        h.factory = [sentinel]() -> asio::awaitable<int> {
            asio::steady_timer never(co_await asio::this_coro::executor, std::chrono::hours(24));
            co_await never.async_wait(asio::use_awaitable);
            co_return 1;
        };
        sentinel.reset();
        auto p = std::make_unique<respool::pool<int>>(
            io->get_executor(), respool::pool_options{.min = 1, .max = 1}, std::move(h));
        io->poll();  // the factory runs until it suspends
        EXPECT_EQ(p->stats().creating, 1u);
        p.reset();
        io.reset();  // destroys the suspended coroutine and its completion
    }
    EXPECT_TRUE(alive.expired()) << "the pool (and its hooks) were freed";
}
