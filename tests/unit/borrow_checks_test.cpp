// The borrow-check pipeline of the core (validate, then before_acquire), the race of a
// check's verdict with the borrower's deadline, a cancel and close, and the ready / drained effects.
// Driven by hand on a fake clock, like core_test.cpp.
#include "core_harness.hpp"

#include <gtest/gtest.h>

#include <vector>

using namespace respool::core;
using namespace std::chrono_literals;

namespace {

using core_harness::cfg;
using core_harness::res;

// The clock starts at 100 s, so that "idle since" stamps of the pre-warm are well after the epoch.
struct rig : core_harness::harness {
    explicit rig(config c, bool start = true) : harness(c, time_point{} + 100s, start) {}
    // Lends every idle resource once (each passing its checks) and returns it.
    void lend_all_once() {
        std::vector<resource*> out;
        for (auto t = core.try_take(); t.r; t = core.try_take()) {
            while (t.check != borrow_check::none) t = verdict(t.r, true).t;
            EXPECT_NE(t.r, nullptr);
            out.push_back(t.r);
        }
        for (resource* r : out) release(r);
    }
};

config checked(std::uint32_t min, std::uint32_t max, std::uint32_t mcc = 2) {
    config c = cfg(min, max, mcc);
    c.before_acquire = true;
    c.validate_on_borrow = true;
    c.validate_after = 5s;
    return c;
}

}  // namespace

// ---- the order of the checks -----------------------------------------------------------------

TEST(borrow_checks, validation_runs_before_before_acquire_for_a_synchronous_caller) {
    rig h(checked(1, 1));
    h.warm();
    h.lend_all_once();
    h.tick(6s);  // idle past validate_after
    const auto acquires = h.core.stats().acquires;
    auto t = h.core.try_take();
    ASSERT_NE(t.r, nullptr);
    EXPECT_EQ(t.check, borrow_check::validate) << "validation first";
    auto v = h.verdict(t.r, true);
    EXPECT_EQ(v.w, nullptr);
    EXPECT_EQ(v.t.st, status::ok);
    EXPECT_EQ(v.t.r, t.r) << "the same resource goes on to its next check";
    EXPECT_EQ(v.t.check, borrow_check::before_acquire) << "then before_acquire";
    EXPECT_EQ(h.core.stats().acquires, acquires) << "not lent before its last check passed";
    v = h.verdict(t.r, true);
    EXPECT_EQ(v.t.r, t.r);
    EXPECT_EQ(v.t.check, borrow_check::none) << "lent";
    EXPECT_EQ(h.core.stats().acquires, acquires + 1);
    EXPECT_EQ(h.core.active(), 1u);
}

TEST(borrow_checks, a_waiter_waits_for_both_verdicts_in_order_and_stays_checking_between_them) {
    rig h(checked(1, 1));
    h.warm();
    h.lend_all_once();
    auto held = h.core.try_take();  // held; the waiter parks
    ASSERT_EQ(held.check, borrow_check::before_acquire);
    auto r = held.r;
    ASSERT_EQ(h.verdict(r, true).t.r, r);
    waiter w;
    ASSERT_EQ(h.park(w, 1h), status::ok);
    h.tick(6s);
    h.release(r);  // idle since now: reserved for w
    h.tick(6s);    // the reserved resource idles past validate_after before w resumes
    auto t = h.run_next();
    ASSERT_EQ(t.r, r);
    EXPECT_EQ(t.check, borrow_check::validate);
    EXPECT_EQ(w.state, waiter_state::checking);
    EXPECT_EQ(h.core.checking(), 1u);
    EXPECT_EQ(h.core.waiting(), 0u) << "a waiter under a check is neither parked nor reserved";
    EXPECT_TRUE(h.core.next_deadline()) << "its deadline still runs";
    auto v = h.verdict(r, true);
    EXPECT_EQ(v.w, &w);
    EXPECT_EQ(v.t.r, r);
    EXPECT_EQ(v.t.check, borrow_check::before_acquire);
    EXPECT_EQ(w.state, waiter_state::checking) << "still waiting, for the next verdict";
    EXPECT_EQ(h.core.checking(), 1u);
    v = h.verdict(r, true);
    EXPECT_EQ(v.w, &w);
    EXPECT_EQ(v.t.r, r);
    EXPECT_EQ(v.t.check, borrow_check::none);
    EXPECT_EQ(w.state, waiter_state::none);
    EXPECT_EQ(h.core.checking(), 0u);
    EXPECT_FALSE(h.core.next_deadline()) << "a served waiter leaves the deadline index";
}

