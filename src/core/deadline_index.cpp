#include "deadline_index.hpp"

#include <cassert>
#include <sstream>

namespace respool::core {

void deadline_index::push(waiter& w) {
    assert(!contains(w));
    std::int64_t key = 0;
    const bool by_span = key_of(w, key);
    table_entry* const set = &table_[set_of(key, by_span)];
    table_entry* victim = nullptr;  // a free way, else the one with the fewest hits
    for (std::size_t i = 0; i < ways; ++i) {
        table_entry& e = set[i];
        if (e.lane == none) {
            if (!victim || victim->lane != none) victim = &e;
            continue;
        }
        if (e.key == key && e.by_span == by_span) {
            if (insert_into(e.lane, w)) {
                if (e.hits != 0xffff) ++e.hits;
                return;
            }
            // Its place is far back in the lane (a re-park): a lane of its own; the table keeps naming
            // the long lane, where newcomers with this key belong.
            open_lane(w, key, by_span, nullptr);
            return;
        }
        if (!victim || (victim->lane != none && e.hits < victim->hits)) victim = &e;
    }
    if (victim->lane != none && victim->hits != 0) {
        open_lane(w, key, by_span, nullptr);  // this waiter's lane goes unnamed
        --victim->hits;  // worn down, not replaced (once the lane exists: a throw changes nothing)
        return;
    }
    open_lane(w, key, by_span, victim);  // the newcomers with this key go to the new lane from now on
}

// Links w into lane l after the last waiter that precedes it, looking back from the tail at most
// walk_limit waiters; false (nothing changed) when its place is further back.
bool deadline_index::insert_into(std::uint32_t l, waiter& w) noexcept {
    lane& ln = lanes_[l];
    waiter* after = ln.tail;
    for (int steps = 0; after && earlier(w, *after); after = after->dprev)
        if (++steps > walk_limit) return false;
    w.dprev = after;
    w.dnext = after ? after->dnext : ln.head;
    if (w.dnext)
        w.dnext->dprev = &w;
    else
        ln.tail = &w;
    if (after)
        after->dnext = &w;
    else
        ln.head = &w;
    w.lane = l;
    ++size_;
    if (!after) {  // a new head, earlier than the old one: its slot moves up
        const std::size_t i = ln.slot;
        heads_[i] = slot_of(l, w);
        sift_up(i);
    }
    return true;
}

// A lane holding only w, from the free list; entry (a table slot) names it when given.
void deadline_index::open_lane(waiter& w, std::int64_t key, bool by_span, table_entry* entry) {
    // The two steps that may throw come first. A lane made here waits on the free list if the heap's
    // growth then throws: nothing visible changed.
    if (free_ == none) {
        assert(lanes_.size() < none);
        lanes_.push_back(lane{});
        free_ = static_cast<std::uint32_t>(lanes_.size() - 1);
    }
    const std::uint32_t l = free_;
    heads_.push_back(slot_of(l, w));
    lane& ln = lanes_[l];
    free_ = ln.slot;
    ln.head = ln.tail = &w;
    ln.key = key;
    ln.by_span = by_span;
    ln.slot = static_cast<std::uint32_t>(heads_.size() - 1);
    w.dprev = w.dnext = nullptr;
    w.lane = l;
    ++size_;
    if (entry) *entry = table_entry{key, l, 0, by_span};  // a replaced lane lives on, unnamed
    sift_up(heads_.size() - 1);
}

void deadline_index::erase(waiter& w) noexcept {
    if (!contains(w)) return;
    const std::uint32_t l = w.lane;
    assert(l < lanes_.size() && holds(w));
    lane& ln = lanes_[l];
    const bool was_head = w.dprev == nullptr;
    if (w.dprev)
        w.dprev->dnext = w.dnext;
    else
        ln.head = w.dnext;
    if (w.dnext)
        w.dnext->dprev = w.dprev;
    else
        ln.tail = w.dprev;
    w.dprev = w.dnext = nullptr;
    w.lane = waiter::no_lane;
    --size_;
    if (!ln.head) {
        close_lane(l);
    } else if (was_head) {  // the next waiter heads the lane: a later key, its slot moves down
        const std::size_t i = ln.slot;
        heads_[i] = slot_of(l, *ln.head);
        sift_down(i);
    }
}

// An emptied lane leaves the heap, the table (when the table still names it) and goes to the free list.
void deadline_index::close_lane(std::uint32_t l) noexcept {
    lane& ln = lanes_[l];
    const std::size_t i = ln.slot;
    table_entry* const set = &table_[set_of(ln.key, ln.by_span)];
    for (std::size_t k = 0; k < ways; ++k)
        if (set[k].lane == l) set[k] = table_entry{};
    ln.head = ln.tail = nullptr;
    ln.slot = free_;
    free_ = l;
    const head_slot last = heads_.back();
    heads_.pop_back();
    if (i == heads_.size()) return;  // it was the last slot: nothing moves
    // The last lane fills the hole; it may belong above the hole (it came from another subtree) or
    // below it.
    place(i, last);
    if (i > 0 && before(last, heads_[(i - 1) / arity]))
        sift_up(i);
    else
        sift_down(i);
}

// Moves the lane in slot i up past every parent it precedes (a hole moves down instead of swaps).
void deadline_index::sift_up(std::size_t i) noexcept {
    const head_slot s = heads_[i];
    while (i > 0) {
        const std::size_t parent = (i - 1) / arity;
        if (!before(s, heads_[parent])) break;
        place(i, heads_[parent]);
        i = parent;
    }
    place(i, s);
}

// Moves the lane in slot i down below every child that precedes it, swapping with the earliest child.
void deadline_index::sift_down(std::size_t i) noexcept {
    const head_slot s = heads_[i];
    const std::size_t n = heads_.size();
    for (;;) {
        const std::size_t first = arity * i + 1;
        if (first >= n) break;
        const std::size_t end = first + arity < n ? first + arity : n;
        std::size_t best = first;
        for (std::size_t c = first + 1; c < end; ++c)
            if (before(heads_[c], heads_[best])) best = c;
        if (!before(heads_[best], s)) break;
        place(i, heads_[best]);
        i = best;
    }
    place(i, s);
}

bool deadline_index::holds(const waiter& w) const noexcept {
    if (!contains(w) || w.lane >= lanes_.size()) return false;
    const lane& ln = lanes_[w.lane];
    return ln.head != nullptr && (w.dprev ? w.dprev->dnext == &w : ln.head == &w) &&
           (w.dnext ? w.dnext->dprev == &w : ln.tail == &w);
}

std::string deadline_index::check() const {
    std::ostringstream e;
    std::size_t waiters = 0;
    for (std::size_t i = 0; i < heads_.size(); ++i) {
        const head_slot& s = heads_[i];
        if (s.lane >= lanes_.size()) {
            e << "deadline heap slot " << i << " names no lane; ";
            continue;
        }
        const lane& ln = lanes_[s.lane];
        if (ln.slot != i) e << "lane " << s.lane << " has a stale heap slot; ";
        if (!ln.head) {
            e << "empty lane " << s.lane << " in the heap; ";
            continue;
        }
        if (s.key() != slot_of(s.lane, *ln.head).key())
            e << "deadline heap slot " << i << " has stale keys; ";
        if (i > 0 && before(s, heads_[(i - 1) / arity])) e << "deadline heap out of order at " << i << "; ";
        const waiter* prev = nullptr;
        for (const waiter* w = ln.head; w; prev = w, w = w->dnext) {
            ++waiters;
            if (w->lane != s.lane) e << "waiter in lane " << s.lane << " records lane " << w->lane << "; ";
            if (w->dprev != prev) e << "lane " << s.lane << " has a broken back link; ";
            if (prev && !earlier(*prev, *w)) e << "lane " << s.lane << " out of (deadline, arrival) order; ";
            std::int64_t key = 0;
            const bool by_span = key_of(*w, key);
            if (key != ln.key || by_span != ln.by_span)
                e << "waiter in lane " << s.lane << " has another key; ";
            if (waiters > size_) break;  // a cycle
        }
        if (ln.tail != prev) e << "lane " << s.lane << " has a stale tail; ";
    }
    if (waiters != size_) e << "lanes hold " << waiters << " waiters, size says " << size_ << "; ";
    std::size_t free = 0;
    for (std::uint32_t l = free_; l != none && free <= lanes_.size(); l = lanes_[l].slot, ++free)
        if (l >= lanes_.size() || lanes_[l].head) {
            e << "free list holds a live or unknown lane; ";
            break;
        }
    if (free + heads_.size() != lanes_.size())
        e << free << " free + " << heads_.size() << " live lanes != " << lanes_.size() << " made; ";
    for (std::size_t t = 0; t < table_.size(); ++t) {
        const table_entry& te = table_[t];
        if (te.lane == none) continue;
        if (te.lane >= lanes_.size() || !lanes_[te.lane].head)
            e << "lane table entry " << t << " names a free lane; ";
        else if (lanes_[te.lane].key != te.key || lanes_[te.lane].by_span != te.by_span)
            e << "lane table entry " << t << " names a lane of another key; ";
        else if (set_of(te.key, te.by_span) != t - t % ways)
            e << "lane table entry " << t << " in the wrong set; ";
        for (std::size_t k = t - t % ways; k < t; ++k)
            if (table_[k].lane == te.lane) e << "lane table names lane " << te.lane << " twice; ";
    }
    return e.str();
}

}  // namespace respool::core
