// The thread-affinity cache (pool_options::thread_affinity); docs/03-design.md has the race argument.
#pragma once

#include "asio/pool_impl.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>

namespace respool::detail {

// pool_options::thread_affinity. Each thread owns one slot (by a process-wide thread number), which
// holds at most one idle resource that the core still counts as active. A take is a compare-and-swap
// on the thread's own cache line, and so is a release: no lock and no shared write while `open`.
// `open` mirrors core.uncontended() and only changes under the pool's lock. Closing it stores `open`,
// then exchanges every slot in use with closed_mark() (a value no node has), taking what each holds back
// into the core; opening puts them back to empty. A releaser numbers its thread, reads `open`, then
// compare-and-swaps its resource into an empty slot (all sequentially consistent): when it read
// `open` true, the closer's later look at the thread count covers its slot, so its swap either lands
// before the closer's exchange (the closer hands the resource to the core) or finds it closed and
// fails (the releaser goes to the lock). A release whose swap succeeded is over: it never reads the
// pool again, which another thread may close and free the next moment. A take that raced with a
// closer re-reads `open` and gives the resource to the core (no barging); a taker is calling through
// the pool object, which is alive.
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
        std::uint64_t& index = number();
        if (index == unnumbered) index = threads_.fetch_add(1, std::memory_order_seq_cst);
        return static_cast<unsigned>(index % size);
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
        const std::uint64_t n = threads_.load(std::memory_order_seq_cst);
        return n < size ? static_cast<unsigned>(n) : size;
    }

private:
    // 64 bits: a count that wrapped would make used() small again, and a close would then skip slots
    // that still hold resources.
    static constexpr std::uint64_t unnumbered = ~std::uint64_t{0};
    static std::uint64_t& number() noexcept {  // process-wide thread number, set by the first self()
        thread_local std::uint64_t n = unnumbered;
        return n;
    }
    static inline std::atomic<std::uint64_t> threads_{0};
};

}  // namespace respool::detail
