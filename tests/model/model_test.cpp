// Random operation sequences on the sans-io core, checked after every step against
//  (a) a small reference model written with plain containers (std::deque / std::vector, linear
//      scans, no intrusive lists, no ring, no deadline heap), which must predict every effect. It
//      follows the core rule for rule, so it is a differential test of the data structures, not an
//      independent judge of the rules; hence
//  (b) oracles in the harness, written from SPEC.md and the harness's own records, not from the core
//      or the model: each resource destroyed exactly once and never held twice; total <= max and equal
//      to what the harness created and did not destroy; every acquire completes exactly once; close
//      leaves nothing; parked waiters are handed places in arrival order and a newcomer never takes a
//      place while a waiter is parked (§1.3, §5.3); no waiter stays parked while a place is idle and
//      unreserved, or while capacity is free and fewer creations run than the rules require (§1.2,
//      §5.4); a timeout fires exactly when a waiter's own deadline has come; the inline fast paths
//      (take_fast, release_fast) apply exactly when nothing needs the general path.
// Waiters get per-waiter deadlines: distinct (nanosecond resolution), shared, absolute, in the past,
// duration::max() and time_point::max().
// RESPOOL_MODEL_OPS sets the number of operations (default 1,000,000); RESPOOL_MODEL_SEED replays a
// run. The seed is printed on failure.
#include "core/pool_core.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

using namespace respool::core;
using namespace std::chrono_literals;

namespace {

// now + d, clamped to the clock's range; checked with the compiler's overflow builtin, not with the
// core's deadline_after.
time_point saturating_after(time_point now, duration d) {
    duration::rep sum;
    if (__builtin_add_overflow(now.time_since_epoch().count(), d.count(), &sum))
        return d > duration::zero() ? time_point::max() : time_point::min();
    return time_point(duration(sum));
}

// ---- the reference model ---------------------------------------------------------------------

struct m_effect {
    effect::kind what;
    int waiter = -1;  // waiter slot
    int res = -1;     // resource id
    destroy_reason reason = destroy_reason::closed;
    status st = status::ok;
    long long d = 0;  // retry_after delay, ns
    bool operator==(const m_effect&) const = default;
    bool operator<(const m_effect& o) const {
        return std::tie(what, waiter, res, reason, st, d) <
               std::tie(o.what, o.waiter, o.res, o.reason, o.st, o.d);
    }
};

struct model {
    enum class ws { none, parked, reserved, failed };
    struct mw {
        ws state = ws::none;
        std::uint64_t seq = 0;
        bool has_deadline = false;
        time_point deadline{};
        status result = status::ok;
        bool counted = false;
    };

    struct mres {
        time_point idle_since{}, leased_at{}, expires_at{};
        bool leased = false, leak_reported = false, fresh = true;
    };

    config cfg;
    std::deque<int> idle;
    std::map<int, std::uint64_t> checked;  // resource -> tick
    std::map<int, mres> res;
    time_point clock_now{};
    std::uint32_t failures_in_row = 0, probe_limit = 0, probes_admitted = 0;
    bool backoff_active = false;
    std::vector<int> parked;    // waiter slots in arrival order
    std::vector<int> reserved;  // waiter slots in reservation order
    std::vector<mw> w;
    std::uint32_t active = 0, creating = 0;
    std::uint64_t seq = 1;
    circuit circ = circuit::closed;
    bool closed = false, floor_blocked = false;
    counters c;
    std::vector<m_effect> fx;

    model(config k, int slots) : cfg(k), w(static_cast<std::size_t>(slots)) {}

    std::uint32_t total() const { return static_cast<std::uint32_t>(idle.size()) + active; }
    std::uint32_t waiting() const { return static_cast<std::uint32_t>(parked.size() + reserved.size()); }
    std::uint32_t n_reserved() const { return static_cast<std::uint32_t>(reserved.size()); }

