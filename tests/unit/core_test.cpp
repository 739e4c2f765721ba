// The sans-io core driven by hand: a fake clock, resumptions run when the test says so, factories
// that finish when the test says so. Each test names the rule (docs/01-concepts.md) it pins down.
#include "core_harness.hpp"

#include <gtest/gtest.h>

#include <optional>

using namespace respool::core;
using namespace std::chrono_literals;

namespace {

using core_harness::cfg;
using core_harness::res;

struct harness : core_harness::harness {
    using core_harness::harness::harness;
    // Acquire as the driver does it when no check is configured: take, else park. Returns the resource,
    // or nullptr when parked.
    res* acquire(waiter& w, std::optional<duration> timeout = std::nullopt) {
        auto t = take();
        if (t.r) return static_cast<res*>(t.r);
        EXPECT_EQ(t.st, status::ok);
        EXPECT_EQ(park(w, timeout), status::ok);
        return nullptr;
    }
};

}  // namespace

TEST(core, prewarm_creates_min_through_the_creation_limit) {
    harness h(cfg(5, 10, 2));
    effects fx;
    h.core.replenish(fx);
    h.apply(fx);
    EXPECT_EQ(h.pending_creates, 2) << "max_concurrent_creations bounds the pre-warm too";
    EXPECT_EQ(h.core.total(), 2u) << "a creation is counted before the factory runs";
    h.prewarm();
    EXPECT_EQ(h.core.idle(), 5u);
    EXPECT_EQ(h.core.stats().creations, 5u);
}

TEST(core, idle_is_fifo_by_default_least_recently_released_first) {
    harness h(cfg(3, 3));
    h.prewarm();
    auto a = h.take().r, b = h.take().r, c = h.take().r;
    h.release(b);
    h.release(c);
    h.release(a);
    EXPECT_EQ(h.take().r, b);
    EXPECT_EQ(h.take().r, c);
    EXPECT_EQ(h.take().r, a);
}

TEST(core, lifo_option_reuses_the_warmest_resource) {
    config c = cfg(3, 3);
    c.lifo = true;
    harness h(c);
    h.prewarm();
    auto a = h.take().r, b = h.take().r;
    h.release(a);
    h.release(b);
    EXPECT_EQ(h.take().r, b);
    EXPECT_EQ(h.take().r, a);
}

TEST(core, releaser_cannot_barge_two_tasks_on_max_one_alternate) {
    harness h(cfg(1, 1));
    h.prewarm();
    waiter wa, wb;
    auto name = [&](const waiter* w) { return w == &wa ? 'A' : w == &wb ? 'B' : '?'; };
    std::string order;  // who held the resource, in turn, as the core decided it
    resource* held = h.acquire(wa);
    ASSERT_NE(held, nullptr);
    order += 'A';
    ASSERT_EQ(h.acquire(wb), nullptr);  // B parks
    for (int round = 0; round < 6; ++round) {
        // The holder releases and at once acquires again: it must queue behind the other task.
        waiter& holder = order.back() == 'A' ? wa : wb;
        h.release(held);
        EXPECT_EQ(h.take().r, nullptr) << "the released place is reserved for the parked task";
        ASSERT_EQ(h.park(holder), status::ok);
        ASSERT_EQ(h.posted.size(), 1u) << "one place, one wake";
        const waiter* woken = h.posted.front();  // the waiter the core chose
        auto t = h.run_next();
        ASSERT_EQ(t.st, status::ok);
        ASSERT_NE(t.r, nullptr);
        held = t.r;
        order += name(woken);
    }
    EXPECT_EQ(order, "ABABABA");
}

TEST(core, waiters_are_served_in_arrival_order) {
    harness h(cfg(2, 2));
    h.prewarm();
    auto r1 = h.take().r, r2 = h.take().r;
    waiter w[5];
    for (auto& x : w) ASSERT_EQ(h.acquire(x), nullptr);
    h.release(r1);
    h.release(r2);
    ASSERT_EQ(h.posted.size(), 2u);
    EXPECT_EQ(h.posted[0], &w[0]);
    EXPECT_EQ(h.posted[1], &w[1]);
    EXPECT_EQ(h.core.reserved(), 2u);
    EXPECT_EQ(h.core.waiting(), 5u) << "woken but not yet resumed still counts as waiting";
}

TEST(core, surplus_beyond_reservations_is_available_to_anyone) {
    harness h(cfg(2, 2));
    h.prewarm();
    auto r1 = h.take().r, r2 = h.take().r;
    waiter w;
    ASSERT_EQ(h.acquire(w), nullptr);
    h.release(r1);  // reserved for w
    h.release(r2);  // surplus
    EXPECT_EQ(h.core.reserved(), 1u);
    EXPECT_NE(h.take().r, nullptr) << "try_acquire may take the unreserved surplus";
    EXPECT_EQ(h.take().r, nullptr) << "but never the reserved place";
    auto t = h.run_next();
    EXPECT_EQ(t.st, status::ok);
    EXPECT_NE(t.r, nullptr);
}

