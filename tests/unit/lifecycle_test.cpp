// Lifecycle knobs of the core (docs/01-concepts.md), each through its edge cases on a fake clock: idle_ttl
// eviction, max_lifetime retirement, acquire_ttl leak reports, validation on borrow, creation back-off,
// half-open probe limits. No sleeps: time moves only when a test calls housekeep(now).
#include "core/pool_core.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <vector>

using namespace respool::core;
using namespace std::chrono_literals;

namespace {

struct res : resource {
    int id = 0;
    int destroyed = 0;
};

struct rig {
    explicit rig(config c) : core(c) { core.set_now(now); }
    pool_core core;
    time_point now = time_point{} + 100s;
    std::vector<std::unique_ptr<res>> made;
    std::deque<waiter*> posted;
    int creates = 0;
    std::vector<std::pair<int, destroy_reason>> destroyed;
    std::vector<duration> retries;
    std::vector<int> leaks, returned;  // the line of the acquire each leak report names
    std::vector<duration> leaks_held, returned_held;
    int failures = 0;

    res* make(duration lifetime = {}) {
        made.push_back(std::make_unique<res>());
        made.back()->id = static_cast<int>(made.size());
        if (lifetime > duration::zero()) made.back()->expires_at = now + lifetime;
        return made.back().get();
    }
    void apply(effects& fx) {
        for (std::size_t i = 0; i < fx.size(); ++i) {
            const effect& e = fx[i];
            switch (e.what) {
            case effect::kind::wake: posted.push_back(e.w); break;
            case effect::kind::create: ++creates; break;
            case effect::kind::destroy:
                ++static_cast<res*>(e.r)->destroyed;
                destroyed.emplace_back(static_cast<res*>(e.r)->id, e.reason);
                break;
            case effect::kind::retry_after: retries.push_back(e.d); break;
            case effect::kind::leak_suspected:
                leaks.push_back(static_cast<int>(e.where.line()));
                leaks_held.push_back(e.d);
                break;
            case effect::kind::leak_returned:
                returned.push_back(static_cast<int>(e.where.line()));
                returned_held.push_back(e.d);
                break;
            case effect::kind::report_failure: ++failures; break;
            default: break;
            }
        }
        fx.clear();
        ASSERT_EQ(core.audit(), "");
    }
    void create_all(duration lifetime = {}) {
        while (creates > 0) {
            --creates;
            effects fx;
            core.creation_succeeded(make(lifetime), fx);
            apply(fx);
        }
    }
    void warm(duration lifetime = {}) {
        effects fx;
        core.replenish(fx);
        apply(fx);
        create_all(lifetime);
    }
    void tick(duration d) {
        now += d;
        effects fx;
        core.housekeep(now, fx);
        apply(fx);
    }
    void release(resource* r) {
        effects fx;
        core.release(r, pool_core::release_kind::ok, fx);
        apply(fx);
    }
};

config cfg(std::uint32_t min, std::uint32_t max) {
    config c;
    c.min = min;
    c.max = max;
    c.reports = true;
    return c;
}

}  // namespace

TEST(lifecycle, idle_ttl_evicts_only_resources_idle_longer_and_never_below_min) {
    config c = cfg(1, 4);
    c.idle_ttl = 300s;
    rig h(c);
    auto a = h.core.try_take().r;
    ASSERT_EQ(a, nullptr);
    effects fx;
    resource* r[3];
    for (auto& x : r) {
        ASSERT_TRUE(h.core.begin_inline_creation());
        x = h.make();
        ASSERT_EQ(h.core.inline_created(x, fx), status::ok);
    }
    h.release(r[0]);  // idle since t=100
    h.tick(100s);
    h.release(r[1]);  // idle since t=200
    h.tick(199s);     // t=399: r0 idle 299 s
    EXPECT_TRUE(h.destroyed.empty());
    h.tick(1s);  // t=400: r0 idle 300 s
    ASSERT_EQ(h.destroyed.size(), 1u);
    EXPECT_EQ(h.destroyed[0], std::make_pair(1, destroy_reason::idle_timeout));
    h.tick(100s);  // r1 idle 300 s, but total would drop to... r2 is still leased: total 2 -> 1 = min
    ASSERT_EQ(h.destroyed.size(), 2u);
    h.release(r[2]);
    h.tick(1000s);  // r2 long idle, but it is the last one: min = 1
    EXPECT_EQ(h.destroyed.size(), 2u);
    EXPECT_EQ(h.core.total(), 1u);
    EXPECT_EQ(h.core.stats().evicted, 2u);
}