TEST(borrow_checks, a_failed_validation_skips_before_acquire_and_the_next_place_is_tried) {
    config c = checked(2, 2);
    c.lifo = false;
    rig h(c);
    h.warm();
    h.lend_all_once();
    h.tick(6s);
    auto t = h.core.try_take();
    ASSERT_EQ(t.check, borrow_check::validate);
    auto v = h.verdict(t.r, false);
    EXPECT_EQ(v.t.r, nullptr) << "a synchronous caller takes again itself";
    ASSERT_EQ(h.destroyed.size(), 1u);
    EXPECT_EQ(h.destroyed[0].second, destroy_reason::rejected);
    auto t2 = h.core.try_take();  // the other one, idle as long: validated too
    ASSERT_NE(t2.r, nullptr);
    EXPECT_NE(t2.r, t.r);
    EXPECT_EQ(t2.check, borrow_check::validate);
    EXPECT_EQ(h.core.stats().rejected, 1u);
}

TEST(borrow_checks, only_before_acquire_without_validation_configured) {
    config c = cfg(1, 1);
    c.before_acquire = true;
    rig h(c);
    h.warm();
    h.lend_all_once();
    h.tick(1h);
    auto t = h.core.try_take();
    EXPECT_EQ(t.check, borrow_check::before_acquire) << "no validation without validate_on_borrow";
    EXPECT_EQ(h.verdict(t.r, true).t.check, borrow_check::none);
}

TEST(borrow_checks, no_check_configured_lends_at_once) {
    config c = cfg(1, 1);
    c.validate_after = 1s;  // without validate_on_borrow this means nothing
    rig h(c);
    h.warm();
    h.lend_all_once();
    h.tick(1h);
    auto t = h.core.try_take();
    ASSERT_NE(t.r, nullptr);
    EXPECT_EQ(t.check, borrow_check::none);
}

// ---- resources made for the acquire ----------------------------------------------------------

TEST(borrow_checks, pre_warmed_resources_pass_before_acquire_though_never_lent) {
    rig h(checked(2, 3));
    h.warm();
    auto t = h.core.try_take();  // pre-warmed, never lent, idle 0 s
    ASSERT_NE(t.r, nullptr);
    EXPECT_EQ(t.check, borrow_check::before_acquire) << "taken from idle: before_acquire runs";
    EXPECT_EQ(h.core.stats().acquires, 0u) << "not lent before the check passed";
    auto v = h.verdict(t.r, true);
    EXPECT_EQ(v.t.r, t.r);
    EXPECT_EQ(v.t.check, borrow_check::none);
    EXPECT_EQ(h.core.stats().acquires, 1u);
    h.tick(6s);                   // the other pre-warmed one idles past validate_after
    auto t2 = h.core.try_take();  // validated (idle time alone), then before_acquire
    ASSERT_NE(t2.r, nullptr);
    EXPECT_EQ(t2.check, borrow_check::validate);
    v = h.verdict(t2.r, true);
    EXPECT_EQ(v.t.check, borrow_check::before_acquire) << "pre-warmed: before_acquire after validation";
    EXPECT_EQ(h.verdict(t2.r, true).t.check, borrow_check::none);
    EXPECT_EQ(h.core.stats().acquires, 2u);
    // One made by the caller's own synchronous factory is lent without any check.
    ASSERT_TRUE(h.core.begin_inline_creation());
    effects fx;
    res* mine = h.make();
    EXPECT_EQ(h.core.inline_created(mine, fx), status::ok);
    h.apply(fx);
    EXPECT_EQ(h.core.stats().acquires, 3u) << "inline_created counts the acquire: no confirmation";
    // ...but it was lent: its next take runs both checks, like the others'.
    h.release(mine);
    h.release(t.r);
    h.release(t2.r);
    h.tick(6s);
    std::vector<pool_core::take_result> takes;
    for (int i = 0; i < 3; ++i) takes.push_back(h.core.try_take());
    for (auto& x : takes) {
        ASSERT_NE(x.r, nullptr);
        EXPECT_EQ(x.check, borrow_check::validate);
        EXPECT_EQ(h.verdict(x.r, true).t.check, borrow_check::before_acquire);
    }
}

TEST(borrow_checks, a_resource_made_after_a_waiter_parked_skips_before_acquire_for_it) {
    rig h(checked(0, 1));
    waiter w;
    EXPECT_EQ(h.take_or_wait(w).r, nullptr);
    ASSERT_EQ(h.pending_creates, 1) << "a creation for the parked waiter";
    h.finish_creates();
    auto t = h.run_next();
    ASSERT_NE(t.r, nullptr);
    EXPECT_EQ(t.check, borrow_check::none) << "made for this acquire: no before_acquire";
    h.release(t.r);
    auto again = h.core.try_take();
    EXPECT_EQ(again.check, borrow_check::before_acquire) << "lent once: checked from now on";
}

