// Shared helpers of the Asio-level tests: the names they all use, a resource that counts its lives, a
// way to run an io_context until a condition holds (waiting on state, never sleeping for a guessed
// time), a manual clock stepped alarm by alarm, and the fixture most of them build a pool on.
#pragma once

#include <respool/pool.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <thread>

namespace test {

namespace asio = boost::asio;

struct tracker {
    std::atomic<int> created{0};
    std::atomic<int> destroyed{0};
    int live() const { return created - destroyed; }
};

struct conn {
    int id = 0;
    bool healthy = true;
};

inline respool::hooks<conn> counting_hooks(const std::shared_ptr<tracker>& t) {
    respool::hooks<conn> h;
    h.factory = [t] { return conn{++t->created}; };
    h.destructor = [t](conn&) { ++t->destroyed; };
    return h;
}

// Yields until `done()` holds (another thread makes it so); false after 20 s (a hang guard, not a timing
// guess).
inline bool eventually(const std::function<bool()>& done) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done()) {
        if (std::chrono::steady_clock::now() > give_up) return false;
        std::this_thread::yield();
    }
    return true;
}

// Runs handlers until `done()` holds; fails the test after `limit` (a hang guard, not a timing guess).
inline bool run_until(asio::io_context& io, const std::function<bool()>& done,
                      std::chrono::seconds limit = std::chrono::seconds(20)) {
    const auto give_up = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() > give_up) return false;
        io.restart();
        io.run_one_for(std::chrono::milliseconds(5));
    }
    return true;
}

}  // namespace test

#include <respool/clock.hpp>

namespace test {

// Moves a manual clock forward by `d`, stopping at every alarm on the way and running the pool's
// timer work there, so each timer fires at its own time. Bounded: a pool that re-armed at the same
// instant forever would be a bug, and fails the test.
inline void step(asio::io_context& io, respool::manual_clock& clock, respool::duration d) {
    const auto target = clock.now() + d;
    io.restart();
    io.poll();
    for (int i = 0; i < 100000; ++i) {
        const auto next = clock.next_alarm();
        if (!next || *next > target) {
            clock.advance(target - clock.now());
            io.restart();
            io.poll();
            return;
        }
        clock.advance(*next > clock.now() ? *next - clock.now() : respool::duration::zero());
        io.restart();
        io.poll();
    }
    ADD_FAILURE() << "the pool's alarm kept ringing at one instant";
}

// Where one acquire's completion lands: how often it ran (exactly once, or a bug), its error, its lease.
template <class T>
struct outcome {
    int completions = 0;
    respool::error_code ec;
    respool::lease<T> l;

    auto handler() {
        return [this](respool::error_code e, respool::lease<T> got) {
            ++completions;
            ec = e;
            l = std::move(got);
        };
    }
};

// Starts an acquire completing into `out`, then runs what is ready at the manual clock's present.
template <class T>
void acquire_into(respool::pool<T>& p, asio::io_context& io, respool::manual_clock& clock, outcome<T>& out,
                  respool::duration timeout) {
    p.async_acquire(timeout, out.handler());
    step(io, clock, respool::duration::zero());
}

// Lends an idle resource once and returns it (so it is no longer fresh), then lets `idle_for` pass.
template <class T>
void lend_once(respool::pool<T>& p, asio::io_context& io, respool::manual_clock& clock,
               respool::duration idle_for) {
    outcome<T> o;
    acquire_into(p, io, clock, o, std::chrono::seconds(10));
    ASSERT_EQ(o.completions, 1);
    ASSERT_FALSE(o.ec) << o.ec.message();
    o.l.release();
    step(io, clock, idle_for);
}

}  // namespace test

// The names every test of the driver uses.
using namespace std::chrono_literals;
using respool::errc;
using respool::error_code;
using respool::lease;
using respool::pool;
using test::conn;
namespace asio = boost::asio;

namespace test {

// An io_context, a manual clock that only the test moves, and a tracker of the resources' lives:
// what most driver tests build a pool on (the pool itself is the test's, declared after this).
struct clocked_fixture {
    asio::io_context io;
    std::shared_ptr<respool::manual_clock> clock = std::make_shared<respool::manual_clock>();
    std::shared_ptr<tracker> t = std::make_shared<tracker>();

    // Options of a pool of `max` on this fixture's clock.
    respool::pool_options options(std::size_t max) const {
        respool::pool_options o;
        o.max = max;
        o.clock = clock;
        return o;
    }
};

// A thread_safe pool's world: its executor run by a thread of its own, a tracker of the resources'
// lives, and ways to act from another thread and to wait on the pool's state.
struct threaded_fixture : ::testing::Test {
    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
    std::thread runner{[this] { io.run(); }};
    std::shared_ptr<tracker> t = std::make_shared<tracker>();

    ~threaded_fixture() override {
        work.reset();
        runner.join();
    }

    // Runs f on a thread of its own and returns its result.
    template <class F>
    static auto on_other_thread(F f) {
        return std::async(std::launch::async, std::move(f)).get();
    }

    // Waits until the predicate on stats() holds (a hang guard, not a timing guess).
    static bool wait_for(const pool<conn>& p, const std::function<bool(const respool::pool_stats&)>& pred) {
        return eventually([&] { return pred(p.stats()); });
    }
};

}  // namespace test