TEST(core, timed_out_reserved_waiter_hands_its_reservation_to_the_next) {
    harness h(cfg(1, 1));
    h.prewarm();
    auto r = h.take().r;
    waiter w1, w2;
    ASSERT_EQ(h.acquire(w1, 100ms), nullptr);
    ASSERT_EQ(h.acquire(w2, 500ms), nullptr);
    h.release(r);  // reserved for w1, its resumption posted
    ASSERT_EQ(h.posted.size(), 1u);
    h.advance(150ms);  // w1's deadline passes before it runs
    EXPECT_EQ(h.core.reserved(), 1u) << "the reservation moved on, it did not vanish";
    ASSERT_EQ(h.posted.size(), 2u) << "w2 was woken by the hand-on";
    auto t1 = h.run_next();
    EXPECT_EQ(t1.st, status::timeout) << "a lease never reaches a caller that timed out";
    EXPECT_EQ(t1.r, nullptr);
    auto t2 = h.run_next();
    EXPECT_EQ(t2.st, status::ok);
    EXPECT_EQ(t2.r, r);
    EXPECT_EQ(h.core.stats().timeouts, 1u);
}

TEST(core, cancelled_reserved_waiter_hands_its_reservation_to_the_next) {
    harness h(cfg(1, 1));
    h.prewarm();
    auto r = h.take().r;
    waiter w1, w2;
    h.acquire(w1);
    h.acquire(w2);
    h.release(r);
    effects fx;
    EXPECT_TRUE(h.core.cancel(w1, fx));
    h.apply(fx);
    EXPECT_FALSE(h.core.cancel(w1, fx)) << "a second cancel of a decided waiter is a no-op";
    EXPECT_EQ(h.run_next().st, status::cancelled);
    EXPECT_EQ(h.run_next().r, r);
    EXPECT_EQ(h.core.stats().cancellations, 1u);
}

TEST(core, cancelling_a_parked_waiter_wakes_it_once_with_cancelled) {
    harness h(cfg(1, 1));
    h.prewarm();
    auto r = h.take().r;
    waiter w1, w2;
    h.acquire(w1);
    h.acquire(w2);
    effects fx;
    ASSERT_TRUE(h.core.cancel(w2, fx));
    h.apply(fx);
    ASSERT_EQ(h.posted.size(), 1u);
    EXPECT_EQ(h.run_next().st, status::cancelled);
    h.release(r);
    ASSERT_EQ(h.posted.size(), 1u);
    EXPECT_EQ(h.posted.front(), &w1);
}

TEST(core, opening_the_circuit_fails_parked_and_reserved_waiters_with_unavailable) {
    harness h(cfg(1, 1));
    h.prewarm();
    auto r = h.take().r;
    waiter w1, w2;
    h.acquire(w1);
    h.acquire(w2);
    h.release(r);  // w1 reserved
    effects fx;
    h.core.set_circuit(circuit::open, fx);
    h.apply(fx);
    EXPECT_EQ(h.circuit_changes, 1);
    EXPECT_EQ(h.run_next().st, status::unavailable);
    EXPECT_EQ(h.run_next().st, status::unavailable);
    EXPECT_EQ(h.core.idle(), 1u) << "the idle resource survives";
    EXPECT_EQ(h.take().st, status::unavailable) << "even with an idle resource";
    EXPECT_EQ(h.core.stats().unavailable_rejections, 3u);
    h.core.set_circuit(circuit::closed, fx);
    h.apply(fx);
    EXPECT_NE(h.take().r, nullptr);
}

TEST(core, timeout_of_parked_waiter_and_zero_timeout) {
    harness h(cfg(0, 1));
    auto t = h.take();
    ASSERT_EQ(t.r, nullptr);
    waiter w0;
    EXPECT_EQ(h.park(w0, 0ms), status::timeout) << "a zero timeout does not wait";
    waiter w;
    ASSERT_EQ(h.park(w, 10ms), status::ok);
    ASSERT_EQ(h.pending_creates, 1);
    EXPECT_EQ(h.core.next_deadline(), h.now + 10ms);
    h.advance(9ms);
    EXPECT_TRUE(h.posted.empty());
    h.advance(1ms);
    ASSERT_EQ(h.posted.size(), 1u);
    EXPECT_EQ(h.run_next().st, status::timeout);
    EXPECT_FALSE(h.core.next_deadline());
    h.finish_creates();  // the creation started for it lands in idle
    EXPECT_EQ(h.core.idle(), 1u);
}

