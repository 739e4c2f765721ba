#include "deadline_heap.hpp"

#include <cassert>
#include <sstream>

namespace respool::core {

void deadline_heap::push(waiter& w) {
    assert(!contains(w));
    assert(v_.size() < waiter::not_in_heap);
    v_.push_back(&w);  // the only step that may throw
    sift_up(v_.size() - 1);
}

void deadline_heap::erase(waiter& w) noexcept {
    if (!contains(w)) return;
    const std::size_t i = w.heap_index;
    assert(i < v_.size() && v_[i] == &w);
    w.heap_index = waiter::not_in_heap;
    waiter* last = v_.back();
    v_.pop_back();
    if (i == v_.size()) return;  // w was the last slot: nothing moves
    // The last waiter fills the hole; it may belong above the hole (it came from another subtree) or
    // below it.
    place(i, last);
    if (i > 0 && earlier(*last, *v_[(i - 1) / 2])) sift_up(i);
    else sift_down(i);
}

// Moves the waiter in slot i up past every parent it precedes (a hole moves down instead of swaps).
void deadline_heap::sift_up(std::size_t i) noexcept {
    waiter* w = v_[i];
    while (i > 0) {
        const std::size_t parent = (i - 1) / 2;
        if (!earlier(*w, *v_[parent])) break;
        place(i, v_[parent]);
        i = parent;
    }
    place(i, w);
}

void deadline_heap::sift_down(std::size_t i) noexcept {
    waiter* w = v_[i];
    const std::size_t n = v_.size();
    for (;;) {
        std::size_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && earlier(*v_[child + 1], *v_[child])) ++child;
        if (!earlier(*v_[child], *w)) break;
        place(i, v_[child]);
        i = child;
    }
    place(i, w);
}

std::string deadline_heap::check() const {
    std::ostringstream e;
    for (std::size_t i = 0; i < v_.size(); ++i) {
        if (v_[i]->heap_index != i) e << "deadline heap slot " << i << " has a stale index; ";
        if (i > 0 && earlier(*v_[i], *v_[(i - 1) / 2])) e << "deadline heap out of order at " << i << "; ";
    }
    return e.str();
}

}  // namespace respool::core
