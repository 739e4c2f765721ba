// The thread-affinity cache (pool_options::thread_affinity); docs/03-design.md has the race argument.
#pragma once

#include "asio/pool_impl.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>

namespace respool::detail {

// pool_options::thread_affinity. Each thread owns one slot (by a process-wide thread number), which
// holds at most one idle resource that the core still counts as active. A take is an exchange on the
// thread's own cache line, a release a compare-and-swap: no lock and no shared write while `open`.
// `open` mirrors core.uncontended() and only changes under the pool's lock; closing it drains every
// slot into the core. The race between a releaser filling its slot and a waiter parking is settled
// Dekker-style: the releaser stores, then re-reads `open`; the closer stores `open`, then scans the
// slots (all sequentially consistent), so at least one of them sees the other, and the exchange
// decides which one returns the resource to the core.
struct affinity_cache {
    static constexpr unsigned size = 64;
    struct alignas(64) slot {
        std::atomic<resource_node*> node{nullptr};
        std::atomic<std::uint64_t> takes{0};  // leases lent from the cache by the slot's first thread
    };
    alignas(64) std::atomic<bool> open{false};
    std::atomic<std::chrono::steady_clock::rep> coarse_now{
        0};  // with max_lifetime: the last housekeeping time
    slot slots[size];
    alignas(64) std::atomic<std::uint64_t> shared_takes{0};  // takes by threads numbered size and up

    // This thread's slot. The first call numbers the thread (a seq_cst increment, so a closer that
    // reads used() after closing `open` covers every slot a thread could have filled).
    static unsigned self() noexcept {
        unsigned& index = number();
        if (index == ~0u) index = threads_.fetch_add(1, std::memory_order_seq_cst);
        return index % size;
    }
    // Counts a take made by this thread: the first `size` threads are the only writers of their slot's
    // counter, so a plain load and store (no locked instruction) is exact; later threads share slots
    // and add to one shared counter instead.
    void count_take(unsigned me) noexcept {
        if (number() < size) {
            auto& t = slots[me].takes;
            t.store(t.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        } else {
            shared_takes.fetch_add(1, std::memory_order_relaxed);
        }
    }
    [[nodiscard]] std::uint64_t takes() const noexcept {
        std::uint64_t n = shared_takes.load(std::memory_order_relaxed);
        for (const auto& sl : slots) n += sl.takes.load(std::memory_order_relaxed);
        return n;
    }
    // Slots in use: the scan bound of drains and steals.
    static unsigned used() noexcept {
        const unsigned n = threads_.load(std::memory_order_seq_cst);
        return n < size ? n : size;
    }

private:
    static unsigned& number() noexcept {  // process-wide thread number, ~0u until the first self()
        thread_local unsigned n = ~0u;
        return n;
    }
    static inline std::atomic<unsigned> threads_{0};
};

}  // namespace respool::detail
