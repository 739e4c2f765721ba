// The return list of a shared pool; docs/03-design.md has the race argument.
#pragma once

#include "asio/pool_impl.hpp"

#include <atomic>
#include <cstdint>

namespace respool::detail {

// A thread_safe pool without the thread-affinity cache takes resources back without its lock while
// nobody waits: a release pushes the resource onto this list, one compare-and-swap on the list's own
// cache line, and the core still counts it as lent. The next locked section appends the list, oldest
// release first, to the core's idle order (absorb): everything on the list was returned after
// everything already idle, so the order the core lends in stays exact (FIFO, or LIFO when a take
// absorbs first). A take absorbs only when the core has nothing idle left; any other locked section
// absorbs at once, so stats, housekeeping and close see exact counts.
//
// Halving the lock holds per lease is the point: with more threads than cores, a thread preempted
// while it holds the lock stalls every other one, and a release can no longer be one of them.
//
// Open or closed lives in the head word itself: closed_mark() is a value no node has. The list is open
// exactly while the core is uncontended, and only a thread holding the pool's lock opens or closes it
// (the guard's unlock, driver_state::unlock_returns). Closing exchanges the head with that mark, which
// takes every resource pushed so far back into the core in the same atomic step; a push is a
// compare-and-swap that fails on it. So a push either lands before the close, and the closer
// hands the resource to the core, or fails, and the releaser does. Once its push succeeded, a
// releaser never touches the pool again: another thread may absorb the resource, close the pool and
// free it the next moment.
struct return_list {
    alignas(64) std::atomic<resource_node*> head{closed_mark()};
    char pad_[64 - sizeof(std::atomic<resource_node*>)]{};

    // Pushes n unless the list is closed (false: n is still the caller's).
    [[nodiscard]] bool push(resource_node* n) noexcept {
        resource_node* h = head.load(std::memory_order_relaxed);
        do {
            if (h == closed_mark()) return false;
            n->next_returned = h;
        } while (!head.compare_exchange_weak(h, n, std::memory_order_release, std::memory_order_relaxed));
        return true;
    }
    // Lock held, as everything below: whether the list is open (only lock holders change that).
    [[nodiscard]] bool is_open() const noexcept {
        return head.load(std::memory_order_relaxed) != closed_mark();
    }
    // The list while open (empties it) or when closing (closes it), its resources linked oldest release
    // first; nullptr when it held none.
    [[nodiscard]] resource_node* take_all() noexcept {
        return oldest_first(head.exchange(nullptr, std::memory_order_acquire));
    }
    [[nodiscard]] resource_node* close() noexcept {
        resource_node* h = head.exchange(closed_mark(), std::memory_order_acquire);
        return h == closed_mark() ? nullptr : oldest_first(h);  // closing a closed list takes nothing
    }
    void open() noexcept { head.store(nullptr, std::memory_order_relaxed); }

private:
    static resource_node* oldest_first(resource_node* n) noexcept {
        resource_node* out = nullptr;
        while (n) {
            resource_node* next = n->next_returned;
            n->next_returned = out;
            out = n;
            n = next;
        }
        return out;
    }
};

}  // namespace respool::detail
