// The core's waiter queues (parked FIFO, woken-with-a-reservation): doubly linked through
// waiter::prev/next. The nodes live in the callers' operation states, so linking and unlinking never
// allocate, and removing a cancelled or timed-out waiter from the middle is O(1).
#pragma once

#include "nodes.hpp"

namespace respool::core {

struct waiter_list {
    waiter* head = nullptr;
    waiter* tail = nullptr;

    void push_back(waiter& w) noexcept {
        w.prev = tail;
        w.next = nullptr;
        if (tail)
            tail->next = &w;
        else
            head = &w;
        tail = &w;
    }

    void remove(waiter& w) noexcept {
        if (w.prev)
            w.prev->next = w.next;
        else
            head = w.next;
        if (w.next)
            w.next->prev = w.prev;
        else
            tail = w.prev;
        w.prev = w.next = nullptr;
    }

    // Before the first waiter that arrived later (higher seq): a re-parked waiter keeps its arrival
    // position. Re-parked waiters are older than almost everyone queued, so the scan from the head is
    // short.
    void insert_by_seq(waiter& w) noexcept {
        waiter* at = head;
        while (at && at->seq < w.seq) at = at->next;
        if (!at) {
            push_back(w);
            return;
        }
        w.next = at;
        w.prev = at->prev;
        if (at->prev)
            at->prev->next = &w;
        else
            head = &w;
        at->prev = &w;
    }
};

}  // namespace respool::core