    int pop_idle() {
        int r;
        if (cfg.lifo) {
            r = idle.back();
            idle.pop_back();
        } else {
            r = idle.front();
            idle.pop_front();
        }
        return r;
    }
    void destroy(int r, destroy_reason why) {
        ++c.destructions;
        fx.push_back({effect::kind::destroy, -1, r, why});
    }
    void report_failure(status st) {
        if (cfg.reports) fx.push_back({effect::kind::report_failure, -1, -1, destroy_reason::closed, st});
    }
    bool probes_exhausted() const {
        return circ == circuit::half_open && probe_limit != 0 && probes_admitted >= probe_limit;
    }
    std::pair<status, int> lend(int r, bool* validate = nullptr) {
        ++active;
        if (!cfg.confirm_takes) ++c.acquires;
        if (circ == circuit::half_open) {
            ++probes_admitted;
            ++c.probes;
        }
        if (cfg.acquire_ttl > duration::zero()) {
            res[r].leased = true;
            res[r].leak_reported = false;
            res[r].leased_at = clock_now;
        }
        if (!cfg.confirm_takes) {
            if (validate) *validate = false;
            return {status::ok, r};
        }
        res[r].fresh = false;
        if (validate)
            *validate = cfg.validate_on_borrow && clock_now - res[r].idle_since > cfg.validate_after;
        return {status::ok, r};
    }
    void unlend(int r) {
        if (!res[r].leased) return;
        res[r].leased = false;
    }
    void creation_failure() {
        ++c.create_failures;
        ++failures_in_row;
        report_failure(status::create_failed);
        if (closed || cfg.retry_initial <= duration::zero()) return;
        duration d = cfg.retry_initial;
        for (std::uint32_t i = 1; i < failures_in_row && d < cfg.retry_max; ++i) d *= 2;
        if (cfg.retry_max > duration::zero() && d > cfg.retry_max) d = cfg.retry_max;
        if (!backoff_active) {
            backoff_active = true;
            ++c.creation_retries;
            m_effect e{effect::kind::retry_after};
            e.d = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
            fx.push_back(e);
        }
    }
    void reserve_for_parked() {
        while (!parked.empty() && idle.size() > reserved.size()) {
            int s = parked.front();
            parked.erase(parked.begin());
            reserved.push_back(s);
            w[s].state = ws::reserved;
            fx.push_back({effect::kind::wake, s});
        }
    }
    void maybe_create() {
        if (closed || circ == circuit::open || backoff_active) return;
        while (total() < cfg.max && creating < cfg.max_concurrent_creations &&
               (creating < parked.size() || (!floor_blocked && total() < cfg.min))) {
            ++creating;
            ++active;
            fx.push_back({effect::kind::create});
        }
    }
    void fail(int s, status st) {
        w[s].result = st;
        if (w[s].state == ws::parked) {
            parked.erase(std::find(parked.begin(), parked.end(), s));
            w[s].state = ws::failed;
            fx.push_back({effect::kind::wake, s, -1, destroy_reason::closed, st});
        } else {
            reserved.erase(std::find(reserved.begin(), reserved.end(), s));
            w[s].state = ws::failed;
        }
    }
    void fail_all(status st) {
        while (!parked.empty()) {
            if (st == status::unavailable) ++c.unavailable_rejections;
            fail(parked.front(), st);
        }
        while (!reserved.empty()) {
            if (st == status::unavailable) ++c.unavailable_rejections;
            fail(reserved.front(), st);
        }
    }
    std::pair<status, int> try_take(bool* validate = nullptr) {
        if (closed) return {status::closed, -1};
        if (circ == circuit::open || probes_exhausted()) {
            ++c.unavailable_rejections;
            return {status::unavailable, -1};
        }
        if (idle.size() > reserved.size()) {
            ++c.immediate_takes;
            return lend(pop_idle(), validate);
        }
        return {status::ok, -1};
    }
    status park(int s, time_point t_now, std::optional<time_point> t) {
        if (cfg.max_waiters && waiting() >= cfg.max_waiters) {
            ++c.exhausted_rejections;
            return status::exhausted;
        }
        if (t && *t <= t_now) {
            ++c.timeouts;
            return status::timeout;
        }
        w[s].seq = seq++;
        w[s].state = ws::parked;
        w[s].result = status::ok;
        if (!w[s].counted) {
            w[s].counted = true;
            ++c.waits;
        }
        parked.push_back(s);
        w[s].has_deadline = t.has_value();
        if (t) w[s].deadline = *t;
        maybe_create();
        return status::ok;
    }
    std::pair<status, int> resume(int s, bool* validate = nullptr) {
        if (w[s].state == ws::failed) {
            w[s].state = ws::none;
            return {w[s].result, -1};
        }
        reserved.erase(std::find(reserved.begin(), reserved.end(), s));
        w[s].state = ws::none;
        if (probes_exhausted()) {
            ++c.unavailable_rejections;
            reserve_for_parked();
            return {status::unavailable, -1};
        }
        return lend(pop_idle(), validate);
    }
    std::pair<status, int> retry(int s, time_point t_now) {
        auto t = try_take();
        if (t.first != status::ok || t.second >= 0) return t;
        if (w[s].has_deadline && w[s].deadline <= t_now) {
            ++c.timeouts;
            return {status::timeout, -1};
        }
        w[s].state = ws::parked;
        auto at = std::find_if(parked.begin(), parked.end(), [&](int o) { return w[o].seq > w[s].seq; });
        parked.insert(at, s);
        maybe_create();
        return {status::ok, -1};
    }
    bool cancel(int s) {
        if (w[s].state != ws::parked && w[s].state != ws::reserved) return false;
        bool had = w[s].state == ws::reserved;
        ++c.cancellations;
        fail(s, status::cancelled);
        if (had) reserve_for_parked();
        return true;
    }
    void expire(time_point t_now) {
        bool handed = false;
        std::vector<int> due;
        for (int s : parked)
            if (w[s].has_deadline && w[s].deadline <= t_now) due.push_back(s);
        for (int s : reserved)
            if (w[s].has_deadline && w[s].deadline <= t_now) due.push_back(s);
        // Earliest deadline first; equal deadlines in arrival order.
        std::sort(due.begin(), due.end(), [&](int a, int b) {
            return std::tie(w[a].deadline, w[a].seq) < std::tie(w[b].deadline, w[b].seq);
        });
        for (int s : due) {
            handed |= w[s].state == ws::reserved;
            ++c.timeouts;
            fail(s, status::timeout);
        }
        if (handed) reserve_for_parked();
    }
    std::optional<time_point> next_deadline() const {
        std::optional<time_point> best;
        for (const auto* v : {&parked, &reserved})
            for (int s : *v)
                if (w[s].has_deadline && (!best || w[s].deadline < *best)) best = w[s].deadline;
        return best;
    }
    status confirm_take(int r) {
        if (closed) {
            unlend(r);
            --active;
            destroy(r, destroy_reason::closed);
            return status::closed;
        }
        ++c.acquires;
        return status::ok;
    }
    void reject(int r) {
        unlend(r);
        --active;
        ++c.rejected;
        destroy(r, destroy_reason::rejected);
        report_failure(status::ok);
        maybe_create();
    }
    void give_back(int r) {
        unlend(r);
        --active;
        if (closed) return destroy(r, destroy_reason::closed);
        idle.push_front(r);
        reserve_for_parked();
    }
    void release(int r, pool_core::release_kind k) {
        --active;
        if (res[r].leased) {
            unlend(r);
            if (res[r].leak_reported) fx.push_back({effect::kind::leak_returned, -1, r});
        }
        if (k != pool_core::release_kind::ok) {
            if (k == pool_core::release_kind::poisoned)
                ++c.poisoned;
            else
                ++c.broken;
            destroy(r, k == pool_core::release_kind::poisoned ? destroy_reason::poisoned
                                                              : destroy_reason::broken);
            report_failure(status::ok);
            maybe_create();
            return;
        }
        if (cfg.reports) fx.push_back({effect::kind::report_success});
        if (closed) return destroy(r, destroy_reason::closed);
        if (cfg.lifetimes && res[r].expires_at != time_point{} && res[r].expires_at <= clock_now) {
            ++c.retired;
            destroy(r, destroy_reason::lifetime);
            maybe_create();
            return;
        }
        if (cfg.idle_ttl > duration::zero() || cfg.validate_on_borrow) res[r].idle_since = clock_now;
        idle.push_back(r);
        reserve_for_parked();
    }
    void creation_succeeded(int r) {
        --creating;
        --active;
        ++c.creations;
        if (closed) return destroy(r, destroy_reason::closed);
        floor_blocked = false;
        failures_in_row = 0;
        res[r].idle_since = clock_now;
        res[r].fresh = true;
        idle.push_back(r);
        reserve_for_parked();
        maybe_create();
    }
    int creation_failed() {
        --creating;
        --active;
        creation_failure();
        if (closed) return -1;
        int s = parked.empty() ? -1 : parked.front();
        if (s >= 0)
            fail(s, status::create_failed);
        else if (!backoff_active)
            floor_blocked = true;
        maybe_create();
        return s;
    }
    void backoff_elapsed() {
        backoff_active = false;
        maybe_create();
    }
    void housekeep(time_point t) {
        if (t > clock_now) clock_now = t;
        if (closed) return;
        const std::size_t n = idle.size();
        std::deque<int> kept;
        for (std::size_t i = 0; i < n; ++i) {
            int r = idle.front();
            idle.pop_front();
            const std::size_t remaining = idle.size() + kept.size();
            const bool spare = remaining >= reserved.size();
            const std::uint32_t tot = static_cast<std::uint32_t>(remaining) + active;
            if (spare && res[r].expires_at != time_point{} && res[r].expires_at <= clock_now) {
                ++c.retired;
                destroy(r, destroy_reason::lifetime);
            } else if (spare && cfg.idle_ttl > duration::zero() &&
                       res[r].idle_since + cfg.idle_ttl <= clock_now && tot >= cfg.min) {
                ++c.evicted;
                destroy(r, destroy_reason::idle_timeout);
            } else {
                kept.push_back(r);
            }
        }
        idle = kept;
        if (cfg.acquire_ttl > duration::zero()) {
            std::vector<int> leased_now;
            for (auto& [id, m] : res)
                if (m.leased && !m.leak_reported && m.leased_at + cfg.acquire_ttl <= clock_now)
                    leased_now.push_back(id);
            for (int id : leased_now) {
                res[id].leak_reported = true;
                ++c.leaks;
                fx.push_back({effect::kind::leak_suspected, -1, id});
            }
        }
        replenish();
    }
    bool begin_inline() {
        if (closed || circ == circuit::open || probes_exhausted() || backoff_active || !parked.empty())
            return false;
        if (total() >= cfg.max || creating >= cfg.max_concurrent_creations) return false;
        ++creating;
        ++active;
        return true;
    }
    status inline_created(int r) {
        --creating;
        ++c.creations;
        failures_in_row = 0;
        if (closed) {
            --active;
            destroy(r, destroy_reason::closed);
            return status::closed;
        }
        --active;
        lend(r);
        return status::ok;
    }
    void inline_failed() {
        --creating;
        --active;
        creation_failure();
        maybe_create();
    }
    int begin_check(std::uint64_t tick) {
        if (closed || idle.size() <= reserved.size()) return -1;
        int r = idle.front();
        if (checked[r] == tick) return -1;
        idle.pop_front();
        checked[r] = tick;
        ++active;
        return r;
    }
    void end_check(int r, bool healthy) {
        --active;
        if (!healthy) {
            ++c.unhealthy;
            destroy(r, destroy_reason::unhealthy);
            maybe_create();
            return;
        }
        if (closed) return destroy(r, destroy_reason::closed);
        idle.push_back(r);
        reserve_for_parked();
    }
    void replenish() {
        floor_blocked = false;
        maybe_create();
    }
    void set_circuit(circuit s, std::uint32_t probes) {
        if (s == circuit::half_open) {
            probe_limit = probes;
            probes_admitted = 0;
        }
        if (s == circ) return;
        circ = s;
        if (s == circuit::open)
            ++c.circuit_opened;
        else if (s == circuit::half_open)
            ++c.circuit_half_opened;
        else
            ++c.circuit_closed;
        fx.push_back({effect::kind::circuit_changed});
        if (s == circuit::open)
            fail_all(status::unavailable);
        else
            maybe_create();
    }
    bool close() {
        if (closed) return false;
        closed = true;
        fail_all(status::closed);
        while (!idle.empty()) {
            int r = idle.front();
            idle.pop_front();
            destroy(r, destroy_reason::closed);
        }
        return true;
    }
};

// ---- the harness -----------------------------------------------------------------------------

struct res : resource {
    int id = 0;
};

bool same_counters(const counters& a, const counters& b) {
    return a == b;
}

class run {
public:
    static constexpr int slots = 24;

