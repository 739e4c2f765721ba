// A FIFO of requests that wait for something the layer above hands out: a carrier connection with
// room for one more statement, a reader's batch, the writer's commit group, a new primary. Sans-io like
// the rest of the core: it keeps the order, the deadlines and the limit, and says who leaves and why;
// the layer that owns it runs the one timer (at next_deadline()) and completes the requests.
//
// A request is a waiter node embedded in the caller's memory: queueing and leaving never allocate (the
// deadline index may grow its arrays once), and cancelling one from the middle is O(1). Deadlines go
// through the core's deadline_index, so requests that share a timeout share one lane (O(1) each) and
// any mix of timeouts costs O(log lanes).
#pragma once

#include "deadline_index.hpp"
#include "effects.hpp"
#include "intrusive_list.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace respool::core {

class request_queue {
public:
    // max_waiters: at most this many wait at once (0: no limit); a push beyond it is refused.
    explicit request_queue(std::size_t max_waiters = 0) noexcept : max_(max_waiters) {}
    request_queue(const request_queue&) = delete;
    request_queue& operator=(const request_queue&) = delete;

    // Joins the back. `deadline`: when it gives up (expire); `span`: the relative timeout it came from,
    // which picks its deadline lane (zero for a deadline given absolute). status::exhausted (nothing
    // changed) when max_waiters wait already. Only the deadline index's storage may throw, and then
    // nothing changed.
    status push(waiter& w, time_point deadline, duration span);
    // now + timeout (saturated), in the lane of `timeout`.
    status push_for(waiter& w, time_point now, duration timeout);
    // Joins the back with no deadline: it waits until taken, cancelled or failed.
    status push_unbounded(waiter& w);
    // Back in its arrival place, with its own deadline: a request that was taken and then not served
    // (its carrier went away). max_waiters does not apply: it was counted when it arrived.
    void requeue(waiter& w);

    // Leaves the queue wherever it is (O(1)); false when it is not queued (taken, failed, never queued).
    bool cancel(waiter& w) noexcept;
    [[nodiscard]] static bool queued(const waiter& w) noexcept { return w.state == waiter_state::parked; }

    // Up to n requests, oldest first, appended to `out`; they leave the queue. Returns how many.
    std::size_t take(std::size_t n, std::vector<waiter*>& out);
    // Every request whose deadline is <= now leaves, in deadline order (ties: arrival order), each as a
    // fail_wake(w, status::exhausted): it found nothing within its borrow timeout.
    void expire(time_point now, effects& fx);
    // Every request leaves, oldest first, each as a fail_wake(w, st) (close).
    void fail_all(status st, effects& fx);

    // The earliest deadline of a queued request: when the owner's one timer should fire.
    [[nodiscard]] std::optional<time_point> next_deadline() const noexcept { return deadlines_.earliest(); }
    [[nodiscard]] waiter* front() const noexcept { return fifo_.head; }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }

    // "" when the FIFO, the deadline index and the count agree, else what is wrong. O(n).
    [[nodiscard]] std::string check() const;

private:
    void leave(waiter& w) noexcept;

    waiter_list fifo_;  // arrival order (seq ascending)
    deadline_index deadlines_;
    std::size_t size_ = 0;
    std::size_t max_;
    std::uint64_t seq_ = 0;
};

}  // namespace respool::core
