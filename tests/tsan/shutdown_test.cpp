// Shutdown races under ThreadSanitizer / ASan: the pool's timers (health ticks, lifecycle ticks)
// against the destruction of the pool and of the io_context it ran on (SPEC.md §1.5). Each round
// destroys the pool and then, at once, its io_context while the pool's timers are due every
// millisecond; a timer thread that still posts into the dead context is a data race and a
// use-after-free. Bounded: a fixed number of short rounds.
#include "../asio/test_support.hpp"

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
            for (int i = 0; i < 16; ++i) pools.emplace_back(io->get_executor(), busy_timers(), checked_ints(t));
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
        std::this_thread::sleep_for(2ms);  // timers that were due stay due: none may fire into the dead context
    }
    EXPECT_EQ(t->live(), 0);
}