    run(std::uint64_t seed, config cfg, bool lifetimes)
        : rng_(seed), cfg_(cfg), core_(cfg), model_(cfg, slots) {
        lifetimes_ = lifetimes;
        waiters_.resize(slots);
        slot_state_.assign(slots, slot::free);
        completions_.assign(slots, 0);
        starts_.assign(slots, 0);
        arrival_.assign(slots, 0);
        parked_at_.assign(slots, 0);
        woken_at_.assign(slots, 0);
        woken_with_place_.assign(slots, false);
        deadline_.assign(slots, std::nullopt);
    }

    // Returns "" or the first divergence.
    std::string step(int op_index) {
        op_ = op_index;
        const int pick = static_cast<int>(rng_() % 1000);
        if (pick < 250)
            op_acquire();
        else if (pick < 310)
            op_try_acquire();
        else if (pick < 530)
            op_release();
        else if (pick < 570)
            op_cancel();
        else if (pick < 650)
            op_advance();
        else if (pick < 830)
            op_run_wake();
        else if (pick < 935)
            op_finish_create();
        else if (pick < 947)
            op_housekeep();
        else if (pick < 967)
            op_backoff_elapsed();
        else if (pick < 980)
            op_health();
        else if (pick < 985)
            op_circuit();
        else if (pick < 990)
            op_replenish();
        else if (pick < 993)
            op_housekeep();
        else if (pick < 995)
            op_backoff_elapsed();
        else if (pick < 996 && rng_() % 4 == 0)
            op_close();
        check_places();
        return error_;
    }