TEST(core, deadlines_of_different_timeouts_expire_in_deadline_order) {
    harness h(cfg(0, 1, 1));
    waiter a, b, c;
    h.take();
    h.park(a, 300ms);
    h.park(b, 100ms);
    h.park(c, 200ms);
    EXPECT_EQ(h.core.next_deadline(), h.now + 100ms);
    h.advance(150ms);
    ASSERT_EQ(h.posted.size(), 1u);
    EXPECT_EQ(h.posted.front(), &b);
    EXPECT_EQ(h.core.next_deadline(), h.now + 50ms);
    h.advance(200ms);
    EXPECT_EQ(h.posted.size(), 3u);
}

TEST(core, distinct_deadlines_expire_in_deadline_order) {
    harness h(cfg(1, 1, 1));
    h.prewarm();
    ASSERT_NE(h.take().r, nullptr);  // held for the whole test: nobody is served, waiters only time out
    constexpr int n = 1000;
    std::vector<waiter> ws(n);
    // Timeouts 1..n ms, parked in a scrambled order (7919 is prime to n: i -> i * 7919 % n permutes).
    auto timeout_of = [](int i) { return std::chrono::milliseconds(1 + (i * 7919) % n); };
    for (int i = 0; i < n; ++i) ASSERT_EQ(h.park(ws[i], timeout_of(i)), status::ok);
    EXPECT_EQ(h.core.next_deadline(), h.now + 1ms);
    for (int step = 1; step <= n; ++step) {
        h.advance(1ms);
        ASSERT_EQ(h.posted.size(), 1u) << "exactly one deadline falls in each millisecond";
        const auto i = static_cast<int>(h.posted.front() - ws.data());
        EXPECT_EQ(timeout_of(i), std::chrono::milliseconds(step));
        EXPECT_EQ(h.run_next().st, status::timeout);
        if (step < n) {
            EXPECT_EQ(h.core.next_deadline(), h.now + 1ms);
        }
    }
    EXPECT_FALSE(h.core.next_deadline());
    EXPECT_EQ(h.core.stats().timeouts, static_cast<std::uint64_t>(n));
}

TEST(core, equal_timeouts_expire_in_arrival_order) {
    harness h(cfg(0, 1, 1));
    waiter w[4];
    for (auto& x : w) ASSERT_EQ(h.acquire(x, 50ms), nullptr);
    h.advance(50ms);
    ASSERT_EQ(h.posted.size(), 4u);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(h.posted[static_cast<std::size_t>(i)], &w[i]);
}

TEST(core, expire_times_out_exactly_the_waiters_whose_deadline_has_come) {
    harness h(cfg(1, 1, 1));
    h.prewarm();
    ASSERT_NE(h.take().r, nullptr);
    waiter a, b, c, d, forever;
    h.park(a, 10ms);
    h.park(b, 20ms);
    h.park(c, 30ms);
    h.park(d, 20ms);
    h.park(forever);
    h.advance(20ms);  // a deadline equal to now has come
    ASSERT_EQ(h.posted.size(), 3u);
    EXPECT_EQ(h.posted[0], &a);
    EXPECT_EQ(h.posted[1], &b);
    EXPECT_EQ(h.posted[2], &d);
    EXPECT_EQ(h.core.parked(), 2u) << "c and the waiter without a deadline still wait";
    EXPECT_EQ(h.core.next_deadline(), h.now + 10ms);
    h.advance(10ms);
    ASSERT_EQ(h.posted.size(), 4u);
    EXPECT_EQ(h.posted[3], &c);
    EXPECT_FALSE(h.core.next_deadline()) << "a waiter without a deadline has none";
    h.advance(24h);
    EXPECT_EQ(h.posted.size(), 4u);
    EXPECT_EQ(h.core.parked(), 1u);
}

TEST(core, woken_and_cancelled_waiters_leave_the_deadlines_of_the_others_in_order) {
    harness h(cfg(1, 1, 1));
    h.prewarm();
    auto r = h.take().r;
    waiter w[6];
    // Arrival order 0..5, deadlines in another order.
    const std::chrono::milliseconds t[6] = {60ms, 30ms, 50ms, 10ms, 40ms, 20ms};
    for (int i = 0; i < 6; ++i) ASSERT_EQ(h.park(w[i], t[i]), status::ok);
    EXPECT_EQ(h.core.next_deadline(), h.now + 10ms);
    effects fx;
    ASSERT_TRUE(h.core.cancel(w[3], fx));  // the earliest deadline leaves
    h.apply(fx);
    EXPECT_EQ(h.run_next().st, status::cancelled);
    EXPECT_EQ(h.core.next_deadline(), h.now + 20ms);
    ASSERT_TRUE(h.core.cancel(w[2], fx));  // one from the middle
    h.apply(fx);
    EXPECT_EQ(h.run_next().st, status::cancelled);
    h.release(r);  // reserved for w[0], the oldest: its deadline is the latest
    auto t0 = h.run_next();
    ASSERT_EQ(t0.r, r);
    EXPECT_EQ(h.core.next_deadline(), h.now + 20ms);
    h.advance(60ms);
    ASSERT_EQ(h.posted.size(), 3u);
    EXPECT_EQ(h.posted[0], &w[5]);
    EXPECT_EQ(h.posted[1], &w[1]);
    EXPECT_EQ(h.posted[2], &w[4]);
    EXPECT_EQ(h.core.stats().timeouts, 3u) << "the served and the cancelled waiters never time out";
}

