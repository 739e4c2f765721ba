// The deadlines of pending waiters, earliest first: FIFO lanes of waiters that share a timeout, and a
// min-heap (4 children per node) of the lanes' heads.
//
// Why lanes: most waiters of a pool share one timeout (the pool's acquire_timeout), so their deadlines
// are nondecreasing in arrival order and a plain FIFO per timeout value is sorted by construction.
// Appending to it and taking its head are O(1), and the heap above only sees a change when a lane's
// head changes, which with one shared timeout is a heap of one. A heap of every waiter cost a sift through
// ~8 cache-missing levels per hand-off with 100,000 waiters, for a queue that was already in order.
// Why a heap of heads: per-request deadlines are all different, so lanes alone degrade to
// one lane per waiter and a scan of the lanes per look at the earliest deadline. With the heads in a
// heap any mix costs O(log lanes) per change, and distinct timeouts cost what a heap of waiters did.
// Why lanes are found through a small set-associative table: a lane is looked up by its key (the
// relative timeout, or the absolute deadline when there is none) in O(1), reading one cache line,
// without a map that grows with the number of distinct timeouts. The table names at most `ways` lanes
// per set; a key it does not name opens a new lane (lanes with equal keys may coexist, each still
// sorted), so many distinct timeouts behave like the heap of waiters, never worse. Each entry counts
// the pushes that found it: a newcomer takes a way only from an entry at zero and otherwise wears one
// down, so a stream of one-off timeouts cannot push the pool's shared timeout out of the table (which
// would split it over many lanes) while a timeout that stops being used makes room again.
// Why a bounded walk: a waiter that re-parks after a rejection keeps its old deadline and arrival
// order, so it belongs somewhere before the lane's tail. It walks back at most walk_limit waiters;
// further back it opens a lane of its own, which keeps every push O(log lanes) whatever the history.
// Why the keys are copied into the heap's slots: a sift reads one contiguous array, not the waiters
// (scattered over the callers' memory). Lanes live in one array and are recycled through a free list,
// so once the arrays have grown to the most lanes ever live, nothing allocates.
// Ties go to the older waiter (lower seq): waiters that share a deadline time out in arrival order.
#pragma once

#include "nodes.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace respool::core {

class deadline_index {
public:
    // How far back from a lane's tail a push looks for its place before it opens a lane of its own.
    static constexpr int walk_limit = 8;

    // Adds w, ordered by (w.deadline, w.seq), which must not change while w is indexed; w.span (zero:
    // none) picks its lane. Only the storage may grow (and throw); on a throw nothing changed.
    void push(waiter& w);
    // Removes w from wherever it sits; a no-op when w is not indexed.
    void erase(waiter& w) noexcept;

    // The waiter with the earliest deadline, or nullptr.
    [[nodiscard]] waiter* top() const noexcept {
        return heads_.empty() ? nullptr : lanes_[heads_[0].lane].head;
    }
    // Its deadline, read from the heap's own copy (no visit to the waiter's memory).
    [[nodiscard]] std::optional<time_point> earliest() const noexcept {
        if (heads_.empty()) return std::nullopt;
        return heads_.front().deadline();
    }
    // The earliest waiter when its deadline is <= now (due), else nullptr. Erasing it (or failing it,
    // which erases it) and asking again walks the due waiters in deadline order.
    [[nodiscard]] waiter* due(time_point now) const noexcept {
        return !heads_.empty() && heads_.front().deadline() <= now ? top() : nullptr;
    }
    [[nodiscard]] static bool contains(const waiter& w) noexcept { return w.lane != waiter::no_lane; }
    // w is linked where its lane index says (O(1)); for audits.
    [[nodiscard]] bool holds(const waiter& w) const noexcept;
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    // Lanes holding waiters now, and lanes ever made (live + free): for tests of sharing and reuse.
    [[nodiscard]] std::size_t lanes() const noexcept { return heads_.size(); }
    [[nodiscard]] std::size_t lanes_made() const noexcept { return lanes_.size(); }

