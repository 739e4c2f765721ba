#include "request_queue.hpp"

#include "deadline.hpp"

#include <sstream>

namespace respool::core {

status request_queue::push(waiter& w, time_point deadline, duration span) {
    if (max_ != 0 && size_ >= max_) return status::exhausted;
    w.deadline = deadline;
    w.span = span > duration::zero() ? span : duration::zero();
    w.has_deadline = true;
    w.seq = ++seq_;
    deadlines_.push(w);  // first: it may throw, and then nothing changed
    fifo_.push_back(w);
    w.state = waiter_state::parked;
    w.result = status::ok;
    ++size_;
    return status::ok;
}

status request_queue::push_for(waiter& w, time_point now, duration timeout) {
    return push(w, deadline_after(now, timeout), timeout);
}

status request_queue::push_unbounded(waiter& w) {
    if (max_ != 0 && size_ >= max_) return status::exhausted;
    w.has_deadline = false;
    w.seq = ++seq_;
    fifo_.push_back(w);
    w.state = waiter_state::parked;
    w.result = status::ok;
    ++size_;
    return status::ok;
}

void request_queue::requeue(waiter& w) {
    if (w.has_deadline)
        deadlines_.push(w);  // keeps (deadline, seq): its place in its lane, or a lane of its own
    fifo_.insert_by_seq(w);
    w.state = waiter_state::parked;
    ++size_;
}

void request_queue::leave(waiter& w) noexcept {
    fifo_.remove(w);
    deadlines_.erase(w);  // a no-op without a deadline
    w.state = waiter_state::none;
    --size_;
}

bool request_queue::cancel(waiter& w) noexcept {
    if (!queued(w)) return false;
    leave(w);
    w.result = status::cancelled;
    return true;
}

std::size_t request_queue::take(std::size_t n, std::vector<waiter*>& out) {
    std::size_t taken = 0;
    for (; taken < n && fifo_.head; ++taken) {
        waiter& w = *fifo_.head;
        out.push_back(&w);  // first: it may throw, and then w is still queued
        leave(w);
    }
    return taken;
}

void request_queue::expire(time_point now, effects& fx) {
    while (waiter* w = deadlines_.due(now)) {
        leave(*w);
        w->result = status::exhausted;
        fx.push(effect::fail_wake(w, status::exhausted));
    }
}

void request_queue::fail_all(status st, effects& fx) {
    while (waiter* w = fifo_.head) {
        leave(*w);
        w->result = st;
        fx.push(effect::fail_wake(w, st));
    }
}

std::string request_queue::check() const {
    std::ostringstream e;
    std::size_t n = 0, timed = 0;
    const waiter* prev = nullptr;
    for (const waiter* w = fifo_.head; w; prev = w, w = w->next) {
        if (++n > size_) {
            e << "the FIFO holds more than size says (or a cycle); ";
            break;
        }
        if (w->prev != prev) e << "broken back link in the FIFO; ";
        if (prev && prev->seq >= w->seq) e << "FIFO out of arrival order; ";
        if (w->state != waiter_state::parked) e << "a queued request is not parked; ";
        if (w->has_deadline) {
            ++timed;
            if (!deadlines_.holds(*w)) e << "a queued request with a deadline is not indexed; ";
        } else if (deadline_index::contains(*w)) {
            e << "a request without a deadline is indexed; ";
        }
    }
    if (fifo_.tail != prev) e << "stale FIFO tail; ";
    if (n != size_) e << "FIFO holds " << n << ", size says " << size_ << "; ";
    if (timed != deadlines_.size())
        e << timed << " timed requests, the index holds " << deadlines_.size() << "; ";
    e << deadlines_.check();
    return e.str();
}

}  // namespace respool::core