TEST(borrow_checks, a_synchronous_caller_skips_before_acquire_only_for_a_replacement_made_after_it_arrived) {
    config c = cfg(1, 1, 1);
    c.before_acquire = true;
    rig h(c);
    h.warm();  // one pre-warmed resource, never lent
    const std::uint64_t arrival = h.core.arrive();
    auto t = h.core.try_take(arrival);
    ASSERT_NE(t.r, nullptr);
    EXPECT_EQ(t.check, borrow_check::before_acquire) << "pre-warmed: made before the caller arrived";
    auto v = h.verdict(t.r, false);  // an always-no hook
    EXPECT_EQ(v.w, nullptr);
    EXPECT_EQ(v.t.r, nullptr);
    EXPECT_EQ(v.t.st, status::ok) << "a synchronous caller takes again itself";
    ASSERT_EQ(h.pending_creates, 1) << "the floor's replacement";
    h.finish_creates();
    auto t2 = h.core.try_take(arrival);
    ASSERT_NE(t2.r, nullptr);
    EXPECT_EQ(t2.check, borrow_check::none) << "made for this caller: the always-no hook cannot loop";
    EXPECT_EQ(h.core.stats().acquires, 1u);
    EXPECT_EQ(h.core.stats().rejected, 1u);
    h.release(t2.r);
    EXPECT_EQ(h.core.try_take().check, borrow_check::before_acquire) << "a later newcomer checks it";
}

TEST(borrow_checks, a_replacement_created_for_a_rejected_take_is_fresh) {
    config c = cfg(1, 1, 1);
    c.before_acquire = true;
    rig h(c);
    h.warm();
    h.lend_all_once();
    waiter w;
    auto t = h.take_or_wait(w);
    ASSERT_EQ(t.check, borrow_check::before_acquire);
    auto v = h.verdict(t.r, false);
    EXPECT_EQ(v.w, &w);
    EXPECT_EQ(v.t.r, nullptr);
    EXPECT_EQ(w.state, waiter_state::parked) << "nothing free: parked, a replacement on its way";
    ASSERT_EQ(h.pending_creates, 1);
    h.finish_creates();
    auto t2 = h.run_next();
    ASSERT_NE(t2.r, nullptr);
    EXPECT_EQ(t2.check, borrow_check::none) << "an always-no hook cannot reject the replacement forever";
    EXPECT_EQ(w.state, waiter_state::none);
}

// ---- a verdict racing the deadline, a cancel, close -----------------------------------------

TEST(borrow_checks, expire_while_checking_times_out_and_a_pass_gives_the_resource_back_to_idle) {
    rig h(checked(2, 2));
    h.warm();
    h.lend_all_once();
    waiter w;
    auto t = h.take_or_wait(w, 50ms);
    ASSERT_NE(t.r, nullptr);
    ASSERT_EQ(t.check, borrow_check::before_acquire);
    ASSERT_EQ(w.state, waiter_state::checking);
    EXPECT_EQ(h.core.next_deadline(), h.now + 50ms);
    h.advance(49ms);
    EXPECT_TRUE(h.posted.empty());
    h.advance(1ms);
    ASSERT_EQ(h.fail_wakes.size(), 1u);
    EXPECT_EQ(h.fail_wakes[0], std::make_pair(&w, status::timeout));
    EXPECT_EQ(h.core.stats().timeouts, 1u);
    EXPECT_EQ(h.core.checking(), 0u);
    EXPECT_FALSE(h.core.next_deadline());
    EXPECT_EQ(h.run_next().st, status::timeout) << "its resumption reports the timeout";
    const auto acquires = h.core.stats().acquires;
    auto v = h.verdict(t.r, true);
    EXPECT_EQ(v.w, nullptr) << "the borrower left";
    EXPECT_EQ(v.t.r, nullptr);
    EXPECT_TRUE(h.destroyed.empty()) << "a pass keeps the resource";
    EXPECT_EQ(h.core.idle(), 2u);
    EXPECT_EQ(h.core.idle_at(0), t.r) << "back at the front: it was never used";
    EXPECT_EQ(h.core.stats().acquires, acquires) << "never lent: no acquire";
    EXPECT_EQ(h.failures, 0);
}