TEST(core, deadline_after_saturates_at_the_ends_of_the_clock) {
    const time_point now = time_point{} + 1h;
    EXPECT_EQ(deadline_after(now, 1s), now + 1s);
    EXPECT_EQ(deadline_after(now, -1s), now - 1s);
    EXPECT_EQ(deadline_after(now, duration::zero()), now);
    EXPECT_EQ(deadline_after(now, duration::max()), time_point::max()) << "now + duration::max() overflows";
    EXPECT_EQ(deadline_after(now, duration::min()), now + duration::min()) << "fits: no saturation";
    EXPECT_EQ(deadline_after(time_point{} - 1h, duration::min()), time_point::min());
    EXPECT_EQ(deadline_after(time_point::max() - 1s, 2s), time_point::max());
    EXPECT_EQ(deadline_after(time_point::max() - 2s, 1s), time_point::max() - 1s)
        << "no saturation below the end";
    EXPECT_EQ(deadline_after(time_point::min() + 1s, -2s), time_point::min());
}

TEST(core, an_absolute_deadline_times_out_the_waiter_at_that_instant) {
    harness h(cfg(1, 1, 1));
    h.prewarm();
    ASSERT_NE(h.take().r, nullptr);
    waiter w;
    const time_point at = h.now + 25ms;
    ASSERT_EQ(h.park_until(w, at), status::ok);
    EXPECT_EQ(h.core.next_deadline(), at);
    h.advance(24ms);
    EXPECT_TRUE(h.posted.empty());
    h.advance(1ms);
    ASSERT_EQ(h.posted.size(), 1u);
    EXPECT_EQ(h.run_next().st, status::timeout);
}

TEST(core, a_deadline_that_is_not_after_now_times_out_at_once_when_nothing_is_free) {
    harness h(cfg(1, 1, 1));
    h.prewarm();
    ASSERT_NE(h.take().r, nullptr);
    waiter now_w, past_w;
    EXPECT_EQ(h.park_until(now_w, h.now), status::timeout);
    EXPECT_EQ(h.park_until(past_w, h.now - 1s), status::timeout);
    EXPECT_EQ(h.core.waiting(), 0u) << "neither waiter parked";
    EXPECT_EQ(h.core.stats().timeouts, 2u);
    EXPECT_EQ(h.core.stats().waits, 0u);
}

TEST(core, a_timeout_of_duration_max_waits_as_long_as_it_takes) {
    harness h(cfg(1, 1, 1));
    h.prewarm();
    auto r = h.take().r;
    waiter w;
    ASSERT_EQ(h.park(w, duration::max()), status::ok) << "now + duration::max() must not wrap to the past";
    EXPECT_EQ(h.core.next_deadline(), time_point::max());
    h.advance(24h * 365 * 100);
    EXPECT_TRUE(h.posted.empty()) << "a hundred years later it still waits";
    h.release(r);
    EXPECT_EQ(h.run_next().r, r);
    EXPECT_EQ(h.core.stats().timeouts, 0u);
}

TEST(core, a_deadline_of_time_point_max_never_expires_before_the_end_of_the_clock) {
    harness h(cfg(1, 1, 1));
    h.prewarm();
    auto r = h.take().r;
    waiter a, b;
    ASSERT_EQ(h.park_until(a, time_point::max()), status::ok);
    ASSERT_EQ(h.park_until(b, h.now + 1s), status::ok);
    EXPECT_EQ(h.core.next_deadline(), h.now + 1s);
    effects fx;
    h.core.expire(time_point::max() - 1ns, fx);
    h.apply(fx);
    ASSERT_EQ(h.posted.size(), 1u);
    EXPECT_EQ(h.posted.front(), &b);
    EXPECT_EQ(h.run_next().st, status::timeout);
    EXPECT_EQ(h.core.next_deadline(), time_point::max());
    h.release(r);
    EXPECT_EQ(h.run_next().r, r) << "the waiter with the endless deadline is still served";
}

