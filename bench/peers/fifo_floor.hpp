// The ceiling of any pool that keeps one FIFO order of idle resources shared by several threads: the
// bare order itself, with nothing else a pool does (no waiters, no counts, no checks). A lock-free
// bounded ring (each slot carries a sequence number; takers and returners claim a position with one
// compare-and-swap on the head or the tail) and the same ring under a lock (std::mutex, or respool's
// own pool lock). A take and a return on any shared FIFO move the head's and the tail's cache lines
// between the cores that use them, whatever the synchronisation: bench/compare measures these floors
// beside the pools to show where that cost, not the pool's bookkeeping, sets the pace. Written for the
// comparison only.
//
// The lock-free ring's push can find its slot still held by a take of a lap ago that has claimed it
// and not yet marked it free (a take between its compare-and-swap and its store): the ring is not
// full then, and the push is tried again. A floor that dropped the resource there instead would end
// up cycling one resource among all threads and measure nothing of a pool.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

namespace bench {

// Lock-free bounded multi-producer multi-consumer FIFO of pointers; capacity a power of two.
template <class T>
class lockfree_fifo {
public:
    explicit lockfree_fifo(std::size_t at_least) {
        std::size_t cap = 1;
        while (cap < at_least) cap <<= 1;
        mask_ = cap - 1;
        slots_ = std::make_unique<slot[]>(cap);
        for (std::size_t i = 0; i < cap; ++i) slots_[i].seq.store(i, std::memory_order_relaxed);
    }
    // false when the slot at the tail is not free yet (full, or a take of a lap ago still finishing).
    bool push(T* v) noexcept {
        std::size_t pos = tail_.load(std::memory_order_relaxed);
        for (;;) {
            slot& s = slots_[pos & mask_];
            const std::size_t seq = s.seq.load(std::memory_order_acquire);
            const auto lag = static_cast<std::ptrdiff_t>(seq - pos);
            if (lag == 0) {  // free for this position: claim it
                if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
                    s.value = v;
                    s.seq.store(pos + 1, std::memory_order_release);
                    return true;
                }
            } else if (lag < 0) {
                return false;  // full
            } else {
                pos = tail_.load(std::memory_order_relaxed);
            }
        }
    }
    T* pop() noexcept {
        std::size_t pos = head_.load(std::memory_order_relaxed);
        for (;;) {
            slot& s = slots_[pos & mask_];
            const std::size_t seq = s.seq.load(std::memory_order_acquire);
            const auto lag = static_cast<std::ptrdiff_t>(seq - (pos + 1));
            if (lag == 0) {  // filled for this position: claim it
                if (head_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
                    T* v = s.value;
                    s.seq.store(pos + mask_ + 1, std::memory_order_release);
                    return v;
                }
            } else if (lag < 0) {
                return nullptr;  // empty
            } else {
                pos = head_.load(std::memory_order_relaxed);
            }
        }
    }

private:
    struct alignas(64) slot {
        std::atomic<std::size_t> seq{0};
        T* value = nullptr;
    };
    std::unique_ptr<slot[]> slots_;
    std::size_t mask_ = 0;
    alignas(64) std::atomic<std::size_t> head_{0};
    alignas(64) std::atomic<std::size_t> tail_{0};
};

// The same order under one lock (a plain ring; capacity a power of two).
template <class T, class Lock = std::mutex>
class locked_fifo {
public:
    explicit locked_fifo(std::size_t at_least) {
        std::size_t cap = 1;
        while (cap < at_least) cap <<= 1;
        mask_ = cap - 1;
        ring_ = std::make_unique<T*[]>(cap);
    }
    void push(T* v) {
        std::lock_guard g(m_);
        ring_[tail_++ & mask_] = v;
    }
    T* pop() {
        std::lock_guard g(m_);
        return head_ == tail_ ? nullptr : ring_[head_++ & mask_];
    }

private:
    // The lock on a line of its own and the ring's fields on another, as the pool keeps its lock and
    // its core apart.
    alignas(64) Lock m_;
    alignas(64) std::unique_ptr<T*[]> ring_;
    std::size_t mask_ = 0, head_ = 0, tail_ = 0;
};

}  // namespace bench