    // Close, run everything to completion, and check SPEC §5.6 plus exactly-once completion.
    std::string finish() {
        op_close();
        for (int guard = 0; guard < 100000 && error_.empty(); ++guard) {
            if (!posted_.empty())
                op_run_wake();
            else if (pending_creates_ > 0)
                op_finish_create();
            else if (retry_pending_)
                op_backoff_elapsed();
            else if (!held_.empty())
                op_release();
            else
                break;
            check_places();
        }
        if (!error_.empty()) return error_;
        for (int s = 0; s < slots; ++s)
            if (starts_[s] != completions_[s])
                return err("acquire in slot " + std::to_string(s) + " started " + std::to_string(starts_[s]) +
                           " times but completed " + std::to_string(completions_[s]));
        if (core_.total() != 0 || core_.waiting() != 0)
            return err("closed and drained pool still holds resources");
        for (auto& [id, n] : destroyed_)
            if (n != 1)
                return err("resource " + std::to_string(id) + " destroyed " + std::to_string(n) + " times");
        if (destroyed_.size() != made_.size()) return err("some created resources were never destroyed");
        return "";
    }

    std::uint64_t acquires() const { return core_.stats().acquires; }
    std::uint64_t fast_takes() const { return fast_takes_; }
    std::uint64_t fast_releases() const { return fast_releases_; }

private:
    enum class slot { free, parked, posted };

    std::string err(const std::string& what) {
        if (error_.empty()) error_ = "op " + std::to_string(op_) + ": " + what;
        return error_;
    }

    int new_resource() {
        made_.push_back(std::make_unique<res>());
        made_.back()->id = static_cast<int>(made_.size());
        if (lifetimes_) {  // the driver sets expires_at (with jitter) before handing it to the core
            made_.back()->expires_at = now_ + std::chrono::milliseconds(5 + rng_() % 100);
            model_.res[made_.back()->id].expires_at = made_.back()->expires_at;
        }
        return made_.back()->id;
    }
    res* resource_of(int id) { return made_[static_cast<std::size_t>(id - 1)].get(); }
    static int id_of(resource* r) { return r ? static_cast<res*>(r)->id : -1; }
    int slot_of(waiter* w) { return static_cast<int>(w - waiters_.data()); }

    // Translates core effects, compares them with the model's, and applies them.
    void settle(effects& fx, bool unordered = false) {
        std::vector<m_effect> got;
        for (std::size_t i = 0; i < fx.size(); ++i) {
            const effect& e = fx[i];
            m_effect m{e.what};
            if (e.what == effect::kind::wake) {
                m.waiter = slot_of(e.w);
                m.st = e.st;
            }
            if (e.what == effect::kind::destroy) {
                m.res = id_of(e.r);
                m.reason = e.reason;
            }
            if (e.what == effect::kind::report_failure) m.st = e.st;
            if (e.what == effect::kind::retry_after)
                m.d = std::chrono::duration_cast<std::chrono::nanoseconds>(e.d).count();
            if (e.what == effect::kind::leak_suspected || e.what == effect::kind::leak_returned)
                m.res = id_of(e.r);
            got.push_back(m);
        }
        fx.clear();
        auto want = model_.fx;
        model_.fx.clear();
        if (unordered) {
            std::sort(got.begin(), got.end());
            std::sort(want.begin(), want.end());
        }
        if (got != want) {
            std::ostringstream o;
            o << "effects differ: core emitted " << got.size() << ", model " << want.size() << " [";
            for (auto& g : got) o << int(g.what) << ":" << g.waiter << "/" << g.res << " ";
            o << "] vs [";
            for (auto& g : want) o << int(g.what) << ":" << g.waiter << "/" << g.res << " ";
            o << "]";
            err(o.str());
            return;
        }
        for (auto& e : got) {
            switch (e.what) {
            case effect::kind::wake:
                if (slot_state_[e.waiter] != slot::parked) err("wake for a waiter that was not parked");
                slot_state_[e.waiter] = slot::posted;
                posted_.push_back(e.waiter);
                woken_with_place_[e.waiter] = e.st == status::ok;
                if (e.st == status::ok) {
                    woken_at_[e.waiter] = ++clock_;
                    // §1.3: a freed place goes to the oldest waiter still parked.
                    if (older_parked(e.waiter, woken_at_[e.waiter]) >= 0)
                        err("a place went to a younger waiter while an older one was parked");
                }
                if (e.st == status::timeout && !deadline_has_come(e.waiter))
                    err("a waiter timed out before its deadline");
                break;
            case effect::kind::create: ++pending_creates_; break;
            case effect::kind::retry_after:
                if (retry_pending_) err("a second retry_after while one is pending");
                retry_pending_ = true;
                break;
            case effect::kind::leak_suspected:
                if (!held_by_.count(e.res)) err("leak reported for a resource nobody holds");
                break;
            case effect::kind::destroy:
                if (held_by_.count(e.res)) err("destroyed a resource that is leased");
                ++destroyed_[e.res];
                if (destroyed_[e.res] > 1) err("resource " + std::to_string(e.res) + " destroyed twice");
                break;
            default: break;
            }
        }
        check();
    }