TEST(core, retry_after_a_rejection_keeps_the_deadline_the_waiter_parked_with) {
    config c = cfg(1, 1, 1);
    c.before_acquire = true;
    harness h(c);
    h.prewarm();
    auto r = h.take().r;  // fresh: lent without a check
    ASSERT_NE(r, nullptr);
    waiter w;
    const time_point deadline = h.now + 100ms;
    ASSERT_EQ(h.park_until(w, deadline), status::ok);
    h.release(r);
    auto t = h.run_next();
    ASSERT_EQ(t.r, r);
    ASSERT_EQ(t.check, borrow_check::before_acquire) << "lent before: before_acquire is due";
    EXPECT_EQ(h.core.next_deadline(), deadline) << "a waiter under a check keeps its deadline running";
    h.now += 40ms;
    auto v = h.verdict(r, false);  // before_acquire said no; the replacement is being created
    EXPECT_EQ(v.w, &w);
    EXPECT_EQ(v.t.st, status::ok);
    EXPECT_EQ(v.t.r, nullptr) << "nothing free: re-parked";
    EXPECT_EQ(h.pending_creates, 1);
    EXPECT_EQ(h.core.next_deadline(), deadline) << "re-parked with its own deadline, not now + a timeout";
    h.advance(60ms);
    ASSERT_EQ(h.posted.size(), 1u);
    EXPECT_EQ(h.run_next().st, status::timeout);
}

TEST(core, deadlines_parked_with_their_timeout_mix_with_the_others_in_deadline_order) {
    // Shared timeouts parked the driver's way, a timeout that did not produce its deadline (ignored: the
    // deadline counts), relative and absolute deadlines: timeouts in deadline order, ties by arrival.
    harness h(cfg(1, 1, 1));
    h.prewarm();
    ASSERT_NE(h.take().r, nullptr);
    waiter w[7];
    const time_point start = h.now;
    ASSERT_EQ(h.park_with(w[0], deadline_after(h.now, 50ms), 50ms), status::ok);  // due at 50
    ASSERT_EQ(h.park(w[1], 30ms), status::ok);                                    // due at 30
    h.now += 10ms;
    ASSERT_EQ(h.park_with(w[2], deadline_after(h.now, 50ms), 50ms), status::ok);  // due at 60
    ASSERT_EQ(h.park_with(w[3], h.now + 20ms, 50ms), status::ok);  // due at 30: not the timeout's lane
    ASSERT_EQ(h.park_until(w[4], start + 50ms), status::ok);       // due at 50, arrived after w[0]
    h.now += 10ms;
    ASSERT_EQ(h.park_with(w[5], deadline_after(h.now, 50ms), 50ms), status::ok);   // due at 70
    ASSERT_EQ(h.park_with(w[6], time_point::max(), duration::max()), status::ok);  // saturated: never
    EXPECT_EQ(h.core.next_deadline(), start + 30ms);
    h.now = start;
    h.advance(100ms);
    ASSERT_EQ(h.posted.size(), 6u);
    const waiter* order[6] = {&w[1], &w[3], &w[0], &w[4], &w[2], &w[5]};
    for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(h.posted[i], order[i]) << i;
    EXPECT_EQ(h.core.next_deadline(), time_point::max());
}

TEST(core, a_re_park_on_a_shared_timeout_keeps_its_place_among_the_waiters_on_it) {
    config c = cfg(1, 1, 1);
    c.before_acquire = true;
    harness h(c);
    h.prewarm();
    auto r = h.take().r;
    const time_point start = h.now;
    waiter w[4];
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(h.park(w[i], 100ms), status::ok);  // due at 100, 110, 120
        h.now += 10ms;
    }
    h.release(r);
    auto t = h.run_next();  // w[0] takes r, which must pass before_acquire first
    ASSERT_EQ(t.r, r);
    ASSERT_EQ(t.check, borrow_check::before_acquire);
    ASSERT_EQ(h.park(w[3], 100ms), status::ok);  // due at 130, arrives while w[0] waits for the verdict
    auto v = h.verdict(r, false);                // rejected; the replacement is on its way
    EXPECT_EQ(v.w, &w[0]);
    EXPECT_EQ(v.t.r, nullptr);
    EXPECT_EQ(h.core.parked(), 4u);
    EXPECT_EQ(h.core.next_deadline(), start + 100ms) << "back at the head of the waiters on its timeout";
    h.now = start;
    h.advance(200ms);
    ASSERT_EQ(h.posted.size(), 4u);
    for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(h.posted[i], &w[i]);
}