TEST(borrow_checks, expire_between_two_checks_then_a_pass_gives_back_without_the_second_check) {
    rig h(checked(1, 1));
    h.warm();
    h.lend_all_once();
    h.tick(6s);
    waiter w;
    auto t = h.take_or_wait(w, 10ms);
    ASSERT_EQ(t.check, borrow_check::validate);
    ASSERT_EQ(h.verdict(t.r, true).t.check, borrow_check::before_acquire);
    h.advance(10ms);
    EXPECT_EQ(h.run_next().st, status::timeout);
    auto v = h.verdict(t.r, true);  // before_acquire passes after the borrower left
    EXPECT_EQ(v.w, nullptr);
    EXPECT_EQ(h.core.idle(), 1u);
    EXPECT_EQ(t.r->checks_due, 0u) << "its other checks are moot";
    waiter w2;  // the resource serves the next borrower normally
    auto t2 = h.take_or_wait(w2);
    EXPECT_EQ(t2.r, t.r);
    EXPECT_EQ(t2.check, borrow_check::validate) << "idle since before the take: still past validate_after";
}

TEST(borrow_checks, expire_while_checking_then_a_failure_destroys_the_resource_and_serves_the_queue) {
    rig h(checked(1, 1, 1));
    h.warm();
    h.lend_all_once();
    waiter w, later;
    auto t = h.take_or_wait(w, 10ms);
    ASSERT_EQ(t.check, borrow_check::before_acquire);
    ASSERT_EQ(h.park(later), status::ok);  // parks: the only place is under w's check
    EXPECT_EQ(h.pending_creates, 0) << "total == max";
    h.advance(10ms);
    EXPECT_EQ(h.run_next().st, status::timeout);
    auto v = h.verdict(t.r, false);
    EXPECT_EQ(v.w, nullptr);
    ASSERT_EQ(h.destroyed.size(), 1u);
    EXPECT_EQ(h.destroyed[0].second, destroy_reason::rejected);
    EXPECT_EQ(h.core.stats().rejected, 1u);
    EXPECT_EQ(h.failures, 1);
    EXPECT_EQ(h.pending_creates, 1) << "the freed capacity serves the parked waiter";
    h.finish_creates();
    ASSERT_EQ(h.posted.size(), 1u);
    EXPECT_EQ(h.posted.front(), &later);
}

TEST(borrow_checks, cancel_while_checking_wakes_with_cancelled_and_a_pass_serves_a_parked_waiter) {
    rig h(checked(1, 1, 1));
    h.warm();
    h.lend_all_once();
    waiter w, later;
    auto t = h.take_or_wait(w, 1h);
    ASSERT_EQ(t.check, borrow_check::before_acquire);
    ASSERT_EQ(h.park(later), status::ok);
    EXPECT_TRUE(h.cancel(w));
    EXPECT_FALSE(h.cancel(w)) << "decided: a second cancel loses";
    ASSERT_EQ(h.fail_wakes.size(), 1u);
    EXPECT_EQ(h.fail_wakes[0], std::make_pair(&w, status::cancelled));
    EXPECT_EQ(h.core.stats().cancellations, 1u);
    EXPECT_FALSE(h.core.next_deadline()) << "a cancelled waiter leaves the deadline index";
    EXPECT_EQ(h.run_next().st, status::cancelled);
    auto v = h.verdict(t.r, true);
    EXPECT_EQ(v.w, nullptr);
    ASSERT_EQ(h.posted.size(), 1u) << "given back: reserved for the parked waiter";
    EXPECT_EQ(h.posted.front(), &later);
    auto t2 = h.run_next();
    EXPECT_EQ(t2.r, t.r);
    EXPECT_EQ(t2.check, borrow_check::before_acquire);
}

TEST(borrow_checks, cancel_while_checking_then_a_failure_rejects) {
    rig h(checked(1, 2));
    h.warm();
    h.lend_all_once();
    waiter w;
    auto t = h.take_or_wait(w);
    ASSERT_TRUE(h.cancel(w));
    EXPECT_EQ(h.run_next().st, status::cancelled);
    auto v = h.verdict(t.r, false);
    EXPECT_EQ(v.w, nullptr);
    ASSERT_EQ(h.destroyed.size(), 1u);
    EXPECT_EQ(h.destroyed[0].second, destroy_reason::rejected);
    EXPECT_EQ(h.pending_creates, 1) << "back to min";
}