TEST(lifecycle, eviction_never_takes_a_place_reserved_for_a_waiter) {
    config c = cfg(0, 1);
    c.idle_ttl = 10s;
    rig h(c);
    effects fx;
    ASSERT_TRUE(h.core.begin_inline_creation());
    auto r = h.make();
    h.core.inline_created(r, fx);
    waiter w;
    ASSERT_EQ(h.core.park(w, h.now, std::nullopt, fx), status::ok);
    h.apply(fx);
    h.release(r);  // reserved for w, not yet resumed
    h.tick(1h);
    EXPECT_TRUE(h.destroyed.empty()) << "the reserved resource belongs to its waiter";
    auto t = h.core.resume(w, fx);
    EXPECT_EQ(t.r, r);
}

TEST(lifecycle, evictions_rewarm_to_min) {
    config c = cfg(2, 4);
    c.idle_ttl = 10s;
    rig h(c);
    h.warm();
    // Both idle since t=100; with min 2 nothing may go.
    h.tick(1h);
    EXPECT_TRUE(h.destroyed.empty());
    // Add a third; once it is idle long enough the pool shrinks back to min only.
    effects fx;
    ASSERT_TRUE(h.core.begin_inline_creation());
    auto extra = h.make();
    h.core.inline_created(extra, fx);
    h.release(extra);
    h.tick(10s);
    EXPECT_EQ(h.core.total(), 2u);
    EXPECT_EQ(h.destroyed.size(), 1u);
}

TEST(lifecycle, max_lifetime_retires_idle_resources_and_never_a_leased_one) {
    config c = cfg(1, 2);
    c.lifetimes = true;
    rig h(c);
    h.warm(60s);  // expires at t=160
    auto r = h.core.try_take().r;
    h.tick(120s);  // t=220: expired, but leased
    EXPECT_TRUE(h.destroyed.empty()) << "never retires a leased resource";
    h.release(r);  // retired on release
    ASSERT_EQ(h.destroyed.size(), 1u);
    EXPECT_EQ(h.destroyed[0].second, destroy_reason::lifetime);
    EXPECT_EQ(h.creates, 1) << "the floor is re-warmed";
    h.create_all(60s);  // the replacement expires at t=280
    h.tick(59s);
    EXPECT_EQ(h.destroyed.size(), 1u);
    h.tick(1s);  // idle and expired: retired by housekeeping
    EXPECT_EQ(h.destroyed.size(), 2u);
    EXPECT_EQ(h.core.stats().retired, 2u);
}

TEST(lifecycle, acquire_ttl_reports_a_leak_once_and_again_when_it_returns) {
    config c = cfg(1, 1);
    c.acquire_ttl = 30s;
    rig h(c);
    h.warm();
    const auto at = respool::source_location::current();
    auto r = h.core.try_take(at).r;
    h.tick(29s);
    EXPECT_TRUE(h.leaks.empty());
    h.tick(1s);
    ASSERT_EQ(h.leaks, std::vector<int>{static_cast<int>(at.line())}) << "the report names the acquire";
    EXPECT_EQ(h.leaks_held, std::vector<duration>{30s});
    h.tick(60s);
    EXPECT_EQ(h.leaks.size(), 1u) << "once per lease";
    h.release(r);
    EXPECT_EQ(h.returned, std::vector<int>{static_cast<int>(at.line())});
    EXPECT_EQ(h.returned_held, std::vector<duration>{90s});
    auto again = h.core.try_take().r;
    h.tick(10s);
    EXPECT_EQ(h.leaks.size(), 1u) << "a new lease starts a new clock";
    h.release(again);
    EXPECT_EQ(h.returned.size(), 1u) << "a lease that was not reported is not 'returned'";
    EXPECT_EQ(h.core.stats().leaks, 1u);
}

// A report is a value: it names the acquire a parked waiter made (lent on its resumption, not at its
// take), and the report of a lease given back poisoned carries its time and site itself, beside the
// destroy effect of its resource (the driver runs both after unlocking; tests/asio/lifecycle_test.cpp
// destroys the resource before the report runs).
TEST(lifecycle, a_leak_report_carries_the_waiters_site_and_time_by_value) {
    config c = cfg(1, 1);
    c.acquire_ttl = 30s;
    rig h(c);
    h.warm();
    auto first = h.core.try_take().r;
    waiter w;
    w.where = respool::source_location::current();
    effects fx;
    ASSERT_EQ(h.core.park(w, h.now, std::nullopt, fx), status::ok);
    h.apply(fx);
    h.tick(10s);
    h.release(first);  // reserved for w
    ASSERT_EQ(h.posted.size(), 1u);
    const auto t = h.core.resume(w, fx);
    h.apply(fx);
    ASSERT_EQ(t.r, first);
    EXPECT_TRUE(h.leaks.empty()) << "the first lease was given back after 10 s";
    h.tick(31s);
    ASSERT_EQ(h.leaks, std::vector<int>{static_cast<int>(w.where.line())});
    EXPECT_EQ(h.leaks_held, std::vector<duration>{31s});

    effects report;  // its report as it comes back, kept while its resource is poisoned and destroyed
    h.core.release(t.r, pool_core::release_kind::poisoned, report);
    ASSERT_GE(report.size(), 2u);
    EXPECT_EQ(report[0].what, effect::kind::leak_returned);
    EXPECT_EQ(report[0].where.line(), w.where.line());
    EXPECT_EQ(report[0].d, 31s);
    h.apply(report);
    EXPECT_EQ(static_cast<res*>(first)->destroyed, 1);
}