    void check() {
        if (!error_.empty()) return;
        const std::string a = core_.audit();
        if (!a.empty()) return void(err("core audit: " + a));
        const snapshot s = core_.snap();
        if (s.idle != model_.idle.size() || s.active != model_.active || s.waiting != model_.waiting() ||
            s.reserved != model_.n_reserved() || s.creating != model_.creating || s.total > s.max ||
            s.total != s.idle + s.active || !same_counters(s.c, model_.c)) {
            std::ostringstream o;
            o << "snapshot differs from the model: idle " << s.idle << "/" << model_.idle.size() << " active "
              << s.active << "/" << model_.active << " waiting " << s.waiting << "/" << model_.waiting()
              << " reserved " << s.reserved << "/" << model_.n_reserved() << " creating " << s.creating << "/"
              << model_.creating << " acquires " << s.c.acquires << "/" << model_.c.acquires << " timeouts "
              << s.c.timeouts << "/" << model_.c.timeouts << " destructions " << s.c.destructions << "/"
              << model_.c.destructions << " unavailable " << s.c.unavailable_rejections << "/"
              << model_.c.unavailable_rejections;
            return void(err(o.str()));
        }
        for (std::size_t i = 0; i < model_.idle.size(); ++i)
            if (id_of(core_.idle_at(i)) != model_.idle[i])
                return void(err("idle order differs from the model"));
        if (core_.next_deadline() != model_.next_deadline()) return void(err("next deadline differs"));
        // §5.4: no lost wake-up.
        if (!model_.parked.empty() && model_.idle.size() > model_.reserved.size())
            return void(err("free idle resource while a waiter is parked"));
    }

    void hand_out(int s, int id) {
        if (held_by_.count(id)) return void(err("resource " + std::to_string(id) + " handed to two holders"));
        if (destroyed_.count(id)) return void(err("handed out a destroyed resource"));
        held_by_[id] = s;
        held_.push_back(id);
    }
    void complete(int s) {
        ++completions_[s];
        if (completions_[s] > starts_[s]) err("acquire completed twice");
        slot_state_[s] = slot::free;
        woken_with_place_[s] = false;
        deadline_[s] = std::nullopt;
        waiters_[s] = waiter{};
        model_.w[static_cast<std::size_t>(s)] = model::mw{};
    }

    // An independent oracle for the fresh flag (before_acquire skips it): never lent before, by the
    // harness's own record of what it took. Only reported when checks are configured.
    bool fresh_flag_right(const pool_core::take_result& t) {
        if (!cfg_.confirm_takes) return true;
        return t.fresh == ever_lent_.insert(id_of(t.r)).second;
    }

    // A taken resource goes through before_acquire when the pool has one.
    void after_take(int s, int id, bool fresh_waiter) {
        if (!cfg_.confirm_takes) {
            hand_out(s, id);
            return complete(s);
        }
        effects fx;
        resource* r = resource_of(id);
        const int roll = static_cast<int>(rng_() % 10);
        if (roll == 0) {  // cancelled while the hook ran: back to idle
            core_.give_back(r, fx);
            model_.give_back(id);
            settle(fx);
            return complete(s);
        }
        if (roll <= 2) {  // rejected: destroy and retry in the waiter's place
            core_.reject(r, fx);
            model_.reject(id);
            settle(fx);
            if (fresh_waiter) return complete(s);  // try_acquire gives up after a rejection
            auto t = core_.retry(waiters_[s], now_, fx);
            auto mt = model_.retry(s, now_);
            if (t.st != mt.first || id_of(t.r) != mt.second) return void(err("retry differs"));
            if (t.r && !fresh_flag_right(t)) return void(err("fresh flag is not 'never lent before'"));
            settle(fx);
            if (t.r) {
                newcomer_took_a_place();  // a retry takes like a newcomer: never a reserved place
                return after_take(s, mt.second, false);
            }
            if (t.st == status::timeout && !deadline_has_come(s))
                return void(err("a retry timed out before the waiter's deadline"));
            if (t.st != status::ok) return complete(s);
            if (deadline_has_come(s)) return void(err("re-parked a waiter whose deadline has passed"));
            slot_state_[s] = slot::parked;
            parked_at_[s] = ++clock_;  // its arrival stays the first park's
            return;
        }
        status cs = core_.confirm_take(r, fx);
        status ms = model_.confirm_take(id);
        if (cs != ms) return void(err("confirm differs"));
        settle(fx);
        if (cs == status::ok) hand_out(s, id);
        complete(s);
    }

    int free_slot() {
        std::vector<int> f;
        for (int s = 0; s < slots; ++s)
            if (slot_state_[s] == slot::free) f.push_back(s);
        return f.empty() ? -1 : f[rng_() % f.size()];
    }

