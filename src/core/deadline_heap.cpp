#include "deadline_heap.hpp"

#include <cassert>
#include <sstream>

namespace respool::core {

void deadline_heap::push(waiter& w) {
    assert(!contains(w));
    assert(v_.size() < waiter::not_in_heap);
    v_.push_back(slot_of(w));  // the only step that may throw
    sift_up(v_.size() - 1);
}

void deadline_heap::erase(waiter& w) noexcept {
    if (!contains(w)) return;
    const std::size_t i = w.heap_index;
    assert(i < v_.size() && v_[i].w == &w);
    w.heap_index = waiter::not_in_heap;
    const slot last = v_.back();
    v_.pop_back();
    if (i == v_.size()) return;  // w was the last slot: nothing moves
    // The last waiter fills the hole; it may belong above the hole (it came from another subtree) or
    // below it.
    place(i, last);
    if (i > 0 && earlier(last, v_[(i - 1) / arity])) sift_up(i);
    else sift_down(i);
}

// Moves the waiter in slot i up past every parent it precedes (a hole moves down instead of swaps).
void deadline_heap::sift_up(std::size_t i) noexcept {
    const slot s = v_[i];
    while (i > 0) {
        const std::size_t parent = (i - 1) / arity;
        if (!earlier(s, v_[parent])) break;
        place(i, v_[parent]);
        i = parent;
    }
    place(i, s);
}

// Moves the waiter in slot i down below every child that precedes it, swapping with the earliest child.
void deadline_heap::sift_down(std::size_t i) noexcept {
    const slot s = v_[i];
    const std::size_t n = v_.size();
    for (;;) {
        const std::size_t first = arity * i + 1;
        if (first >= n) break;
        const std::size_t end = first + arity < n ? first + arity : n;
        std::size_t best = first;
        for (std::size_t c = first + 1; c < end; ++c)
            if (earlier(v_[c], v_[best])) best = c;
        if (!earlier(v_[best], s)) break;
        place(i, v_[best]);
        i = best;
    }
    place(i, s);
}

std::string deadline_heap::check() const {
    std::ostringstream e;
    for (std::size_t i = 0; i < v_.size(); ++i) {
        const slot& s = v_[i];
        if (s.w->heap_index != i) e << "deadline heap slot " << i << " has a stale index; ";
        if (s.key() != slot_of(*s.w).key()) e << "deadline heap slot " << i << " has stale keys; ";
        if (i > 0 && earlier(s, v_[(i - 1) / arity])) e << "deadline heap out of order at " << i << "; ";
    }
    return e.str();
}

}  // namespace respool::core