TEST(core, retry_after_the_deadline_has_passed_times_out_at_once) {
    config c = cfg(1, 1, 1);
    c.before_acquire = true;
    harness h(c);
    h.prewarm();
    auto r = h.take().r;
    waiter w;
    ASSERT_EQ(h.park(w, 100ms), status::ok);
    h.release(r);
    auto t = h.run_next();
    ASSERT_EQ(t.r, r);
    ASSERT_EQ(t.check, borrow_check::before_acquire);
    h.now += 100ms;  // the verdict comes when the deadline has passed, before expire() ran
    auto v = h.verdict(r, false);
    EXPECT_EQ(v.w, &w);
    EXPECT_EQ(v.t.st, status::timeout);
    EXPECT_EQ(v.t.r, nullptr);
    EXPECT_EQ(h.core.waiting(), 0u);
    EXPECT_EQ(h.core.checking(), 0u);
    EXPECT_FALSE(h.core.next_deadline());
    EXPECT_EQ(h.core.stats().timeouts, 1u);
    EXPECT_TRUE(h.posted.empty()) << "the verdict's caller reports the timeout: no wake";
}

TEST(core, max_waiters_sheds_load_with_exhausted) {
    config c = cfg(0, 1, 1);
    c.max_waiters = 2;
    harness h(c);
    waiter w[3];
    EXPECT_EQ(h.park(w[0]), status::ok);
    EXPECT_EQ(h.park(w[1]), status::ok);
    EXPECT_EQ(h.park(w[2]), status::exhausted);
    EXPECT_EQ(h.core.stats().exhausted_rejections, 1u);
}

TEST(core, broken_release_wakes_a_waiter_through_a_creation) {
    harness h(cfg(1, 1));
    h.prewarm();
    auto r = h.take().r;
    waiter w;
    h.acquire(w);
    EXPECT_EQ(h.pending_creates, 0) << "total == max: nothing to create";
    h.release(r, pool_core::release_kind::broken);
    EXPECT_EQ(h.failures, 1) << "a broken release is reported to the circuit strategy";
    EXPECT_EQ(h.destroy_reasons.back(), destroy_reason::broken);
    ASSERT_EQ(h.pending_creates, 1) << "the freed capacity serves the waiter";
    h.finish_creates();
    auto t = h.run_next();
    EXPECT_EQ(t.st, status::ok);
    EXPECT_NE(t.r, r);
}

TEST(core, poisoned_release_destroys_and_counts) {
    harness h(cfg(1, 2));
    h.prewarm();
    auto r = h.take().r;
    h.release(r, pool_core::release_kind::poisoned);
    EXPECT_EQ(h.core.stats().poisoned, 1u);
    EXPECT_EQ(static_cast<res*>(r)->destroyed, 1);
    EXPECT_EQ(h.pending_creates, 1) << "the min floor is replenished";
}

TEST(core, factory_failure_reaches_the_oldest_unserved_waiter) {
    harness h(cfg(0, 4, 1));
    waiter w1, w2, w3;
    h.acquire(w1);
    h.acquire(w2);
    h.acquire(w3);
    ASSERT_EQ(h.pending_creates, 1);
    EXPECT_EQ(h.fail_create(), &w1);
    EXPECT_EQ(h.failures, 1);
    ASSERT_EQ(h.posted.size(), 1u);
    EXPECT_EQ(h.run_next().st, status::create_failed);
    EXPECT_EQ(h.pending_creates, 1) << "demand re-triggers creation";
    h.finish_creates();
    EXPECT_EQ(h.posted.front(), &w2);
    EXPECT_EQ(h.core.stats().create_failures, 1u);
}

TEST(core, many_slow_factories_never_push_total_above_max) {
    harness h(cfg(0, 5, 50));
    std::vector<waiter> ws(40);
    for (auto& w : ws) h.acquire(w);
    EXPECT_EQ(h.pending_creates, 5);
    EXPECT_EQ(h.core.total(), 5u);
    h.finish_creates();
    EXPECT_EQ(h.core.total(), 5u);
    EXPECT_EQ(h.posted.size(), 5u);
}

TEST(core, a_burst_does_not_open_a_resource_per_caller) {
    harness h(cfg(0, 50, 2));
    std::vector<waiter> ws(50);
    for (auto& w : ws) h.acquire(w);
    EXPECT_EQ(h.pending_creates, 2) << "max_concurrent_creations = 2";
    h.finish_creates();
    for (int i = 0; i < 2; ++i) {
        auto t = h.run_next();
        ASSERT_NE(t.r, nullptr);
        h.release(t.r);  // returning resources serve the queue before new creations do
    }
    EXPECT_EQ(h.core.total(), 4u);
}

TEST(core, creation_that_finishes_when_nobody_waits_lands_in_idle) {
    harness h(cfg(0, 2));
    waiter w;
    h.acquire(w, 10ms);
    h.advance(10ms);
    h.run_next();
    h.finish_creates();
    EXPECT_EQ(h.core.idle(), 1u);
    EXPECT_EQ(h.core.waiting(), 0u);
}

TEST(core, release_reserves_for_oldest_waiter_and_resume_takes_it) {
    harness h(cfg(1, 1));
    h.prewarm();
    auto r = h.take().r;
    waiter w;
    h.acquire(w);
    h.release(r);
    EXPECT_EQ(h.successes, 1);
    auto t = h.run_next();
    EXPECT_EQ(t.r, r);
    EXPECT_EQ(h.core.stats().waits, 1u);
    EXPECT_EQ(h.core.stats().acquires, 2u);
}