    void op_acquire() {
        int s = free_slot();
        if (s < 0) return;
        ++starts_[s];
        bool fast_declined = false;
        if (rng_() % 2 == 0) {  // the driver's inline take first, as plain pools do
            resource* r = core_.take_fast();
            if (r) {
                ++fast_takes_;
                if (!plain_take())
                    return void(err("take_fast took where checks, stamps or the circuit apply"));
                auto mt = model_.try_take();
                if (id_of(r) != mt.second) return void(err("take_fast differs from the model's take"));
                newcomer_took_a_place();
                check();
                return after_take(s, mt.second, true);
            }
            fast_declined = plain_take();
        }
        auto t = core_.try_take();
        bool mv = false;
        auto mt = model_.try_take(&mv);
        if (t.st != mt.first || id_of(t.r) != mt.second) return void(err("try_take differs"));
        if (t.r && t.validate != mv) return void(err("validate flag differs"));
        if (t.r && !fresh_flag_right(t)) return void(err("fresh flag is not 'never lent before'"));
        if (t.r && fast_declined) return void(err("take_fast declined a plain take that try_take then made"));
        check();
        if (t.r) {
            newcomer_took_a_place();
            return after_take(s, mt.second, true);
        }
        if (t.st != status::ok) return complete(s);
        // Each waiter its own deadline: relative or absolute, distinct (ns resolution), shared, in the
        // past, or so far away that now + timeout would overflow.
        std::optional<duration> timeout;
        std::optional<time_point> at;
        switch (rng_() % 8) {
        case 0:
        case 1: break;  // no deadline
        case 2:
        case 3: timeout = std::chrono::nanoseconds(rng_() % 50'000'000); break;
        case 4: timeout = 10ms; break;  // a shared default: equal deadlines when parked at one instant
        case 5: at = now_ - 5ms + std::chrono::nanoseconds(rng_() % 60'000'000); break;
        case 6: timeout = duration::max(); break;
        case 7: at = time_point::max(); break;
        }
        const std::optional<time_point> deadline = timeout ? saturating_after(now_, *timeout) : at;
        effects fx;
        slot_state_[s] = slot::parked;
        // The driver's way too: the absolute deadline with the timeout it came from (the timeout picks
        // the deadline lane); and a timeout that did not produce the deadline, which must change nothing.
        status ps;
        if (timeout && rng_() % 2 == 0)
            ps = core_.park(waiters_[s], now_, deadline, timeout, fx);
        else if (timeout)
            ps = core_.park(waiters_[s], now_, timeout, fx);
        else if (rng_() % 4 == 0)
            ps = core_.park(waiters_[s], now_, at, std::optional<duration>(10ms), fx);
        else
            ps = core_.park(waiters_[s], now_, at, fx);
        status ms = model_.park(s, now_, deadline);
        if (ps != ms) return void(err("park differs"));
        if (ps == status::ok) {
            arrival_[s] = parked_at_[s] = ++clock_;
            deadline_[s] = deadline;
        }
        if (ps == status::timeout && !(deadline && *deadline <= now_))
            return void(err("park timed out although the deadline is after now"));
        settle(fx);
        if (ps != status::ok) complete(s);
    }

    void op_try_acquire() {
        int s = free_slot();
        if (s < 0) return;
        ++starts_[s];
        auto t = core_.try_take();
        auto mt = model_.try_take();
        if (t.st != mt.first || id_of(t.r) != mt.second) return void(err("try_take differs"));
        if (t.r && !fresh_flag_right(t)) return void(err("fresh flag is not 'never lent before'"));
        if (t.r) {
            newcomer_took_a_place();
            return after_take(s, mt.second, true);
        }
        if (t.st != status::ok) return complete(s);
        // synchronous factory: inline creation when a place is free for anyone
        bool b = core_.begin_inline_creation();
        if (b != model_.begin_inline()) return void(err("begin_inline_creation differs"));
        check();
        if (!b) return complete(s);
        newcomer_took_a_place();
        effects fx;
        if (rng_() % 5 == 0) {
            core_.inline_failed(fx);
            model_.inline_failed();
            settle(fx);
            return complete(s);
        }
        int id = new_resource();
        ever_lent_.insert(id);  // lent by inline_created itself
        status cs = core_.inline_created(resource_of(id), fx);
        if (cs != model_.inline_created(id)) return void(err("inline_created differs"));
        settle(fx);
        if (cs == status::ok) {
            if (cfg_.confirm_takes) {
                status c2 = core_.confirm_take(resource_of(id), fx);
                if (c2 != model_.confirm_take(id)) return void(err("confirm differs"));
                settle(fx);
                if (c2 != status::ok) return complete(s);
            }
            hand_out(s, id);
        }
        complete(s);
    }