TEST(borrow_checks, close_while_checking_fails_with_closed_and_a_later_pass_destroys_and_drains_once) {
    rig h(checked(3, 3));
    h.warm();
    h.lend_all_once();
    waiter w1, w2;
    auto held = h.core.try_take();  // a synchronous caller's check under way
    ASSERT_EQ(held.check, borrow_check::before_acquire);
    auto t1 = h.take_or_wait(w1, 1h);
    auto t2 = h.take_or_wait(w2);
    ASSERT_EQ(t1.check, borrow_check::before_acquire);
    ASSERT_EQ(t2.check, borrow_check::before_acquire);
    EXPECT_EQ(h.core.checking(), 2u);
    h.close();
    ASSERT_EQ(h.fail_wakes.size(), 2u);
    EXPECT_EQ(h.fail_wakes[0], std::make_pair(&w1, status::closed));
    EXPECT_EQ(h.fail_wakes[1], std::make_pair(&w2, status::closed));
    EXPECT_EQ(h.core.checking(), 0u);
    EXPECT_FALSE(h.core.next_deadline());
    EXPECT_EQ(h.core.total(), 3u) << "resources under a check still count";
    EXPECT_EQ(h.drained, 0);
    auto v1 = h.verdict(t1.r, true);
    EXPECT_EQ(v1.w, nullptr);
    ASSERT_EQ(h.destroyed.size(), 1u);
    EXPECT_EQ(h.destroyed[0], std::make_pair(static_cast<res*>(t1.r)->id, destroy_reason::closed));
    auto v2 = h.verdict(t2.r, false);
    EXPECT_EQ(v2.w, nullptr);
    EXPECT_EQ(h.destroyed.back().second, destroy_reason::rejected);
    EXPECT_EQ(h.drained, 0) << "the synchronous caller's resource is still under its check";
    auto v3 = h.verdict(held.r, true);  // the synchronous caller learns the pool closed
    EXPECT_EQ(v3.t.st, status::closed);
    EXPECT_EQ(v3.t.r, nullptr);
    EXPECT_EQ(h.destroyed.back().second, destroy_reason::closed);
    EXPECT_EQ(h.drained, 1) << "after the last resource";
    EXPECT_EQ(h.kinds.back(), effect::kind::drained);
    EXPECT_TRUE(h.core.drained());
    EXPECT_EQ(h.run_next().st, status::closed);
    EXPECT_EQ(h.run_next().st, status::closed);
    effects fx;
    EXPECT_FALSE(h.core.close(fx));
    h.apply(fx);
    EXPECT_EQ(h.drained, 1) << "once";
}

TEST(borrow_checks, opening_the_circuit_leaves_a_checking_waiter_alone) {
    rig h(checked(1, 1));
    h.warm();
    h.lend_all_once();
    waiter w;
    auto t = h.take_or_wait(w);
    ASSERT_EQ(t.check, borrow_check::before_acquire);
    effects fx;
    h.core.set_circuit(circuit::open, fx);
    h.apply(fx);
    EXPECT_TRUE(h.fail_wakes.empty()) << "it already passed the circuit";
    EXPECT_EQ(w.state, waiter_state::checking);
    auto v = h.verdict(t.r, true);
    EXPECT_EQ(v.w, &w);
    EXPECT_EQ(v.t.r, t.r);
}

TEST(borrow_checks, a_rejection_with_the_circuit_open_ends_the_waiter_with_unavailable) {
    rig h(checked(1, 1));
    h.warm();
    h.lend_all_once();
    waiter w;
    auto t = h.take_or_wait(w, 1h);
    effects fx;
    h.core.set_circuit(circuit::open, fx);
    h.apply(fx);
    auto v = h.verdict(t.r, false);
    EXPECT_EQ(v.w, &w);
    EXPECT_EQ(v.t.st, status::unavailable);
    EXPECT_EQ(w.state, waiter_state::none);
    EXPECT_FALSE(h.core.next_deadline());
}

// ---- a rejection re-parks in arrival order ----------------------------------------------------

TEST(borrow_checks, a_rejected_waiter_re_parks_ahead_of_later_arrivals) {
    rig h(checked(1, 1, 1));
    h.warm();
    h.lend_all_once();
    auto r = h.core.try_take().r;
    h.verdict(r, true);  // held by the test
    waiter first, second, third;
    ASSERT_EQ(h.park(first), status::ok);
    ASSERT_EQ(h.park(second), status::ok);
    h.release(r);  // reserved for first
    auto t = h.run_next();
    ASSERT_EQ(t.r, r);
    ASSERT_EQ(t.check, borrow_check::before_acquire);
    ASSERT_EQ(h.park(third), status::ok);  // arrives while first waits for its verdict
    auto v = h.verdict(r, false);
    EXPECT_EQ(v.w, &first);
    EXPECT_EQ(v.t.r, nullptr);
    EXPECT_EQ(first.state, waiter_state::parked);
    EXPECT_EQ(h.core.parked(), 3u);
    ASSERT_EQ(h.pending_creates, 1);
    h.finish_creates();
    ASSERT_EQ(h.posted.size(), 1u);
    EXPECT_EQ(h.posted.front(), &first) << "back in its arrival position: ahead of second and third";
    auto t2 = h.run_next();
    EXPECT_NE(t2.r, nullptr);
    EXPECT_EQ(t2.check, borrow_check::none) << "the replacement is fresh";
    h.release(t2.r);
    ASSERT_EQ(h.posted.size(), 1u);
    EXPECT_EQ(h.posted.front(), &second);
}