TEST(core, rejected_resource_is_destroyed_and_the_waiter_retries_in_its_place) {
    config c = cfg(2, 2);
    c.before_acquire = true;
    harness h(c);
    h.prewarm();
    auto t1st = h.take(), t2nd = h.take();  // pre-warmed: before_acquire runs on them too
    ASSERT_NE(t1st.r, nullptr);
    ASSERT_NE(t2nd.r, nullptr);
    EXPECT_EQ(t1st.check, borrow_check::before_acquire);
    EXPECT_EQ(t2nd.check, borrow_check::before_acquire);
    EXPECT_EQ(h.core.stats().acquires, 0u) << "not lent before the check passed";
    auto r1 = h.verdict(t1st.r, true).t.r, r2 = h.verdict(t2nd.r, true).t.r;
    ASSERT_EQ(r1, t1st.r);
    ASSERT_EQ(r2, t2nd.r);
    EXPECT_EQ(h.core.stats().acquires, 2u);
    waiter w1, w2;
    h.acquire(w1);
    h.acquire(w2);
    h.release(r1);
    auto t = h.run_next();  // w1 takes r1, before_acquire rejects it
    ASSERT_EQ(t.r, r1);
    ASSERT_EQ(t.check, borrow_check::before_acquire);
    auto v = h.verdict(r1, false);
    EXPECT_EQ(v.w, &w1);
    EXPECT_EQ(v.t.r, nullptr) << "nothing free: re-parked";
    EXPECT_EQ(static_cast<res*>(r1)->destroyed, 1);
    EXPECT_EQ(h.destroy_reasons.back(), destroy_reason::rejected);
    EXPECT_EQ(h.failures, 1) << "a rejection is reported to the circuit strategy";
    EXPECT_EQ(h.pending_creates, 1);
    h.release(r2);
    ASSERT_EQ(h.posted.size(), 1u);
    EXPECT_EQ(h.posted.front(), &w1) << "the re-parked waiter keeps its arrival position";
    EXPECT_EQ(h.core.stats().rejected, 1u);
    auto t1 = h.run_next();
    ASSERT_EQ(t1.r, r2);
    ASSERT_EQ(t1.check, borrow_check::before_acquire);
    EXPECT_EQ(h.core.stats().acquires, 2u) << "a take under a check is not an acquire yet";
    auto v1 = h.verdict(r2, true);
    EXPECT_EQ(v1.w, &w1);
    EXPECT_EQ(v1.t.st, status::ok);
    EXPECT_EQ(v1.t.r, r2);
    EXPECT_EQ(v1.t.check, borrow_check::none);
    EXPECT_EQ(h.core.stats().acquires, 3u) << "only takes that passed their checks count as acquires";
}

TEST(core, close_fails_waiters_destroys_idle_and_leaves_leases_alone) {
    harness h(cfg(3, 3));
    h.prewarm();
    auto leased = h.take().r;
    waiter w1;
    auto r2 = h.take().r, r3 = h.take().r;
    h.acquire(w1);
    h.release(r2);  // w1 reserved
    waiter w2;
    h.acquire(w2);
    effects fx;
    EXPECT_TRUE(h.core.close(fx));
    h.apply(fx);
    EXPECT_FALSE(h.core.close(fx)) << "close is idempotent";
    EXPECT_EQ(h.run_next().st, status::closed);
    EXPECT_EQ(h.run_next().st, status::closed);
    EXPECT_EQ(h.core.idle(), 0u);
    EXPECT_EQ(static_cast<res*>(r2)->destroyed, 1);
    EXPECT_EQ(static_cast<res*>(leased)->destroyed, 0);
    h.release(leased);
    h.release(r3, pool_core::release_kind::broken);
    EXPECT_EQ(static_cast<res*>(leased)->destroyed, 1);
    EXPECT_EQ(h.core.total(), 0u);
    EXPECT_EQ(h.take().st, status::closed);
    EXPECT_EQ(h.pending_creates, 0) << "a closed pool creates nothing";
}

TEST(core, close_during_a_suspended_hook_destroys_the_resource_when_the_hook_ends) {
    config c = cfg(1, 1);
    c.before_acquire = true;
    harness h(c);
    h.prewarm();
    h.release(h.take().r);  // lent once: before_acquire is due from now on
    auto t = h.take();      // a synchronous caller; before_acquire is now "suspended"
    ASSERT_EQ(t.check, borrow_check::before_acquire);
    auto r = t.r;
    effects fx;
    h.core.close(fx);
    h.apply(fx);
    EXPECT_EQ(h.core.total(), 1u) << "the resource in the hook still counts";
    EXPECT_EQ(h.drained, 0);
    auto v = h.verdict(r, true);
    EXPECT_EQ(v.w, nullptr);
    EXPECT_EQ(v.t.st, status::closed);
    EXPECT_EQ(v.t.r, nullptr);
    EXPECT_EQ(static_cast<res*>(r)->destroyed, 1);
    EXPECT_EQ(h.destroy_reasons.back(), destroy_reason::closed);
    EXPECT_EQ(h.core.total(), 0u);
    EXPECT_EQ(h.drained, 1);
}

