// The reference model of the sans-io pool core for the model test (model_test.cpp): the core's rules
// written again with plain containers (std::deque / std::vector, linear scans, no intrusive lists, no
// ring, no deadline heap), so that it predicts every effect the core emits. And the reference of the
// request queue: a plain std::deque with linear scans.
#pragma once

#include "core/pool_core.hpp"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace model_check {

using namespace respool::core;
using namespace std::chrono_literals;

// now + d, clamped to the clock's range; checked with the compiler's overflow builtin, not with the
// core's deadline_after.
time_point saturating_after(time_point now, duration d) {
    duration::rep sum;
    if (__builtin_add_overflow(now.time_since_epoch().count(), d.count(), &sum))
        return d > duration::zero() ? time_point::max() : time_point::min();
    return time_point(duration(sum));
}

struct m_effect {
    effect::kind what;
    int waiter = -1;  // waiter slot
    int res = -1;     // resource id
    destroy_reason reason = destroy_reason::closed;
    status st = status::ok;
    long long d = 0;  // retry_after delay; how long a leaked lease was held; ns
    bool operator==(const m_effect&) const = default;
    bool operator<(const m_effect& o) const {
        return std::tie(what, waiter, res, reason, st, d) <
               std::tie(o.what, o.waiter, o.res, o.reason, o.st, o.d);
    }
};

struct m_take {
    status st = status::ok;
    int r = -1;
    borrow_check check = borrow_check::none;
};

struct m_verdict {
    int w = -1;  // waiter slot, -1: a synchronous caller or nobody
    m_take t;
};

struct model {
    enum class ws { none, parked, reserved, failed, checking };
    struct mw {
        ws state = ws::none;
        std::uint64_t seq = 0;
        bool has_deadline = false;
        time_point deadline{};
        status result = status::ok;
        bool counted = false;
        int checking = -1;  // the resource under its checks
    };

    struct mres {
        time_point idle_since{}, leased_at{}, expires_at{};
        bool leased = false, leak_reported = false;
        std::uint64_t made = 0;  // never lent: the arrival number its creation took; 0 once lent
        std::uint32_t gen = 0;
        std::uint8_t due = 0;  // borrow_check bits
        int checker = -1;      // the waiter slot waiting for its verdict
        bool orphaned = false;
        bool at_once = false;  // its taker never parked: an immediate take once its checks pass
        std::uint64_t checked_round = 0;
    };

    config cfg;
    std::deque<int> idle;
    std::map<int, mres> res;
    time_point clock_now{};
    std::uint32_t failures_in_row = 0, probe_limit = 0, probes_admitted = 0;
    bool backoff_active = false;
    std::vector<int> parked;    // waiter slots in arrival order
    std::vector<int> reserved;  // waiter slots in reservation order
    std::vector<int> checking;  // waiter slots in the order they began to wait for a verdict
    std::vector<mw> w;
    std::uint32_t active = 0, creating = 0;
    std::uint64_t seq = 1;
    circuit circ = circuit::closed;
    bool closed = false, floor_blocked = false;
    std::uint32_t generation = 0, stale = 0;
    bool shrinking = false, warming = true, drained = false;
    std::uint64_t health_round = 0;
    counters c;
    std::vector<m_effect> fx;

    model(config k, int slots) : cfg(k), w(static_cast<std::size_t>(slots)) {}