    void op_release() {
        if (held_.empty()) return;
        std::size_t i = rng_() % held_.size();
        int id = held_[i];
        held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i));
        held_by_.erase(id);
        const int r = static_cast<int>(rng_() % 10);
        auto kind = r == 0   ? pool_core::release_kind::broken
                    : r == 1 ? pool_core::release_kind::poisoned
                             : pool_core::release_kind::ok;
        effects fx;
        if (kind == pool_core::release_kind::ok && rng_() % 2 == 0) {  // the driver's inline release first
            const bool fast = core_.release_fast(resource_of(id));
            if (fast && !plain_release()) return void(err("release_fast ran where the general release must"));
            if (!fast && plain_release()) return void(err("release_fast declined a plain release"));
            if (fast) {
                ++fast_releases_;
                model_.release(id, kind);
                return settle(fx);  // no effects on either side
            }
        }
        core_.release(resource_of(id), kind, fx);
        model_.release(id, kind);
        settle(fx);
    }

    void op_cancel() {
        std::vector<int> c;
        for (int s = 0; s < slots; ++s)
            if (slot_state_[s] != slot::free) c.push_back(s);
        if (c.empty()) return;
        int s = c[rng_() % c.size()];
        effects fx;
        bool a = core_.cancel(waiters_[s], fx);
        if (a != model_.cancel(s)) return void(err("cancel differs"));
        settle(fx);
    }

    void op_advance() {
        // Sometimes exactly to a pending waiter's deadline, as a timer armed at it fires: a deadline
        // equal to now has come.
        std::optional<time_point> to;
        if (rng_() % 3 == 0) {
            for (int s = 0; s < slots; ++s)
                if (slot_state_[s] != slot::free && deadline_[s] && *deadline_[s] > now_ &&
                    *deadline_[s] != time_point::max() && (!to || *deadline_[s] < *to))
                    to = deadline_[s];
        }
        now_ = to ? *to : now_ + std::chrono::nanoseconds(rng_() % 20'000'000);
        effects fx;
        core_.expire(now_, fx);
        model_.expire(now_);
        settle(fx);  // earliest deadline first, equal deadlines in arrival order
        for (int s = 0; s < slots; ++s)
            if (slot_state_[s] == slot::parked && deadline_has_come(s))
                return void(err("a parked waiter whose deadline has come was not timed out"));
    }

    void op_run_wake() {
        if (posted_.empty()) return;
        int s = posted_.front();
        posted_.pop_front();
        effects fx;
        auto t = core_.resume(waiters_[s], fx);
        bool mv = false;
        auto mt = model_.resume(s, &mv);
        if (t.st != mt.first || id_of(t.r) != mt.second) return void(err("resume differs"));
        if (t.r && t.validate != mv) return void(err("validate flag differs"));
        if (t.r && !fresh_flag_right(t)) return void(err("fresh flag is not 'never lent before'"));
        settle(fx);
        if (t.r) {
            if (!woken_with_place_[s])
                return void(err("a waiter woken with an error resumed with a resource"));
            // Served in arrival order: nobody older has been parked since before this waiter got its place
            // (a waiter that timed out or was cancelled is no longer parked; one that re-parked after a
            // rejected resource did so after the place was given).
            if (older_parked(s, woken_at_[s]) >= 0)
                return void(err("a younger waiter was served while an older one was parked"));
            return after_take(s, mt.second, false);
        }
        if (t.st == status::timeout && !deadline_has_come(s))
            return void(err("a resumption reported a timeout before the deadline"));
        complete(s);
    }

    void op_finish_create() {
        if (pending_creates_ == 0) return;
        --pending_creates_;
        effects fx;
        if (rng_() % 6 == 0) {
            waiter* w = core_.creation_failed(fx);
            int ms = model_.creation_failed();
            if ((w ? slot_of(w) : -1) != ms) return void(err("creation_failed chose a different waiter"));
        } else {
            int id = new_resource();
            core_.creation_succeeded(resource_of(id), fx);
            model_.creation_succeeded(id);
        }
        settle(fx);
    }

    void op_health() {
        ++tick_;
        for (;;) {
            resource* r = core_.begin_check(tick_);
            int m = model_.begin_check(tick_);
            if (id_of(r) != m) return void(err("health check picked a different resource"));
            if (!r) return;
            check();
            const bool healthy = rng_() % 4 != 0;
            effects fx;
            core_.end_check(r, healthy, fx);
            model_.end_check(m, healthy);
            settle(fx);
            if (!error_.empty()) return;
        }
    }

    void op_circuit() {
        const circuit s = static_cast<circuit>(rng_() % 3);
        const auto probes = static_cast<std::uint32_t>(rng_() % 3);
        effects fx;
        core_.set_circuit(s, fx, probes);
        model_.set_circuit(s, probes);
        circuit_ = s;
        settle(fx);
    }

    void op_housekeep() {
        now_ += std::chrono::milliseconds(rng_() % 30);
        effects fx;
        core_.housekeep(now_, fx);
        model_.housekeep(now_);
        settle(fx, true);  // evictions and leak reports of one pass carry no order
    }

    void op_backoff_elapsed() {
        if (!retry_pending_) return;
        retry_pending_ = false;
        effects fx;
        core_.backoff_elapsed(fx);
        model_.backoff_elapsed();
        settle(fx);
    }

    void op_replenish() {
        effects fx;
        core_.replenish(fx);
        model_.replenish();
        settle(fx);
    }

    void op_close() {
        effects fx;
        bool a = core_.close(fx);
        if (a != model_.close()) return void(err("close differs"));
        closed_ = true;
        settle(fx);
    }

    // ---- oracles from the harness's own records ----

    int parked_count() const {
        return static_cast<int>(std::count(slot_state_.begin(), slot_state_.end(), slot::parked));
    }
    // A parked waiter older than s (by first arrival) that has been parked since before `since`, or -1.
    int older_parked(int s, std::uint64_t since) const {
        for (int y = 0; y < slots; ++y)
            if (y != s && slot_state_[y] == slot::parked && arrival_[y] < arrival_[s] &&
                parked_at_[y] < since)
                return y;
        return -1;
    }
    bool deadline_has_come(int s) const { return deadline_[s] && *deadline_[s] <= now_; }
    // The inline paths are for pools with nothing to check, stamp or report (SPEC-independent: these
    // are the driver's contract with take_fast / release_fast).
    bool plain_take() const {
        return !closed_ && circuit_ == circuit::closed && !cfg_.confirm_takes &&
               cfg_.acquire_ttl == duration::zero();
    }
    bool plain_release() const {
        return !closed_ && parked_count() == 0 && !cfg_.reports && !cfg_.lifetimes &&
               cfg_.idle_ttl == duration::zero() && !cfg_.validate_on_borrow &&
               cfg_.acquire_ttl == duration::zero();
    }
    // §1.3: a newcomer (or a retry) never takes a place while a waiter is parked: every free place is
    // already reserved for the parked waiters.
    void newcomer_took_a_place() {
        if (parked_count() > 0) err("a newcomer took a place while a waiter was parked");
    }
    // After every operation (§1.2, §5.1, §5.4, §5.6), from what the harness created, destroyed, holds
    // and set; the core's audit() and the model are not consulted.
    void check_places() {
        if (!error_.empty()) return;
        const int parked = parked_count();
        int woken_with_place = 0;
        for (int s = 0; s < slots; ++s)
            if (slot_state_[s] == slot::posted && woken_with_place_[s]) ++woken_with_place;
        const auto alive = static_cast<std::uint32_t>(made_.size() - destroyed_.size());
        const std::uint32_t total = alive + static_cast<std::uint32_t>(pending_creates_);
        const std::uint32_t idle = alive - static_cast<std::uint32_t>(held_.size());
        if (total != core_.total())
            return void(err("total differs from what the harness created and destroyed"));
        if (total > cfg_.max) return void(err("total above max"));
        if (closed_ && (parked > 0 || idle > 0))
            return void(err("a closed pool keeps a parked waiter or an idle resource"));
        if (parked == 0) return;
        // Woken waiters hold at most one reservation each; every other idle resource is free.
        if (idle > static_cast<std::uint32_t>(woken_with_place))
            return void(err("lost wake-up: a waiter is parked while an idle resource is unreserved"));
        const bool capacity_free =
            total < cfg_.max && circuit_ != circuit::open && !closed_ && !retry_pending_;
        const int needed = std::min(parked, static_cast<int>(cfg_.max_concurrent_creations));
        if (capacity_free && pending_creates_ < needed)
            err("a waiter is parked while capacity is free and " + std::to_string(pending_creates_) +
                " creations run (" + std::to_string(needed) + " required)");
    }

    std::mt19937_64 rng_;
    config cfg_;
    pool_core core_;
    model model_;
    time_point now_ = time_point{} + 1s;
    std::uint64_t tick_ = 0;
    int op_ = 0;
    std::vector<waiter> waiters_;
    std::vector<slot> slot_state_;
    std::vector<int> completions_, starts_;
    std::deque<int> posted_;
    std::unordered_set<int> ever_lent_;
    int pending_creates_ = 0;
    bool retry_pending_ = false;
    bool lifetimes_ = false;
    // Harness records for the oracles, kept independently of the core and the model.
    std::vector<std::uint64_t> arrival_;    // when the acquire first parked (kept across a re-park)
    std::vector<std::uint64_t> parked_at_;  // when it last parked or re-parked
    std::vector<std::uint64_t> woken_at_;   // when a place was handed to it (a wake with status ok)
    std::vector<bool> woken_with_place_;    // its posted resumption carries a place, not an error
    std::vector<std::optional<time_point>> deadline_;  // its deadline, computed here
    std::uint64_t clock_ = 0;                          // orders the stamps above
    circuit circuit_ = circuit::closed;                // as last set
    bool closed_ = false;
    std::uint64_t fast_takes_ = 0, fast_releases_ = 0;
    std::vector<std::unique_ptr<res>> made_;
    std::map<int, int> destroyed_;
    std::map<int, int> held_by_;
    std::vector<int> held_;
    std::string error_;
};