TEST(lifecycle, an_acquire_ttl_of_duration_max_never_reports_a_leak) {
    config c = cfg(1, 1);
    c.acquire_ttl = duration::max();  // "a very long time": leased_at + acquire_ttl must not wrap
    rig h(c);
    h.warm();
    auto r = h.core.try_take().r;
    ASSERT_NE(r, nullptr);
    h.tick(24h * 365);
    EXPECT_TRUE(h.leaks.empty());
    h.release(r);
    EXPECT_TRUE(h.returned.empty());
}

TEST(lifecycle, an_idle_ttl_of_duration_max_never_evicts) {
    config c = cfg(0, 1);
    c.idle_ttl = duration::max();  // idle_since + idle_ttl must not wrap
    rig h(c);
    effects fx;
    ASSERT_TRUE(h.core.begin_inline_creation());
    auto r = h.make();
    ASSERT_EQ(h.core.inline_created(r, fx), status::ok);
    h.release(r);
    h.tick(24h * 365);
    EXPECT_TRUE(h.destroyed.empty());
    EXPECT_EQ(h.core.idle(), 1u);
}

TEST(lifecycle, validation_on_borrow_only_for_resources_idle_past_the_threshold) {
    config c = cfg(1, 1);
    c.before_acquire = true;
    c.validate_on_borrow = true;
    c.validate_after = 5s;
    rig h(c);
    h.warm();
    effects fx;
    auto t = h.core.try_take();
    ASSERT_NE(t.r, nullptr);
    EXPECT_EQ(t.check, borrow_check::before_acquire) << "idle 0 s: no validation; pre-warmed: before_acquire";
    auto first = h.core.check_done(t.r, true, h.now, fx);
    h.apply(fx);
    EXPECT_EQ(first.t.check, borrow_check::none);
    EXPECT_EQ(h.core.stats().acquires, 1u);
    h.release(t.r);
    h.tick(5s);
    t = h.core.try_take();
    EXPECT_EQ(t.check, borrow_check::before_acquire) << "idle exactly the threshold: no validation";
    auto v = h.core.check_done(t.r, true, h.now, fx);
    h.apply(fx);
    EXPECT_EQ(v.t.r, t.r);
    EXPECT_EQ(v.t.check, borrow_check::none);
    h.release(t.r);
    h.tick(6s);
    t = h.core.try_take();
    EXPECT_EQ(t.check, borrow_check::validate) << "idle longer than the threshold";
    v = h.core.check_done(t.r, false, h.now, fx);  // validation failed: destroyed and reported
    h.apply(fx);
    EXPECT_EQ(v.w, nullptr);
    EXPECT_EQ(v.t.st, status::ok);
    EXPECT_EQ(v.t.r, nullptr) << "the synchronous caller takes again itself";
    EXPECT_EQ(h.failures, 1) << "a failed validation is a failure for the circuit strategy";
    EXPECT_EQ(h.destroyed.back().second, destroy_reason::rejected);
    EXPECT_EQ(h.core.stats().rejected, 1u);
    EXPECT_EQ(h.core.stats().acquires, 2u) << "the rejected take is not an acquire";
}

TEST(lifecycle, creation_backoff_doubles_caps_and_resets_on_success) {
    config c = cfg(0, 4);
    c.max_concurrent_creations = 1;
    c.retry_initial = 10ms;
    c.retry_max = 40ms;
    rig h(c);
    std::vector<waiter> ws(8);
    effects fx;
    for (auto& w : ws) ASSERT_EQ(h.core.park(w, h.now, std::nullopt, fx), status::ok);
    h.apply(fx);
    ASSERT_EQ(h.creates, 1);
    for (int i = 0; i < 4; ++i) {
        --h.creates;
        EXPECT_NE(h.core.creation_failed(fx), nullptr) << "each failure reaches the oldest waiter at once";
        h.apply(fx);
        EXPECT_EQ(h.creates, 0) << "no retry storm: nothing starts during the back-off";
        h.core.backoff_elapsed(fx);
        h.apply(fx);
        EXPECT_EQ(h.creates, 1) << "demand remains: the next attempt starts";
    }
    EXPECT_EQ(h.retries, (std::vector<duration>{10ms, 20ms, 40ms, 40ms}));
    --h.creates;
    h.core.creation_succeeded(h.make(), fx);
    h.apply(fx);
    --h.creates;
    h.core.creation_failed(fx);
    h.apply(fx);
    EXPECT_EQ(h.retries.back(), 10ms) << "a success resets the back-off";
    EXPECT_EQ(h.core.stats().creation_retries, 5u);
}

