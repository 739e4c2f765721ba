// The pool's lock in thread_safe mode (src/asio/pool_lock.hpp) under real threads: mutual exclusion
// on every path (taken at once, after yielding, after sleeping), a sleeper always woken, and releases
// racing the pool's drop. Built and run under ThreadSanitizer and AddressSanitizer by scripts/test.
#include "asio/pool_lock.hpp"

#include "../asio/test_support.hpp"

#include <respool/pool.hpp>

#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using respool::detail::pool_lock;
using test::eventually;

// The scheduler state of thread `tid` of this process ('R' running, 'S' asleep, ...), '?' if unknown.
char thread_state(long tid) {
    if (tid == 0) return '?';
    std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
    std::string line;
    std::getline(f, line);
    const auto close = line.rfind(')');  // the name may hold spaces and parentheses
    return close == std::string::npos || close + 2 >= line.size() ? '?' : line[close + 2];
}

}  // namespace

// Four threads add to a plain counter under the lock. Every 64th section holds the lock across a few
// yields, long enough that contenders often use up theirs and sleep, so the lock is taken at once,
// after yielding and after sleeping (ThreadSanitizer reports any section that overlaps another; the
// next test makes sure of the sleep). The count must be exact.
TEST(pool_lock, sections_never_overlap_whichever_way_the_lock_was_taken) {
    constexpr int threads = 4, rounds = 20000;
    pool_lock lock;
    long counter = 0;  // plain: only the lock orders the writes
    std::atomic<int> inside{0}, overlaps{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
        ts.emplace_back([&] {
            for (int r = 0; r < rounds; ++r) {
                lock.lock();
                if (inside.fetch_add(1) != 0) ++overlaps;
                ++counter;
                if (r % 64 == 0)
                    for (int y = 0; y < 40; ++y) std::this_thread::yield();
                inside.fetch_sub(1);
                lock.unlock();
            }
        });
    for (auto& t : ts) t.join();
    EXPECT_EQ(overlaps.load(), 0);
    EXPECT_EQ(counter, static_cast<long>(threads) * rounds);
}

// A contender that found the lock held past its yields sleeps, and the unlock wakes it: the main thread
// holds the lock until the contender is asleep in the kernel (the lock says a sleeper is due, and the
// kernel says the thread sleeps), then lets go.
TEST(pool_lock, a_contender_asleep_is_woken_by_the_unlock) {
    pool_lock lock;
    lock.lock();
    std::atomic<bool> got{false};
    std::atomic<long> tid{0};
    std::thread contender([&] {
        tid = static_cast<long>(::syscall(SYS_gettid));
        lock.lock();
        got = true;
        lock.unlock();
    });
    const bool asleep = eventually([&] { return lock.has_sleepers() && thread_state(tid.load()) == 'S'; });
    EXPECT_TRUE(asleep) << "the contender never went to sleep";
    EXPECT_FALSE(got.load());
    lock.unlock();
    if (!eventually([&] { return got.load(); })) {
        std::fprintf(stderr, "pool_lock: the sleeping contender was never woken\n");
        std::abort();  // joining would hang, and the thread still uses `lock`
    }
    contender.join();
    lock.lock();  // free again, and takeable at once
    EXPECT_FALSE(lock.has_sleepers());
    lock.unlock();
}

// A lease given back (under the pool's lock, or into the thread's affinity slot) while the main thread
// drops the pool: close takes the resource back or drains it, destroys it, and frees the pool. No sleep
// on either side, so the release and the drop overlap; under the sanitizers, a release that read the
// pool after handing its resource over would read freed memory.
TEST(thread_safe_release, a_pool_dropped_while_a_lease_comes_back_from_another_thread) {
    std::atomic<int> created{0}, destroyed{0};
    boost::asio::io_context io;
    for (int round = 0; round < 2000; ++round) {
        respool::hooks<int> h;
        h.factory = [&created] { return ++created; };
        h.destructor = [&destroyed](int&) { ++destroyed; };
        auto p = std::make_unique<respool::pool<int>>(
            io.get_executor(),
            respool::pool_options{.min = 0, .max = 1, .thread_safe = true, .thread_affinity = round % 2 == 1},
            std::move(h));
        auto l = p->try_acquire();
        ASSERT_TRUE(l);
        std::atomic<int> ready{0};
        std::thread releaser([&ready, l = std::move(l)]() mutable {
            ++ready;
            while (ready.load() < 2) {
            }
            l.release();
        });
        ++ready;
        while (ready.load() < 2) {
        }
        p.reset();
        releaser.join();
    }
    io.poll();
    EXPECT_EQ(created.load(), destroyed.load());
}