    std::uint32_t total() const { return static_cast<std::uint32_t>(idle.size()) + active; }
    std::uint32_t waiting() const { return static_cast<std::uint32_t>(parked.size() + reserved.size()); }
    std::uint32_t n_reserved() const { return static_cast<std::uint32_t>(reserved.size()); }
    static borrow_check next_check(std::uint8_t due) {
        if (due & static_cast<std::uint8_t>(borrow_check::validate)) return borrow_check::validate;
        if (due & static_cast<std::uint8_t>(borrow_check::before_acquire))
            return borrow_check::before_acquire;
        return borrow_check::none;
    }
    static void erase(std::vector<int>& v, int s) { v.erase(std::find(v.begin(), v.end(), s)); }

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
    void note_gone() {
        if (closed && !drained && total() == 0) {
            drained = true;
            fx.push_back({effect::kind::drained});
        }
    }
    void note_creation_over() {
        if (warming && creating == 0) {
            warming = false;
            fx.push_back({effect::kind::ready, -1, -1, destroy_reason::closed, status::ok});
        }
    }
    void destroy(int r, destroy_reason why) {
        ++c.destructions;
        fx.push_back({effect::kind::destroy, -1, r, why});
        if (stale != 0 && res[r].gen != generation) --stale;
        if (shrinking && total() <= cfg.max) shrinking = false;
        note_gone();
    }
    // A resource about to go back to idle (uncounted) that must go instead.
    bool drop_unwanted(int r) {
        if (res[r].gen != generation) {
            ++c.replaced;
            destroy(r, destroy_reason::replaced);
            maybe_create();
            return true;
        }
        if (total() >= cfg.max) {
            ++c.surplus;
            destroy(r, destroy_reason::surplus);
            return true;
        }
        return false;
    }
    void shed_unwanted() {
        if (stale == 0 && !shrinking) return;
        const std::size_t n = idle.size();
        for (std::size_t i = 0; i < n; ++i) {
            const int r = idle.front();
            idle.pop_front();
            if (idle.size() >= reserved.size() && drop_unwanted(r)) continue;
            idle.push_back(r);
        }
    }
    void report_failure(status st) {
        if (cfg.reports) fx.push_back({effect::kind::report_failure, -1, -1, destroy_reason::closed, st});
    }
    bool probes_exhausted() const {
        return circ == circuit::half_open && probe_limit != 0 && probes_admitted >= probe_limit;
    }
    static constexpr std::uint64_t newcomer = ~std::uint64_t{0};
    m_take lend(int r, std::uint64_t arrival, bool at_once, bool checks = true) {
        ++active;
        if (circ == circuit::half_open) {
            ++probes_admitted;
            ++c.probes;
        }
        if (cfg.acquire_ttl > duration::zero()) {
            res[r].leased = true;
            res[r].leak_reported = false;
            res[r].leased_at = clock_now;
        }
        std::uint8_t due = 0;
        if (cfg.before_acquire || cfg.validate_on_borrow) {
            if (checks && cfg.validate_on_borrow && clock_now - res[r].idle_since > cfg.validate_after)
                due |= static_cast<std::uint8_t>(borrow_check::validate);
            if (checks && cfg.before_acquire && res[r].made <= arrival)
                due |= static_cast<std::uint8_t>(borrow_check::before_acquire);
            res[r].made = 0;
            res[r].due = due;
        }
        if (due == 0) {
            ++c.acquires;
            c.immediate_takes += at_once;
        }
        res[r].at_once = at_once;
        return {status::ok, r, next_check(due)};
    }
    void unlend(int r) {
        if (!res[r].leased) return;
        res[r].leased = false;
    }
    void creation_failure() {
        ++c.create_failures;
        ++failures_in_row;
        if (shrinking && total() <= cfg.max) shrinking = false;
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
    void hold(int s, int r) {
        w[s].state = ws::checking;
        w[s].checking = r;
        res[r].checker = s;
        res[r].orphaned = false;
        checking.push_back(s);
    }
    void drop_checker(int s) {
        erase(checking, s);
        res[w[s].checking].checker = -1;
        w[s].checking = -1;
    }
    void fail(int s, status st) {
        w[s].result = st;
        if (w[s].state == ws::parked) {
            erase(parked, s);
            w[s].state = ws::failed;
            fx.push_back({effect::kind::wake, s, -1, destroy_reason::closed, st});
        } else if (w[s].state == ws::checking) {
            const int r = w[s].checking;
            drop_checker(s);
            res[r].orphaned = true;
            w[s].state = ws::failed;
            fx.push_back({effect::kind::wake, s, -1, destroy_reason::closed, st});
        } else {
            erase(reserved, s);
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
        if (st == status::closed)
            while (!checking.empty()) fail(checking.front(), st);
    }
    void start() {
        replenish();
        note_creation_over();
    }
    std::uint64_t arrive() { return seq++; }
    m_take try_take(std::uint64_t arrival = newcomer, bool at_once = true) {
        if (closed) return {status::closed, -1};
        if (circ == circuit::open || probes_exhausted()) {
            ++c.unavailable_rejections;
            return {status::unavailable, -1};
        }
        if (idle.size() > reserved.size()) return lend(pop_idle(), arrival, at_once);
        return {};
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
    void wait_for_check(int s, int r, std::optional<time_point> t) {
        w[s].seq = seq++;
        w[s].has_deadline = t.has_value();
        w[s].result = status::ok;
        if (t) w[s].deadline = *t;
        hold(s, r);
    }
    m_take resume(int s) {
        if (w[s].state == ws::failed) {
            w[s].state = ws::none;
            return {w[s].result, -1};
        }
        erase(reserved, s);
        w[s].state = ws::none;
        if (probes_exhausted()) {
            ++c.unavailable_rejections;
            reserve_for_parked();
            shed_unwanted();
            return {status::unavailable, -1};
        }
        m_take t = lend(pop_idle(), w[s].seq, false);
        if (t.check != borrow_check::none) hold(s, t.r);
        return t;
    }
    m_verdict check_done(int r, bool passed, time_point t_now) {
        if (t_now > clock_now) clock_now = t_now;
        const int s = res[r].checker;
        const bool orphaned = res[r].orphaned;
        res[r].orphaned = false;
        res[r].due &= static_cast<std::uint8_t>(res[r].due - 1);
        if (s >= 0) drop_checker(s);
        if (!passed) {
            res[r].due = 0;
            reject(r);
            if (orphaned) return {};
            if (s < 0) return {-1, {status::ok, -1}};
            return {s, retry(s, t_now)};
        }
        if (orphaned) {
            res[r].due = 0;
            give_back(r);
            return {};
        }
        if (res[r].due != 0) {
            if (s >= 0) hold(s, r);
            return {s, {status::ok, r, next_check(res[r].due)}};
        }
        if (s >= 0) w[s].state = ws::none;
        const status st = confirm_take(r);
        return {s, {st, st == status::ok ? r : -1}};
    }
    m_take retry(int s, time_point t_now) {
        m_take t = try_take(w[s].seq, !w[s].counted);
        if (t.st == status::ok && t.r < 0 && w[s].has_deadline && w[s].deadline <= t_now) {
            ++c.timeouts;
            t.st = status::timeout;
        }
        if (t.st != status::ok || (t.r >= 0 && t.check == borrow_check::none)) {
            w[s].state = ws::none;
            return t;
        }
        if (t.r >= 0) {
            hold(s, t.r);
            return t;
        }
        w[s].state = ws::parked;
        if (!w[s].counted) {
            w[s].counted = true;
            ++c.waits;
        }
        auto at = std::find_if(parked.begin(), parked.end(), [&](int o) { return w[o].seq > w[s].seq; });
        parked.insert(at, s);
        maybe_create();
        return t;
    }
    bool cancel(int s) {
        if (w[s].state != ws::parked && w[s].state != ws::reserved && w[s].state != ws::checking)
            return false;
        bool had = w[s].state == ws::reserved;
        ++c.cancellations;
        fail(s, status::cancelled);
        if (had) {
            reserve_for_parked();
            shed_unwanted();
        }
        return true;
    }
    void expire(time_point t_now) {
        bool handed = false;
        std::vector<int> due;
        for (const auto* v : {&parked, &reserved, &checking})
            for (int s : *v)
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
        if (handed) {
            reserve_for_parked();
            shed_unwanted();
        }
    }
    std::optional<time_point> next_deadline() const {
        std::optional<time_point> best;
        for (const auto* v : {&parked, &reserved, &checking})
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
        c.immediate_takes += res[r].at_once;
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
        if (drop_unwanted(r)) return;
        if (cfg.lifo)
            idle.push_back(r);
        else
            idle.push_front(r);
        reserve_for_parked();
    }
    m_effect leak(effect::kind k, int r) const {
        m_effect e{k, -1, r};
        e.d = std::chrono::duration_cast<std::chrono::nanoseconds>(clock_now - res.at(r).leased_at).count();
        return e;
    }
    void release(int r, pool_core::release_kind k) {
        --active;
        if (res[r].leased) {
            unlend(r);
            if (res[r].leak_reported) fx.push_back(leak(effect::kind::leak_returned, r));
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
        if (drop_unwanted(r)) return;
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
        res[r].gen = generation;
        if (drop_unwanted(r)) return note_creation_over();
        res[r].made = seq++;
        idle.push_back(r);
        reserve_for_parked();
        maybe_create();
        note_creation_over();
    }
    int creation_failed() {
        --creating;
        --active;
        creation_failure();
        if (warming) {
            warming = false;
            fx.push_back({effect::kind::ready, -1, -1, destroy_reason::closed, status::create_failed});
        }
        if (closed) {
            note_gone();
            return -1;
        }
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
                fx.push_back(leak(effect::kind::leak_suspected, id));
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
        res[r].gen = generation;
        lend(r, newcomer, false, false);
        maybe_create();
        note_creation_over();
        return status::ok;
    }
    void inline_failed() {
        --creating;
        --active;
        creation_failure();
        maybe_create();
        note_creation_over();
        note_gone();
    }
    void begin_health_round() { ++health_round; }
    int begin_check() {
        if (closed || idle.size() <= reserved.size()) return -1;
        int r = idle.front();
        if (res[r].checked_round == health_round) return -1;
        idle.pop_front();
        res[r].checked_round = health_round;
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
        if (drop_unwanted(r)) return;
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
        if (s == circuit::open) {
            fail_all(status::unavailable);
            shed_unwanted();
        } else {
            maybe_create();
        }
    }
    void set_max(std::uint32_t m) {
        cfg.max = m;
        while (total() > m && idle.size() > reserved.size()) {
            ++c.surplus;
            int r = idle.front();
            idle.pop_front();
            destroy(r, destroy_reason::surplus);
        }
        shrinking = total() > m;
        maybe_create();
    }
    void retire_all() {
        if (closed) return;
        ++generation;
        stale = 0;
        const std::size_t n = idle.size() - reserved.size();
        for (std::size_t i = 0; i < n; ++i) {
            ++c.replaced;
            destroy(pop_idle(), destroy_reason::replaced);
        }
        stale = total() - creating;
        replenish();
    }
    bool close() {
        if (closed) return false;
        closed = true;
        if (warming) {
            warming = false;
            fx.push_back({effect::kind::ready, -1, -1, destroy_reason::closed, status::closed});
        }
        fail_all(status::closed);
        while (!idle.empty()) {
            int r = idle.front();
            idle.pop_front();
            destroy(r, destroy_reason::closed);
        }
        note_gone();
        return true;
    }
};

}  // namespace model_check

namespace model_check {

// The request queue's reference: a plain deque in arrival order, scanned linearly; a request that goes
// back keeps its arrival number and its deadline.
struct queue_model {
    struct entry {
        int id;
        std::uint64_t seq;
        std::optional<time_point> deadline;  // none: waits until taken, cancelled or failed
    };
    std::deque<entry> q;
    std::size_t max = 0;  // 0: no limit
    std::uint64_t seq = 0;

    // false: refused (max waiters).
    bool push(int id, std::optional<time_point> deadline, std::uint64_t& given_seq) {
        if (max != 0 && q.size() >= max) return false;
        given_seq = ++seq;
        q.push_back({id, given_seq, deadline});
        return true;
    }
    void requeue(const entry& e) {
        auto at = q.begin();
        while (at != q.end() && at->seq < e.seq) ++at;
        q.insert(at, e);
    }
    bool cancel(int id) {
        for (auto it = q.begin(); it != q.end(); ++it)
            if (it->id == id) {
                q.erase(it);
                return true;
            }
        return false;
    }
    std::vector<entry> take(std::size_t n) {
        std::vector<entry> out;
        while (n-- > 0 && !q.empty()) {
            out.push_back(q.front());
            q.pop_front();
        }
        return out;
    }
    // Due ones, by (deadline, arrival).
    std::vector<entry> expire(time_point now) {
        std::vector<entry> due;
        for (auto it = q.begin(); it != q.end();)
            if (it->deadline && *it->deadline <= now) {
                due.push_back(*it);
                it = q.erase(it);
            } else {
                ++it;
            }
        std::sort(due.begin(), due.end(), [](const entry& a, const entry& b) {
            return *a.deadline < *b.deadline || (*a.deadline == *b.deadline && a.seq < b.seq);
        });
        return due;
    }
    std::vector<entry> fail_all() {
        std::vector<entry> out(q.begin(), q.end());
        q.clear();
        return out;
    }
    [[nodiscard]] std::optional<time_point> next_deadline() const {
        std::optional<time_point> best;
        for (const entry& e : q)
            if (e.deadline && (!best || *e.deadline < *best)) best = e.deadline;
        return best;
    }
};

}  // namespace model_check