TEST(core, close_during_a_suspended_factory_destroys_what_it_returns) {
    harness h(cfg(0, 1));
    waiter w;
    h.acquire(w);
    effects fx;
    h.core.close(fx);
    h.apply(fx);
    EXPECT_EQ(h.run_next().st, status::closed);
    h.finish_creates();
    EXPECT_EQ(h.destroy_reasons.back(), destroy_reason::closed);
    EXPECT_EQ(h.core.total(), 0u);
}

TEST(core, health_check_sees_each_idle_resource_once_per_round_in_idle_order) {
    harness h(cfg(3, 3));
    h.prewarm();
    std::vector<resource*> seen;
    effects fx;
    h.core.begin_health_round();
    while (resource* r = h.core.begin_check()) {
        seen.push_back(r);
        h.core.end_check(r, static_cast<res*>(r)->id != 2, fx);
        h.apply(fx);
    }
    ASSERT_EQ(seen.size(), 3u);
    EXPECT_EQ(static_cast<res*>(seen[0])->id, 1);
    EXPECT_EQ(static_cast<res*>(seen[2])->id, 3);
    EXPECT_EQ(h.destroy_reasons.back(), destroy_reason::unhealthy);
    EXPECT_EQ(h.pending_creates, 1) << "replacements are created up to min";
    EXPECT_EQ(h.core.begin_check(), nullptr);
    h.finish_creates();
    h.core.begin_health_round();  // a new round sees every idle resource again, the replacement too
    int again = 0;
    while (resource* r = h.core.begin_check()) {
        ++again;
        h.core.end_check(r, true, fx);
        h.apply(fx);
    }
    EXPECT_EQ(again, 3);
}

TEST(core, health_check_skips_reserved_places_and_leased_resources) {
    harness h(cfg(1, 1));
    h.prewarm();
    auto r = h.take().r;
    h.core.begin_health_round();
    EXPECT_EQ(h.core.begin_check(), nullptr) << "leased resources are never checked";
    waiter w;
    h.acquire(w);
    h.release(r);
    EXPECT_EQ(h.core.begin_check(), nullptr) << "a reserved resource belongs to its waiter";
}

TEST(core, inline_creation_for_try_acquire_never_takes_from_the_queue) {
    harness h(cfg(0, 2, 2));
    ASSERT_TRUE(h.core.begin_inline_creation());
    effects fx;
    EXPECT_EQ(h.core.inline_created(h.make(), fx), status::ok);
    waiter w;
    h.acquire(w);  // parks, creation for the queue starts
    EXPECT_FALSE(h.core.begin_inline_creation()) << "a parked waiter owns the free capacity";
}

TEST(core, a_waiter_that_parked_during_an_inline_creation_gets_a_creation_of_its_own) {
    // try_acquire's synchronous factory runs outside the lock; a waiter parking meanwhile sees a
    // creation under way and starts none. The inline creation serves its caller, not the waiter.
    harness h(cfg(0, 2, 2));
    ASSERT_TRUE(h.core.begin_inline_creation());
    waiter w;
    ASSERT_EQ(h.park(w), status::ok);
    EXPECT_EQ(h.pending_creates, 0) << "the creation under way is counted for the waiter";
    effects fx;
    ASSERT_EQ(h.core.inline_created(h.make(), fx), status::ok);
    h.apply(fx);  // audit: no parked waiter beside free capacity without a creation
    EXPECT_EQ(h.pending_creates, 1) << "the waiter needs a creation of its own now";
    h.finish_creates();
    ASSERT_EQ(h.posted.size(), 1u);
    EXPECT_EQ(h.posted.front(), &w);
    EXPECT_NE(h.run_next().r, nullptr);
}

TEST(core, failed_floor_creation_waits_for_replenish_instead_of_spinning) {
    harness h(cfg(2, 4, 1));
    effects fx;
    h.core.replenish(fx);
    h.apply(fx);
    ASSERT_EQ(h.pending_creates, 1);
    EXPECT_EQ(h.fail_create(), nullptr);
    EXPECT_EQ(h.pending_creates, 0) << "no retry storm with nobody waiting";
    h.core.replenish(fx);
    h.apply(fx);
    EXPECT_EQ(h.pending_creates, 1);
}