TEST(borrow_checks, a_rejected_newcomer_re_parks_by_its_arrival_at_the_take) {
    rig h(checked(2, 2, 1));
    h.warm();
    h.lend_all_once();
    auto held = h.core.try_take();  // one place held by a synchronous caller for the whole test
    ASSERT_EQ(held.check, borrow_check::before_acquire);
    h.verdict(held.r, true);
    waiter newcomer, later;
    auto t = h.take_or_wait(newcomer);  // takes the last idle one, waits for before_acquire
    ASSERT_EQ(t.check, borrow_check::before_acquire);
    ASSERT_EQ(h.take_or_wait(later).r, nullptr);  // nothing free: parks behind the newcomer's arrival
    auto v = h.verdict(t.r, false);
    EXPECT_EQ(v.w, &newcomer);
    EXPECT_EQ(v.t.r, nullptr);
    EXPECT_EQ(h.core.parked(), 2u);
    h.release(held.r);
    ASSERT_EQ(h.posted.size(), 1u);
    EXPECT_EQ(h.posted.front(), &newcomer) << "it arrived (took) before `later` parked";
}

TEST(borrow_checks, a_rejected_waiter_takes_another_idle_resource_with_its_own_check) {
    rig h(checked(3, 3));
    h.warm();
    h.lend_all_once();
    waiter w;
    auto t = h.take_or_wait(w, 1h);
    ASSERT_EQ(t.check, borrow_check::before_acquire);
    auto v = h.verdict(t.r, false);
    EXPECT_EQ(v.w, &w);
    ASSERT_NE(v.t.r, nullptr);
    EXPECT_NE(v.t.r, t.r);
    EXPECT_EQ(v.t.check, borrow_check::before_acquire);
    EXPECT_EQ(w.state, waiter_state::checking);
    EXPECT_EQ(h.core.checking(), 1u);
    EXPECT_TRUE(h.core.next_deadline()) << "its deadline still runs";
    auto v2 = h.verdict(v.t.r, true);
    EXPECT_EQ(v2.w, &w);
    EXPECT_EQ(v2.t.r, v.t.r);
    EXPECT_EQ(v2.t.check, borrow_check::none);
}

TEST(borrow_checks, a_synchronous_caller_gets_nothing_after_a_rejection_and_takes_again) {
    rig h(checked(2, 2));
    h.warm();
    h.lend_all_once();
    auto t = h.core.try_take();
    ASSERT_EQ(t.check, borrow_check::before_acquire);
    auto v = h.verdict(t.r, false);
    EXPECT_EQ(v.w, nullptr);
    EXPECT_EQ(v.t.st, status::ok);
    EXPECT_EQ(v.t.r, nullptr);
    EXPECT_EQ(h.core.checking(), 0u);
    auto t2 = h.core.try_take();
    ASSERT_NE(t2.r, nullptr);
    EXPECT_NE(t2.r, t.r);
}

// ---- ready -----------------------------------------------------------------------------------

TEST(ready, min_zero_is_ready_at_once_in_start) {
    rig h(cfg(0, 4), false);
    EXPECT_FALSE(h.core.ready());
    effects fx;
    h.core.start(fx);
    h.apply(fx);
    EXPECT_EQ(h.readies, std::vector<status>{status::ok});
    EXPECT_TRUE(h.core.ready());
    EXPECT_EQ(h.pending_creates, 0);
}

TEST(ready, min_three_one_creation_at_a_time_is_ready_after_the_third) {
    rig h(cfg(3, 5, 1), false);
    effects fx;
    h.core.start(fx);
    h.apply(fx);
    EXPECT_EQ(h.pending_creates, 1);
    EXPECT_TRUE(h.readies.empty());
    h.finish_creates(1);
    EXPECT_TRUE(h.readies.empty()) << "one of three";
    EXPECT_EQ(h.pending_creates, 1);
    h.finish_creates(1);
    EXPECT_TRUE(h.readies.empty()) << "two of three";
    EXPECT_FALSE(h.core.ready());
    h.finish_creates(1);
    EXPECT_EQ(h.readies, std::vector<status>{status::ok});
    EXPECT_TRUE(h.core.ready());
    EXPECT_EQ(h.core.idle(), 3u);
    // Later creations do not say it again.
    auto a = h.core.try_take().r, b = h.core.try_take().r, c = h.core.try_take().r;
    h.release(a, pool_core::release_kind::broken);
    h.finish_creates();
    h.release(b);
    h.release(c);
    EXPECT_EQ(h.readies.size(), 1u);
}