std::uint64_t env_u64(const char* name, std::uint64_t fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

}  // namespace

TEST(model, random_operation_sequences_match_the_reference_model_and_keep_the_invariants) {
    const std::uint64_t total_ops = env_u64("RESPOOL_MODEL_OPS", 1'000'000);
    const std::uint64_t seed = env_u64("RESPOOL_MODEL_SEED", std::random_device{}());
    std::mt19937_64 meta(seed);
    std::uint64_t done = 0, runs = 0, acquires = 0, fast_takes = 0, fast_releases = 0;
    while (done < total_ops) {
        const std::uint64_t run_seed = meta();
        std::mt19937_64 pick(run_seed);
        config c;
        c.max = 1 + static_cast<std::uint32_t>(pick() % 6);
        c.min = static_cast<std::uint32_t>(pick() % (c.max + 1));
        c.max_concurrent_creations = 1 + static_cast<std::uint32_t>(pick() % 3);
        c.max_waiters = pick() % 3 == 0 ? 1 + static_cast<std::uint32_t>(pick() % 8) : 0;
        c.lifo = pick() % 2 == 0;
        c.confirm_takes = pick() % 2 == 0;
        c.reports = pick() % 2 == 0;
        if (pick() % 2) c.idle_ttl = std::chrono::milliseconds(10 + pick() % 40);
        if (pick() % 2) c.acquire_ttl = std::chrono::milliseconds(10 + pick() % 40);
        if (pick() % 3 == 0) {
            c.validate_on_borrow = true;
            c.validate_after = std::chrono::milliseconds(pick() % 20);
        }
        if (pick() % 2) {
            c.retry_initial = std::chrono::milliseconds(1 + pick() % 5);
            c.retry_max = c.retry_initial * 8;
        }
        bool lifetimes = pick() % 2 == 0;
        if (pick() % 4 == 0) {  // a plain pool, where the driver's inline take and release apply
            c.confirm_takes = c.reports = c.validate_on_borrow = lifetimes = false;
            c.idle_ttl = c.acquire_ttl = duration::zero();
        }
        c.lifetimes = lifetimes;
        run r(run_seed, c, lifetimes);
        const int len = 200 + static_cast<int>(pick() % 3000);
        std::string e;
        for (int i = 0; i < len && e.empty(); ++i) e = r.step(i);
        if (e.empty()) e = r.finish();
        ASSERT_EQ(e, "") << "seed " << seed << " (RESPOOL_MODEL_SEED=" << seed << "), run " << runs
                         << " (run seed " << run_seed << ", min " << c.min << " max " << c.max << " mcc "
                         << c.max_concurrent_creations << " max_waiters " << c.max_waiters << " lifo "
                         << c.lifo << " confirm " << c.confirm_takes << ")";
        done += static_cast<std::uint64_t>(len);
        acquires += r.acquires();
        fast_takes += r.fast_takes();
        fast_releases += r.fast_releases();
        ++runs;
    }
    std::printf(
        "model: %llu operations in %llu runs, %llu leases handed out (%llu by take_fast, %llu "
        "returned by release_fast), seed %llu\n",
        static_cast<unsigned long long>(done), static_cast<unsigned long long>(runs),
        static_cast<unsigned long long>(acquires), static_cast<unsigned long long>(fast_takes),
        static_cast<unsigned long long>(fast_releases), static_cast<unsigned long long>(seed));
    EXPECT_GT(acquires, done / 50) << "the generator must actually exercise the pool";
    if (done >= 10'000) {
        EXPECT_GT(fast_takes, 0u) << "the generator must exercise take_fast";
        EXPECT_GT(fast_releases, 0u) << "the generator must exercise release_fast";
    }
}