TEST(lifecycle, creation_backoff_with_an_unbounded_cap_saturates_instead_of_overflowing) {
    config c = cfg(0, 4);
    c.max_concurrent_creations = 1;
    c.retry_initial = 1h;
    c.retry_max = duration::max();  // no cap: doubling must stop at the largest duration, not wrap
    rig h(c);
    std::vector<waiter> ws(80);
    effects fx;
    for (auto& w : ws) ASSERT_EQ(h.core.park(w, h.now, std::nullopt, fx), status::ok);
    h.apply(fx);
    for (int i = 0; i < 70; ++i) {
        ASSERT_EQ(h.creates, 1);
        --h.creates;
        h.core.creation_failed(fx);
        h.apply(fx);
        h.core.backoff_elapsed(fx);
        h.apply(fx);
    }
    ASSERT_EQ(h.retries.size(), 70u);
    for (std::size_t i = 1; i < h.retries.size(); ++i)
        ASSERT_GE(h.retries[i], h.retries[i - 1]) << "failure " << i << ": the delay never shrinks";
    EXPECT_EQ(h.retries.front(), 1h);
    EXPECT_EQ(h.retries.back(), duration::max());
}

TEST(lifecycle, backoff_without_waiters_does_not_retry_until_demand_or_floor) {
    config c = cfg(1, 2);
    c.retry_initial = 10ms;
    c.retry_max = 1s;
    rig h(c);
    effects fx;
    h.core.replenish(fx);
    h.apply(fx);
    --h.creates;
    EXPECT_EQ(h.core.creation_failed(fx), nullptr);
    h.apply(fx);
    EXPECT_EQ(h.retries.size(), 1u);
    h.tick(1s);  // housekeeping re-warms the floor only after the back-off
    EXPECT_EQ(h.creates, 0);
    h.core.backoff_elapsed(fx);
    h.apply(fx);
    EXPECT_EQ(h.creates, 1) << "the floor (min 1) is demand";
}

TEST(lifecycle, retry_now_ends_the_backoff_and_starts_the_next_one_from_the_beginning) {
    config c = cfg(1, 2);
    c.max_concurrent_creations = 1;
    c.retry_initial = 10ms;
    c.retry_max = 10s;
    rig h(c);
    effects fx;
    h.core.replenish(fx);
    h.apply(fx);
    for (int i = 0; i < 5; ++i) {  // the source down: 10, 20, 40, 80, 160 ms
        --h.creates;
        h.core.creation_failed(fx);
        h.apply(fx);
        EXPECT_EQ(h.creates, 0);
        if (i < 4) {
            h.core.backoff_elapsed(fx);
            h.apply(fx);
        }
    }
    EXPECT_EQ(h.retries.back(), 160ms);
    h.core.retry_now(fx);  // a monitor saw it back: no waiting out the 160 ms
    h.apply(fx);
    EXPECT_EQ(h.creates, 1) << "the floor is re-warmed at once";
    --h.creates;
    h.core.creation_failed(fx);
    h.apply(fx);
    EXPECT_EQ(h.retries.back(), 10ms) << "the next back-off starts from retry_initial";
    h.core.backoff_elapsed(fx);  // the old timer, had it rung late, changes nothing more
    h.apply(fx);
    EXPECT_EQ(h.creates, 1);
}

TEST(lifecycle, half_open_admits_at_most_the_probe_budget) {
    config c = cfg(3, 3);
    rig h(c);
    h.warm();
    effects fx;
    h.core.set_circuit(circuit::open, fx);
    h.core.set_circuit(circuit::half_open, fx, 2);
    h.apply(fx);
    auto a = h.core.try_take(), b = h.core.try_take(), d = h.core.try_take();
    EXPECT_NE(a.r, nullptr);
    EXPECT_NE(b.r, nullptr);
    EXPECT_EQ(d.st, status::unavailable) << "the third acquire is beyond the budget";
    EXPECT_EQ(h.core.stats().probes, 2u);
    h.core.set_circuit(circuit::closed, fx);
    h.apply(fx);
    EXPECT_NE(h.core.try_take().r, nullptr);
    EXPECT_EQ(h.core.stats().circuit_opened, 1u);
    EXPECT_EQ(h.core.stats().circuit_half_opened, 1u);
    EXPECT_EQ(h.core.stats().circuit_closed, 1u);
}