TEST(ready, the_first_creation_failure_ends_the_pre_warm_with_create_failed) {
    rig h(cfg(3, 5, 2), false);
    effects fx;
    h.core.start(fx);
    h.apply(fx);
    ASSERT_EQ(h.pending_creates, 2);
    h.finish_creates(1);
    EXPECT_TRUE(h.readies.empty());
    EXPECT_EQ(h.fail_create(), nullptr);
    EXPECT_EQ(h.readies, std::vector<status>{status::create_failed}) << "at the first failure";
    EXPECT_TRUE(h.core.ready());
    h.warm();  // the creation still under way lands and the floor fills up
    EXPECT_EQ(h.core.idle(), 3u);
    h.release(h.core.try_take().r, pool_core::release_kind::broken);
    ASSERT_EQ(h.pending_creates, 1);
    h.fail_create();  // a later failure says nothing
    effects fx2;
    h.core.replenish(fx2);
    h.apply(fx2);
    h.warm();
    EXPECT_EQ(h.core.idle(), 3u);
    EXPECT_EQ(h.readies.size(), 1u) << "once";
}

TEST(ready, close_before_the_pre_warm_is_over_says_closed) {
    rig h(cfg(2, 2, 1), false);
    effects fx;
    h.core.start(fx);
    h.apply(fx);
    ASSERT_EQ(h.pending_creates, 1);
    h.close();
    EXPECT_EQ(h.readies, std::vector<status>{status::closed});
    EXPECT_EQ(h.drained, 0) << "a creation is still under way";
    h.finish_creates();
    EXPECT_EQ(h.readies.size(), 1u);
    EXPECT_EQ(h.destroyed.back().second, destroy_reason::closed);
    EXPECT_EQ(h.drained, 1);
}

TEST(ready, a_pool_closed_after_the_pre_warm_says_nothing_more) {
    rig h(cfg(1, 2));
    h.warm();
    ASSERT_EQ(h.readies, std::vector<status>{status::ok});
    h.close();
    EXPECT_EQ(h.readies.size(), 1u);
    EXPECT_EQ(h.drained, 1) << "the idle resource went at close: nothing left";
}

// ---- drained ---------------------------------------------------------------------------------

TEST(drained, closing_an_empty_pool_drains_at_once) {
    rig h(cfg(0, 2));
    h.close();
    EXPECT_EQ(h.drained, 1);
    EXPECT_TRUE(h.core.drained());
}

TEST(drained, after_the_last_creation_under_way_fails) {
    rig h(cfg(0, 3, 3));
    waiter w1, w2;
    ASSERT_EQ(h.park(w1), status::ok);
    ASSERT_EQ(h.park(w2), status::ok);
    ASSERT_EQ(h.pending_creates, 2);
    h.close();
    EXPECT_EQ(h.drained, 0);
    EXPECT_FALSE(h.core.drained());
    h.finish_creates(1);  // destroyed: closed
    EXPECT_EQ(h.destroyed.back().second, destroy_reason::closed);
    EXPECT_EQ(h.drained, 0) << "one creation is still under way";
    EXPECT_EQ(h.fail_create(), nullptr);
    EXPECT_EQ(h.drained, 1);
    EXPECT_EQ(h.kinds.back(), effect::kind::drained);
    EXPECT_EQ(h.core.total(), 0u);
}

TEST(drained, after_the_last_creation_under_way_succeeds) {
    rig h(cfg(2, 3, 2));
    ASSERT_EQ(h.pending_creates, 2);
    auto leased = h.core.try_take();  // nothing idle yet
    EXPECT_EQ(leased.r, nullptr);
    h.close();
    EXPECT_EQ(h.readies, std::vector<status>{status::closed});
    h.fail_create();
    EXPECT_EQ(h.drained, 0);
    h.finish_creates(1);
    EXPECT_EQ(h.drained, 1);
    EXPECT_EQ(h.kinds.back(), effect::kind::drained);
    EXPECT_EQ(h.readies.size(), 1u) << "the failure after close does not say ready again";
}

