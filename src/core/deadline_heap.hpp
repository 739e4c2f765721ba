// The deadlines of pending waiters, earliest first: an intrusive min-heap (4 children per node).
//
// Why a heap: per-request deadlines are all different (SPEC §1.3), so any structure keyed by the
// timeout value (one sorted list per distinct timeout) degrades to one list per waiter and makes every
// park and every look at the earliest deadline O(waiters). A heap costs O(log n) per insert and per
// removal whatever the mix of values, and the earliest deadline, which the driver's single timer asks
// for after every change, is O(1).
// Why intrusive: each waiter stores its slot (waiter::heap_index), so removing a waiter that is woken,
// cancelled or failed needs no search. Ties go to the older waiter (lower seq): waiters that share one
// timeout time out in arrival order.
// Why the keys are copied into the slots and 4 children: comparisons then read only the contiguous slot
// array, never the waiters (scattered over the callers' memory), and the heap has half the levels of a
// binary one, so a sift writes half as many waiters' indexes. With 100,000 waiters that is what a sift
// costs: cache misses, not comparisons.
#pragma once

#include "nodes.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace respool::core {

class deadline_heap {
public:
    // Adds w, ordered by (w.deadline, w.seq), which must not change while w is in the heap. Only the
    // storage may grow (and throw); on a throw nothing changed.
    void push(waiter& w);
    // Removes w from wherever it sits; a no-op when w is not in the heap.
    void erase(waiter& w) noexcept;

    // The waiter with the earliest deadline, or nullptr.
    [[nodiscard]] waiter* top() const noexcept { return v_.empty() ? nullptr : v_.front().w; }
    // Its deadline, read from the heap's own copy (no visit to the waiter's memory).
    [[nodiscard]] std::optional<time_point> earliest() const noexcept {
        if (v_.empty()) return std::nullopt;
        return v_.front().deadline();
    }
    // The earliest waiter when its deadline is <= now (due), else nullptr. Erasing it (or failing it,
    // which erases it) and asking again walks the due waiters in deadline order.
    [[nodiscard]] waiter* due(time_point now) const noexcept {
        return !v_.empty() && v_.front().deadline() <= now ? v_.front().w : nullptr;
    }
    [[nodiscard]] static bool contains(const waiter& w) noexcept {
        return w.heap_index != waiter::not_in_heap;
    }
    [[nodiscard]] std::size_t size() const noexcept { return v_.size(); }
    [[nodiscard]] bool empty() const noexcept { return v_.empty(); }
    // The waiter in slot i (0 = top); the rest are in heap order, not sorted. For audits and tests.
    [[nodiscard]] waiter* at(std::size_t i) const noexcept { return v_[i].w; }

    // "" when every slot is consistent (heap order, back-indexes), else what is wrong.
    [[nodiscard]] std::string check() const;

private:
    // (deadline, seq) as one 128-bit unsigned number, stored as two 64-bit halves (a slot stays 24
    // bytes): one branch-free comparison orders two slots. The deadline's sign bit is flipped so that
    // unsigned order is time order.
    __extension__ using key_type = unsigned __int128;
    static constexpr std::uint64_t sign = std::uint64_t{1} << 63;
    struct slot {
        std::uint64_t hi;  // deadline ticks ^ sign
        std::uint64_t lo;  // seq
        waiter* w;
        [[nodiscard]] key_type key() const noexcept { return (key_type{hi} << 64) | lo; }
        [[nodiscard]] time_point deadline() const noexcept {
            return time_point(duration(static_cast<duration::rep>(hi ^ sign)));
        }
    };
    static slot slot_of(waiter& w) noexcept {
        return {static_cast<std::uint64_t>(w.deadline.time_since_epoch().count()) ^ sign, w.seq, &w};
    }
    static constexpr std::size_t arity = 4;

    static bool earlier(const slot& a, const slot& b) noexcept { return a.key() < b.key(); }
    void place(std::size_t i, const slot& s) noexcept {
        v_[i] = s;
        s.w->heap_index = static_cast<std::uint32_t>(i);
    }
    void sift_up(std::size_t i) noexcept;
    void sift_down(std::size_t i) noexcept;

    std::vector<slot> v_;
};

}  // namespace respool::core
