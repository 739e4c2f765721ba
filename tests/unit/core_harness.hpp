// The sans-io core driven by hand, for the unit tests: plays the Asio driver's part on a fake clock
// (time moves only when a test says so), records wakes in the order the driver would post them, the
// factory calls it would start, and every other effect; checks the core's audit after each call.
#pragma once

#include "core/pool_core.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace core_harness {

using namespace respool::core;
using namespace std::chrono_literals;

struct res : resource {
    int id = 0;
    int destroyed = 0;
};

struct harness {
    // `start_at`: the core's clock starts there (else it stays at the epoch until a test moves it).
    // `start`: call the core's start() (the pre-warm) now, as the driver does right after construction.
    explicit harness(config c, std::optional<time_point> start_at = std::nullopt, bool start = true)
        : core(c) {
        if (start_at) {
            now = *start_at;
            core.set_now(now);
        }
        if (!start) return;
        effects fx;
        core.start(fx);  // once, right after construction: the pre-warm starts
        apply(fx);
    }

    pool_core core;
    time_point now = time_point{} + 1s;
    std::vector<std::unique_ptr<res>> made;
    std::deque<waiter*> posted;                          // wakes, in the order the driver would post them
    std::vector<std::pair<waiter*, status>> fail_wakes;  // the wakes that carry an error
    int pending_creates = 0;
    std::vector<std::pair<int, destroy_reason>> destroyed;  // resource id, reason, in order
    std::vector<int> destroyed_ids;
    std::vector<destroy_reason> destroy_reasons;
    int successes = 0, failures = 0, circuit_changes = 0;
    std::vector<duration> retry_delays;
    std::vector<int> leaks, leaks_returned;
    std::vector<status> readies;      // ready effects, in order
    int drained = 0;                  // drained effects
    std::vector<effect::kind> kinds;  // every effect, in order

    res* make() {
        made.push_back(std::make_unique<res>());
        made.back()->id = static_cast<int>(made.size());
        return made.back().get();
    }
    void apply(effects& fx) {
        for (std::size_t i = 0; i < fx.size(); ++i) {
            const effect& e = fx[i];
            kinds.push_back(e.what);
            switch (e.what) {
            case effect::kind::wake:
                posted.push_back(e.w);
                if (e.st != status::ok) fail_wakes.emplace_back(e.w, e.st);
                break;
            case effect::kind::create: ++pending_creates; break;
            case effect::kind::destroy: {
                auto* r = static_cast<res*>(e.r);
                ++r->destroyed;
                destroyed.emplace_back(r->id, e.reason);
                destroyed_ids.push_back(r->id);
                destroy_reasons.push_back(e.reason);
                break;
            }
            case effect::kind::report_success: ++successes; break;
            case effect::kind::report_failure: ++failures; break;
            case effect::kind::circuit_changed: ++circuit_changes; break;
            case effect::kind::retry_after: retry_delays.push_back(e.d); break;
            case effect::kind::leak_suspected: leaks.push_back(static_cast<res*>(e.r)->id); break;
            case effect::kind::leak_returned: leaks_returned.push_back(static_cast<res*>(e.r)->id); break;
            case effect::kind::ready: readies.push_back(e.st); break;
            case effect::kind::drained: ++drained; break;
            }
        }
        fx.clear();
        audit();
    }
    void audit() const {
        const std::string a = core.audit();
        ASSERT_EQ(a, "") << a;
    }
    // Runs the pending factory calls successfully (all of them by default).
    void finish_creates(int n = -1) {
        if (n < 0) n = pending_creates;
        for (int i = 0; i < n; ++i) {
            --pending_creates;
            effects fx;
            core.creation_succeeded(make(), fx);
            apply(fx);
        }
    }
    waiter* fail_create() {
        --pending_creates;
        effects fx;
        waiter* w = core.creation_failed(fx);
        apply(fx);
        return w;
    }
    // Runs creations until none is pending (the pre-warm started by the constructor, and any it leads to).
    void warm() {
        while (pending_creates) finish_creates();
    }
    // Creates up to min through the queue path, as a health tick's replenish does.
    void prewarm() {
        effects fx;
        core.replenish(fx);
        apply(fx);
        warm();
    }
    pool_core::take_result take() { return core.try_take(); }
    status park(waiter& w, std::optional<duration> timeout = std::nullopt) {
        effects fx;
        status s = core.park(w, now, timeout, fx);
        apply(fx);
        return s;
    }
    status park_until(waiter& w, std::optional<time_point> deadline) {
        effects fx;
        status s = core.park(w, now, deadline, fx);
        apply(fx);
        return s;
    }
    // Park as the driver does: the absolute deadline with the timeout it came from (which picks the lane).
    status park_with(waiter& w, time_point deadline, std::optional<duration> timeout) {
        effects fx;
        status s = core.park(w, now, deadline, timeout, fx);
        apply(fx);
        return s;
    }
    // A newcomer as the driver handles it: take; with a check due, wait for its verdict; with nothing
    // free, park. Returns the take.
    pool_core::take_result take_or_wait(waiter& w, std::optional<duration> timeout = std::nullopt) {
        auto t = core.try_take();
        if (t.r && t.check != borrow_check::none) {
            std::optional<time_point> deadline;
            if (timeout) deadline = deadline_after(now, *timeout);
            core.wait_for_check(w, t.r, now, deadline, timeout);
            audit();
        } else if (!t.r && t.st == status::ok) {
            EXPECT_EQ(park(w, timeout), status::ok);
        }
        return t;
    }
    // Runs the oldest posted resumption.
    pool_core::take_result run_next() {
        EXPECT_FALSE(posted.empty());
        waiter* w = posted.front();
        posted.pop_front();
        effects fx;
        auto t = core.resume(*w, fx);
        apply(fx);
        return t;
    }
    void release(resource* r, pool_core::release_kind k = pool_core::release_kind::ok) {
        effects fx;
        core.release(r, k, fx);
        apply(fx);
    }
    // Time passes and deadlines that came are expired.
    void advance(duration d) {
        now += d;
        effects fx;
        core.expire(now, fx);
        apply(fx);
    }
    // Time passes, nothing expires.
    void tick(duration d) {
        now += d;
        core.set_now(now);
    }
    // The verdict of the check r is under, given at `now`.
    pool_core::verdict verdict(resource* r, bool passed) {
        effects fx;
        auto v = core.check_done(r, passed, now, fx);
        apply(fx);
        return v;
    }
    bool cancel(waiter& w) {
        effects fx;
        bool b = core.cancel(w, fx);
        apply(fx);
        return b;
    }
    void close() {
        effects fx;
        core.close(fx);
        apply(fx);
    }
};

inline config cfg(std::uint32_t min, std::uint32_t max, std::uint32_t mcc = 2) {
    config c;
    c.min = min;
    c.max = max;
    c.max_concurrent_creations = mcc;
    c.reports = true;
    return c;
}

}  // namespace core_harness