TEST(drained, after_the_last_lease_an_inline_creation_and_a_health_check_come_back) {
    rig h(cfg(2, 4));
    h.warm();
    auto lease = h.core.try_take().r;
    h.core.begin_health_round();
    resource* checked = h.core.begin_check();
    ASSERT_NE(checked, nullptr);
    ASSERT_TRUE(h.core.begin_inline_creation());
    h.close();
    EXPECT_EQ(h.drained, 0);
    h.release(lease);
    EXPECT_EQ(h.drained, 0);
    effects fx;
    h.core.end_check(checked, true, fx);
    h.apply(fx);
    EXPECT_EQ(h.destroyed.back().second, destroy_reason::closed);
    EXPECT_EQ(h.drained, 0) << "the inline creation is still under way";
    h.core.inline_failed(fx);
    h.apply(fx);
    EXPECT_EQ(h.drained, 1);
    EXPECT_EQ(h.core.total(), 0u);
}

TEST(drained, an_inline_creation_that_lands_after_close_is_destroyed_and_drains) {
    rig h(cfg(0, 2));
    ASSERT_TRUE(h.core.begin_inline_creation());
    h.close();
    EXPECT_EQ(h.drained, 0);
    effects fx;
    EXPECT_EQ(h.core.inline_created(h.make(), fx), status::closed);
    h.apply(fx);
    EXPECT_EQ(h.destroyed.back().second, destroy_reason::closed);
    EXPECT_EQ(h.drained, 1);
}

// ---- found by the model test's new operations, fixed with these -------------------------------

// retire_all() leaves a place reserved for a woken waiter idle (it is on its way to that waiter). When
// the waiter times out instead, nothing reserves it any more: it is idle and condemned, so it goes now
// rather than being lent once more to whoever comes next.
TEST(retire_all_core, a_reserved_old_resource_whose_waiter_is_cancelled_is_replaced_at_once) {
    rig h(cfg(0, 1));
    waiter w1, w2;
    h.take_or_wait(w1);  // parks; a creation starts for it
    h.finish_creates();
    ASSERT_EQ(h.core.reserved(), 1u) << "the new resource is reserved for w1, whose wake is posted";
    h.posted.clear();
    effects fx;
    h.core.retire_all(fx);
    h.apply(fx);
    EXPECT_TRUE(h.destroyed.empty()) << "the reserved place is spoken for";
    ASSERT_TRUE(h.cancel(w1)) << "w1 leaves while its place is reserved";
    ASSERT_EQ(h.destroyed.size(), 1u) << "the old resource, reserved no more, is replaced now";
    EXPECT_EQ(h.destroyed[0].second, destroy_reason::replaced);
    EXPECT_EQ(h.core.stats().replaced, 1u);
    EXPECT_EQ(h.core.idle(), 0u);
    h.take_or_wait(w2);
    EXPECT_EQ(h.pending_creates, 1) << "the next acquire gets a new-generation resource";
}

TEST(retire_all_core, a_reserved_old_resource_whose_waiter_expires_is_replaced_at_once) {
    rig h(cfg(0, 1));
    waiter w1;
    h.take_or_wait(w1, 10ms);
    h.finish_creates();
    h.posted.clear();  // its resumption has not run yet
    effects fx;
    h.core.retire_all(fx);
    h.apply(fx);
    h.advance(10ms);
    ASSERT_EQ(h.destroyed.size(), 1u);
    EXPECT_EQ(h.destroyed[0].second, destroy_reason::replaced);
}

// A newcomer whose resource a check refused, and who then waits, counts as a wait.
TEST(borrow_checks, a_refused_newcomer_that_parks_counts_as_a_wait) {
    rig h(checked(1, 1));
    h.warm();
    h.lend_all_once();
    waiter w;
    auto t = h.take_or_wait(w);
    ASSERT_EQ(t.check, borrow_check::before_acquire);
    const auto waits = h.core.stats().waits;
    auto v = h.verdict(t.r, false);  // refused; the replacement is being created: w parks
    EXPECT_EQ(v.w, &w);
    EXPECT_EQ(v.t.r, nullptr);
    EXPECT_EQ(h.core.parked(), 1u);
    EXPECT_EQ(h.core.stats().waits, waits + 1);
}

// A resource given back after its borrower left returns to where the next take looks first, in either
// idle order.
TEST(borrow_checks, an_orphaned_pass_goes_back_first_in_line_in_lifo_order_too) {
    config c = checked(2, 2);
    c.lifo = true;
    rig h(c);
    h.warm();
    h.lend_all_once();
    waiter w;
    auto t = h.take_or_wait(w, 1s);
    ASSERT_NE(t.r, nullptr);
    h.advance(1s);  // w times out during the check
    h.verdict(t.r, true);
    ASSERT_EQ(h.core.idle(), 2u);
    EXPECT_EQ(h.core.try_take().r, t.r) << "the next take finds it first";
}
