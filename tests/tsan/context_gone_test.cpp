// A pool that outlives its io_context: the context is destroyed first, then the pool, while the
// pool's health checks, idle_ttl housekeeping and creation retries are armed. The context's shutdown
// closes every pool on it and stops their alarms, so no timer posts into the dead context (a
// use-after-free under ASan, a race under TSan), whether the pool was closed before or not; the pool
// can still be read, closed and destroyed afterwards. With a manual clock the alarm's time is forced
// deterministically; with the default clock its thread rings on its own.
#include "../asio/test_support.hpp"

#include <atomic>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

// Health checks every millisecond, housekeeping every 10 ms (idle_ttl), and creations that fail after
// the first `good` ones, so a retry is armed too.
respool::pool_options armed(std::shared_ptr<respool::pool_clock> clock) {
    respool::pool_options o;
    o.min = 3;
    o.max = 4;
    o.healthcheck_interval = 1ms;
    o.idle_ttl = 40ms;
    o.create_retry_initial = 1ms;
    o.create_retry_max = 2ms;
    o.clock = std::move(clock);
    return o;
}

respool::hooks<int> ints(const std::shared_ptr<test::tracker>& t, int good) {
    respool::hooks<int> h;
    h.factory = [t, good] {
        if (t->created >= good) throw std::runtime_error("refused");
        return ++t->created;
    };
    h.destructor = [t](int&) { ++t->destroyed; };
    h.healthcheck = [](int&) { return true; };
    return h;
}

}  // namespace

TEST(context_gone, an_open_pool_outlives_its_io_context_and_its_alarm_never_rings_into_it) {
    auto clock = std::make_shared<respool::manual_clock>();
    auto t = std::make_shared<test::tracker>();
    auto io = std::make_unique<asio::io_context>();
    auto p = std::make_unique<respool::pool<int>>(io->get_executor(), armed(clock), ints(t, 2));
    io->poll();
    ASSERT_EQ(t->created, 2) << "the third creation failed: a retry is armed";
    ASSERT_TRUE(clock->next_alarm()) << "health check, housekeeping and retry are armed";
    auto held = p->try_acquire();  // a lease that outlives the context too
    ASSERT_TRUE(held);
    io.reset();
    EXPECT_EQ(clock->alarms(), 0u) << "the context's shutdown cancelled the pool's alarm";
    clock->advance(1s);  // would ring into the dead context
    const auto s = p->stats();
    EXPECT_TRUE(s.closed) << "a pool whose context shut down is closed";
    EXPECT_EQ(s.idle, 0u);
    EXPECT_EQ(s.active, 1u);
    held.release();  // destroyed: the pool is closed
    EXPECT_EQ(t->live(), 0);
    p->close();  // idempotent, touches nothing of the context
    p.reset();
    EXPECT_EQ(clock->alarms(), 0u);
    EXPECT_EQ(t->live(), 0);
}

TEST(context_gone, a_closed_pool_outlives_its_io_context_and_its_alarm_never_rings_into_it) {
    auto clock = std::make_shared<respool::manual_clock>();
    auto t = std::make_shared<test::tracker>();
    auto io = std::make_unique<asio::io_context>();
    auto p = std::make_unique<respool::pool<int>>(io->get_executor(), armed(clock), ints(t, 2));
    io->poll();
    p->async_close(1s, [](respool::error_code) {});  // nothing held: drained at once, no grace timer
    io.reset();
    clock->advance(1s);
    EXPECT_EQ(clock->alarms(), 0u);
    p.reset();
    EXPECT_EQ(t->live(), 0);
}

TEST(context_gone, a_pool_with_a_waiter_and_a_grace_timer_outlives_its_io_context) {
    auto clock = std::make_shared<respool::manual_clock>();
    auto t = std::make_shared<test::tracker>();
    auto io = std::make_unique<asio::io_context>();
    auto o = armed(clock);
    o.min = 1;
    o.max = 1;
    auto p = std::make_unique<respool::pool<int>>(io->get_executor(), o, ints(t, 1));
    io->poll();
    auto held = p->try_acquire();
    ASSERT_TRUE(held);
    int completions = 0;
    p->async_acquire(10s, [&](respool::error_code, respool::lease<int>) { ++completions; });
    io->poll();
    ASSERT_EQ(p->stats().waiting, 1u);
    p->async_close(5s, [&](respool::error_code) { ++completions; });  // a grace timer is armed
    io->poll();
    io.reset();  // the waiter's and the close's handlers are destroyed with the context, never run
    EXPECT_EQ(clock->alarms(), 0u);
    clock->advance(10s);
    EXPECT_EQ(completions, 0);
    held.release();
    p.reset();
    EXPECT_EQ(t->live(), 0);
}

// The default clock's own thread, pools open and closed: each round destroys the context while the
// pools' health ticks fall due every millisecond, lets their times pass, then destroys the pools.
TEST(context_gone, pools_outlive_their_io_context_under_the_default_clock) {
    auto t = std::make_shared<test::tracker>();
    for (int round = 0; round < 40; ++round) {
        auto io = std::make_unique<asio::io_context>();
        std::vector<respool::pool<int>> pools;
        for (int i = 0; i < 8; ++i)
            pools.emplace_back(io->get_executor(), armed(nullptr), ints(t, t->created + 2));
        io->poll();
        for (std::size_t i = 0; i < pools.size(); i += 2) pools[i].close();  // half closed, half open
        std::this_thread::sleep_for(std::chrono::microseconds(500 + 50 * (round % 10)));
        io.reset();
        std::this_thread::sleep_for(3ms);  // the timers that were due stay due: none may ring into it
        for (auto& p : pools) EXPECT_TRUE(p.stats().closed);
    }
    EXPECT_EQ(t->live(), 0);
}
