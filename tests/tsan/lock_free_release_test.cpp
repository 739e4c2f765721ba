// The lock-free releases of a thread_safe pool under real threads: the return list's own operations
// (every push either lands and is taken back exactly once, by an absorb or a close, or fails on a
// closed list and stays the pusher's), and releases made without the lock while another thread drops
// the pool (a release must be over once its resource is published: the pool may be freed the next
// moment). Built and run under ThreadSanitizer and AddressSanitizer by scripts/test.
#include "asio/return_list.hpp"

#include <respool/pool.hpp>

#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

namespace {

using respool::detail::resource_node;
using respool::detail::return_list;

}  // namespace

// Four threads push their nodes as fast as they can while a fifth, playing the pool's lock holder,
// absorbs the list and, every eighth step, closes it for a moment and opens it again. Each node carries the
// count of times it was handed back; a pusher whose push failed keeps its node and tries again. At the end
// every hand-back is accounted for: none lost (a close that let a concurrent push slip onto a list it had
// already emptied), none twice.
TEST(return_list_race, every_push_is_taken_back_exactly_once) {
    constexpr int pushers = 4, rounds = 20000;
    return_list list;
    list.open();
    std::vector<std::unique_ptr<resource_node>> nodes;
    for (int i = 0; i < pushers; ++i) nodes.push_back(std::make_unique<resource_node>());
    std::vector<std::atomic<int>> owned(pushers);  // 1: the pusher holds its node; 0: the list does
    for (auto& o : owned) o = 1;
    std::atomic<long> pushed{0}, refused{0}, taken{0};
    std::atomic<int> lost{0};  // pushers whose node never came back
    std::atomic<bool> stop{false};

    std::vector<std::thread> ts;
    for (int i = 0; i < pushers; ++i)
        ts.emplace_back([&, i] {
            for (int r = 0; r < rounds; ++r) {
                // Until the holder gives it back: a node lost by the list never comes back (bounded,
                // so that a lost node fails the test instead of hanging it).
                const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
                while (owned[static_cast<std::size_t>(i)].load(std::memory_order_acquire) == 0) {
                    if (std::chrono::steady_clock::now() > give_up) {
                        ++lost;
                        return;
                    }
                    std::this_thread::yield();
                }
                owned[static_cast<std::size_t>(i)].store(0, std::memory_order_relaxed);
                if (list.push(nodes[static_cast<std::size_t>(i)].get())) {
                    ++pushed;
                } else {
                    ++refused;
                    owned[static_cast<std::size_t>(i)].store(1, std::memory_order_release);
                    std::this_thread::yield();  // a releaser would take the lock now: let the holder run
                }
            }
        });
    auto give_back = [&](resource_node* n) {
        for (int i = 0; i < pushers; ++i)
            if (nodes[static_cast<std::size_t>(i)].get() == n) {
                EXPECT_EQ(owned[static_cast<std::size_t>(i)].exchange(1, std::memory_order_acq_rel), 0)
                    << "a node came back twice";
                ++taken;
            }
    };
    std::thread holder([&] {
        auto give_all = [&](resource_node* n) {
            while (n) {
                resource_node* next = n->next_returned;
                give_back(n);
                n = next;
            }
        };
        for (unsigned step = 0; !stop.load(); ++step) {
            if (step % 8 == 7) {  // closed for a moment, as while a waiter parks
                give_all(list.close());
                std::this_thread::yield();
                list.open();
            } else {
                give_all(list.take_all());
            }
            std::this_thread::yield();
        }
    });
    for (auto& t : ts) t.join();
    stop = true;
    holder.join();
    for (resource_node* n = list.close(); n;) {
        resource_node* next = n->next_returned;
        give_back(n);
        n = next;
    }
    ASSERT_EQ(lost.load(), 0) << "a node pushed onto the list was never taken back";
    EXPECT_EQ(pushed.load() + refused.load(), static_cast<long>(pushers) * rounds);
    EXPECT_EQ(taken.load(), pushed.load()) << "every node pushed is taken back once";
    EXPECT_GT(refused.load(), 0) << "the mix must push onto a closed list too";
    EXPECT_GT(taken.load(), 0) << "the mix must push onto an open list too";
    for (auto& o : owned) EXPECT_EQ(o.load(), 1);
    std::printf("return list race: %ld pushes taken back, %ld refused by a closed list\n", taken.load(),
                refused.load());
}

// A lease given back without the lock (onto the return list, or into the thread's affinity slot)
// while the main thread drops the pool: close absorbs or drains the resource, destroys it, and frees
// the pool. No sleep on either side, so the release and the drop overlap; under the sanitizers, a
// release that read the pool after publishing its resource would read freed memory.
TEST(return_list_race, a_pool_dropped_while_a_lease_comes_back_without_the_lock) {
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
