// The return list of a shared FIFO pool; docs/03-design.md has the race argument.
#pragma once

#include <respool/detail/pool_handle.hpp>

#include <atomic>

namespace respool::detail {

// A thread_safe pool with FIFO idle order (no thread-affinity cache) takes resources back without
// its lock while nobody waits: a release pushes the resource onto this list, one compare-and-swap on
// the list's own cache line, and the core still counts it as lent. The next locked section appends
// the list, oldest release first, to the core's idle order (absorb): everything on the list was
// returned after everything already idle, so the order the core lends in is exactly FIFO. A take
// absorbs only when the core has nothing idle left; any other locked section absorbs at once, so
// stats, housekeeping and close see exact counts.
//
// Halving the lock holds per lease is the point: with more threads than cores, a thread preempted
// while it holds the lock stalls every other one, and a release can no longer be one of them.
//
// `open` mirrors core.uncontended() and changes only under the pool's lock (the thread-affinity
// cache's protocol). Closing it takes the whole list back into the core. The race between a releaser
// pushing and a waiter parking is settled Dekker-style: the releaser pushes, then re-reads `open`;
// the closer stores `open`, then takes the list (all sequentially consistent), so at least one of
// them sees the other, and take_all's exchange decides which one hands each resource to the core.
struct return_list {
    alignas(64) std::atomic<bool> open{false};
    alignas(64) std::atomic<resource_node*> head{nullptr};  // the last release first
    char pad_[64 - sizeof(std::atomic<resource_node*>)]{};

    void push(resource_node* n) noexcept {
        resource_node* h = head.load(std::memory_order_relaxed);
        do {
            n->next_returned = h;
        } while (!head.compare_exchange_weak(h, n, std::memory_order_seq_cst, std::memory_order_relaxed));
    }
    // Empties the list; its resources linked oldest release first (nullptr when it was empty).
    [[nodiscard]] resource_node* take_all() noexcept {
        if (!head.load(std::memory_order_relaxed)) return nullptr;
        resource_node* n = head.exchange(nullptr, std::memory_order_seq_cst);
        resource_node* oldest_first = nullptr;
        while (n) {
            resource_node* next = n->next_returned;
            n->next_returned = oldest_first;
            oldest_first = n;
            n = next;
        }
        return oldest_first;
    }
};

}  // namespace respool::detail