    // "" when everything is consistent (heap order, back-indexes, copied keys, lane order and links,
    // the free list, the table), else what is wrong. O(waiters + lanes).
    [[nodiscard]] std::string check() const;

private:
    static constexpr std::uint32_t none = 0xffffffffu;

    struct lane {
        waiter* head = nullptr;  // earliest (deadline, seq); nullptr while on the free list
        waiter* tail = nullptr;
        std::int64_t key = 0;       // the span's or the absolute deadline's ticks
        std::uint32_t slot = none;  // its slot in heads_; the next free lane while on the free list
        bool by_span = false;       // key is a span (else an absolute deadline)
    };

    // (head deadline, head seq) as one 128-bit unsigned number, stored as two 64-bit halves: one
    // branch-free comparison orders two slots. The deadline's sign bit is flipped so that unsigned
    // order is time order (time_point::max() last).
    __extension__ using key_type = unsigned __int128;
    static constexpr std::uint64_t sign = std::uint64_t{1} << 63;
    struct head_slot {
        std::uint64_t hi;  // deadline ticks ^ sign
        std::uint64_t lo;  // seq
        std::uint32_t lane;
        [[nodiscard]] key_type key() const noexcept { return (key_type{hi} << 64) | lo; }
        [[nodiscard]] time_point deadline() const noexcept {
            return time_point(duration(static_cast<duration::rep>(hi ^ sign)));
        }
    };
    static head_slot slot_of(std::uint32_t l, const waiter& w) noexcept {
        return {static_cast<std::uint64_t>(w.deadline.time_since_epoch().count()) ^ sign, w.seq, l};
    }
    static constexpr std::size_t arity = 4;

    // 32 sets of 4 entries, a set on one cache line: more timeouts in use at once than a pool has.
    struct table_entry {
        std::int64_t key = 0;
        std::uint32_t lane = none;  // none: a free way
        std::uint16_t hits = 0;     // pushes that found the lane here (saturating)
        bool by_span = false;
    };
    static constexpr std::size_t ways = 4;
    static constexpr unsigned set_bits = 5;
    static std::size_t set_of(std::int64_t key, bool by_span) noexcept {
        const std::uint64_t h =
            (static_cast<std::uint64_t>(key) ^ (by_span ? 0 : sign)) * 0x9e3779b97f4a7c15u;
        return static_cast<std::size_t>(h >> (64 - set_bits)) * ways;
    }
    static bool key_of(const waiter& w, std::int64_t& key) noexcept {
        const bool by_span = w.span > duration::zero();
        key = by_span ? w.span.count() : w.deadline.time_since_epoch().count();
        return by_span;
    }

    static bool earlier(const waiter& a, const waiter& b) noexcept {
        return a.deadline < b.deadline || (a.deadline == b.deadline && a.seq < b.seq);
    }
    bool insert_into(std::uint32_t l, waiter& w) noexcept;
    void open_lane(waiter& w, std::int64_t key, bool by_span, table_entry* entry);
    void close_lane(std::uint32_t l) noexcept;

    static bool before(const head_slot& a, const head_slot& b) noexcept { return a.key() < b.key(); }
    void place(std::size_t i, const head_slot& s) noexcept {
        heads_[i] = s;
        lanes_[s.lane].slot = static_cast<std::uint32_t>(i);
    }
    void sift_up(std::size_t i) noexcept;
    void sift_down(std::size_t i) noexcept;

    std::vector<head_slot> heads_;  // one per live lane, heap order
    std::vector<lane> lanes_;       // live and free; indexes are stable (waiters and slots hold them)
    std::uint32_t free_ = none;     // free list through lane::slot
    std::size_t size_ = 0;          // waiters
    alignas(64) std::array<table_entry, (std::size_t{1} << set_bits) * ways> table_{};
};

}  // namespace respool::core
