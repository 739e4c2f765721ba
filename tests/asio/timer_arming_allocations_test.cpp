// Health checks, housekeeping and creation retries keep going when memory runs out while the pool's
// timer work runs: re-arming a recurring timer needs no allocation, so a std::bad_alloc there cannot
// end them for the pool's life. The pool's timer work (the handlers a ring posts) runs with every
// allocation refused by this binary's global operator new; the clock's ring itself (it posts) runs
// with memory.
#include "test_support.hpp"

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <stdexcept>

namespace {
std::atomic<bool> refuse{false};
std::atomic<long> refused{0};
}  // namespace

void* operator new(std::size_t n) {
    if (refuse.load(std::memory_order_relaxed)) {
        refused.fetch_add(1, std::memory_order_relaxed);
        throw std::bad_alloc();
    }
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}

namespace {

// Moves the clock to `d` from now, alarm by alarm; the work each ring posts runs without memory.
void step_without_memory(asio::io_context& io, respool::manual_clock& clock, respool::duration d) {
    const auto target = clock.now() + d;
    for (int i = 0; i < 10000; ++i) {
        const auto next = clock.next_alarm();
        const bool last = !next || *next > target;
        clock.advance(last ? target - clock.now()
                           : (*next > clock.now() ? *next - clock.now() : respool::duration::zero()));
        io.restart();
        refuse = true;
        io.poll();
        refuse = false;
        if (last) return;
    }
    ADD_FAILURE() << "the pool's alarm kept ringing at one instant";
}

}  // namespace

TEST(timer_arming, health_checks_go_on_when_memory_runs_out_during_their_ticks) {
    asio::io_context io;
    auto clock = std::make_shared<respool::manual_clock>();
    auto checks = std::make_shared<int>(0);
    respool::hooks<int> h;
    h.factory = [] { return 1; };
    h.healthcheck = [checks](int&) {
        ++*checks;
        return true;
    };
    respool::pool<int> p(io.get_executor(),
                         {.min = 2, .max = 2, .healthcheck_interval = 10ms, .clock = clock}, std::move(h));
    io.poll();
    refused = 0;
    for (int round = 1; round <= 5; ++round) {
        step_without_memory(io, *clock, 10ms);
        EXPECT_EQ(*checks, 2 * round) << "round " << round << ": both idle resources checked";
    }
    EXPECT_TRUE(clock->next_alarm()) << "the next health tick is armed";
    std::printf("allocations refused during the ticks: %ld\n", refused.load());
}

TEST(timer_arming, housekeeping_goes_on_when_memory_runs_out_during_its_ticks) {
    asio::io_context io;
    auto clock = std::make_shared<respool::manual_clock>();
    auto t = std::make_shared<test::tracker>();
    respool::pool<test::conn> p(io.get_executor(), {.max = 2, .idle_ttl = 40ms, .clock = clock},
                                test::counting_hooks(t));
    {
        auto a = p.try_acquire();
        auto b = p.try_acquire();
        ASSERT_TRUE(a && b);
    }
    ASSERT_EQ(p.stats().idle, 2u);
    step_without_memory(io, *clock, 25ms);  // two housekeeping ticks, nothing due yet
    EXPECT_EQ(p.stats().idle, 2u);
    step_without_memory(io, *clock, 30ms);  // idle 55 ms > 40 ms: evicted by a later tick
    EXPECT_EQ(p.stats().idle, 0u) << "housekeeping kept running";
    EXPECT_EQ(p.stats().evicted, 2u);
    EXPECT_EQ(t->live(), 0);
}

TEST(timer_arming, creation_retries_go_on_when_memory_runs_out_during_them) {
    asio::io_context io;
    auto clock = std::make_shared<respool::manual_clock>();
    auto calls = std::make_shared<int>(0);
    respool::hooks<int> h;
    h.factory = [calls] {
        static const std::runtime_error refused_by_server("refused");  // thrown without allocating
        if (++*calls <= 3) throw refused_by_server;                    // the first, and two more with memory
        return *calls;
    };
    respool::pool<int> p(
        io.get_executor(),
        {.min = 1, .max = 1, .create_retry_initial = 10ms, .create_retry_max = 10ms, .clock = clock},
        std::move(h));
    io.poll();
    ASSERT_EQ(*calls, 1);
    ASSERT_EQ(p.stats().idle, 0u);
    const auto retries = p.stats().creation_retries;
    step_without_memory(io, *clock, 100ms);  // retries every 8-12 ms (jitter); a node needs memory
    EXPECT_GE(p.stats().creation_retries, retries + 5) << "the retries went on without memory";
    EXPECT_EQ(*calls, 1) << "no memory for a node: the factory was not called";
    test::step(io, *clock, 100ms);  // memory again
    EXPECT_EQ(*calls, 4) << "three failures, each retried, then a success";
    EXPECT_EQ(p.stats().idle, 1u) << "the floor was reached";
}
