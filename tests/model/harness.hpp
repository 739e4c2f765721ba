// The harness of the model test (model_test.cpp): runs random operations on the core and on the
// reference model (model.hpp) side by side, compares every effect and snapshot, and checks the
// invariants written from the spec and its own records (see model_test.cpp for the list).
#pragma once

#include "core/request_queue.hpp"
#include "model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

namespace model_check {

struct res : resource {
    int id = 0;
};

bool same_counters(const counters& a, const counters& b) {
    return a == b;
}

const char* check_name(borrow_check c) {
    switch (c) {
    case borrow_check::none: return "none";
    case borrow_check::validate: return "validate";
    case borrow_check::before_acquire: return "before_acquire";
    }
    return "?";
}

class run {
public:
    static constexpr int slots = 24;

    run(std::uint64_t seed, config cfg, bool lifetimes)
        : rng_(seed), cfg_(cfg), core_(cfg), model_(cfg, slots), max_(cfg.max) {
        lifetimes_ = lifetimes;
        waiters_.resize(slots);
        slot_state_.assign(slots, slot::free);
        completions_.assign(slots, 0);
        starts_.assign(slots, 0);
        arrival_.assign(slots, 0);
        sync_arrival_.assign(slots, {});
        parked_at_.assign(slots, 0);
        woken_at_.assign(slots, 0);
        woken_with_place_.assign(slots, false);
        holds_reservation_.assign(slots, false);
        deadline_.assign(slots, std::nullopt);
        effects fx;
        core_.start(fx);  // once, right after construction
        model_.start();
        settle(fx);
        check_places();
    }

    // Returns "" or the first divergence.
    std::string step(int op_index) {
        op_ = op_index;
        const int pick = static_cast<int>(rng_() % 1000);
        if (pick < 240)
            op_acquire();
        else if (pick < 300)
            op_try_acquire();
        else if (pick < 510)
            op_release();
        else if (pick < 540)
            op_cancel();
        else if (pick < 605)
            op_advance();
        else if (pick < 765)
            op_run_wake();
        else if (pick < 860)
            op_finish_create();
        else if (pick < 930)
            op_verdict();
        else if (pick < 940)
            op_housekeep();
        else if (pick < 955)
            op_backoff_elapsed();
        else if (pick < 967)
            op_health();
        else if (pick < 972)
            op_circuit();
        else if (pick < 977)
            op_replenish();
        else if (pick < 984)
            op_set_max();
        else if (pick < 988 && rng_() % 2 == 0)
            op_retire_all();
        else if (pick < 992)
            op_housekeep();
        else if (pick < 995)
            op_backoff_elapsed();
        else if (pick < 996 && rng_() % 4 == 0)
            op_close();
        check_places();
        return error_;
    }

    // Close, run everything to completion, and check that close leaves nothing, plus exactly-once completion.
    std::string finish() {
        op_close();
        check_places();
        for (int guard = 0; guard < 100000 && error_.empty(); ++guard) {
            if (!posted_.empty())
                op_run_wake();
            else if (!checks_.empty())
                op_verdict();
            else if (pending_creates_ > 0 || !inline_slots_.empty())
                op_finish_create();
            else if (health_id_ >= 0)
                op_health();
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
        if (core_.total() != 0 || core_.waiting() != 0 || core_.checking() != 0)
            return err("closed and drained pool still holds resources or waiters");
        for (auto& [id, n] : destroyed_)
            if (n != 1)
                return err("resource " + std::to_string(id) + " destroyed " + std::to_string(n) + " times");
        if (destroyed_.size() != made_.size()) return err("some created resources were never destroyed");
        if (ready_count_ != 1) return err("ready said " + std::to_string(ready_count_) + " times");
        if (drained_count_ != 1) return err("drained said " + std::to_string(drained_count_) + " times");
        if (!core_.drained() || !core_.ready()) return err("the core's ready() / drained() disagree");
        return "";
    }

    std::uint64_t acquires() const { return core_.stats().acquires; }
    std::uint64_t fast_takes() const { return fast_takes_; }
    std::uint64_t fast_releases() const { return fast_releases_; }
    std::uint64_t verdicts() const { return verdicts_; }
    std::uint64_t orphaned_verdicts() const { return orphaned_verdicts_; }
    std::uint64_t rejections() const { return core_.stats().rejected; }
    std::uint64_t reparks() const { return reparks_; }
    std::uint64_t sync_verdicts() const { return sync_verdicts_; }

private:
    // parked: in the queue; posted: its resumption is posted (with a place or an error); checking: it
    // waits for the verdict of a check on a resource it took; sync_checking: a try_acquire whose
    // resource is under a check; inline_creating: a try_acquire whose synchronous factory runs.
    enum class slot { free, parked, posted, checking, sync_checking, inline_creating };

    // A resource under a borrow check, as the harness sees it.
    struct pending_check {
        int id = -1;
        int slot = -1;        // the borrower: a waiter (checking) or a synchronous caller; -1 once it left
        bool sync = false;    // a synchronous caller (no waiter)
        borrow_check check;   // the check under way
        bool ba_due = false;  // the harness's own verdict: before_acquire is due for this take
    };

    std::string err(const std::string& what) {
        if (error_.empty()) {
            error_ = "op " + std::to_string(op_) + ": " + what;
            if (!trail_.empty()) error_ += "\n  recent operations (RESPOOL_MODEL_TRACE):" + trail_;
        }
        return error_;
    }
    // With RESPOOL_MODEL_TRACE set, every operation notes what it did; a failure prints the tail.
    void note(const std::string& what) {
        if (!tracing_) return;
        trail_ += "\n   " + std::to_string(op_) + " " + what;
        if (trail_.size() > 6000) trail_.erase(0, trail_.find('\n', trail_.size() - 5000));
    }

    int new_resource() {
        made_at_.push_back(++clock_);
        made_.push_back(std::make_unique<res>());
        made_.back()->id = static_cast<int>(made_.size());
        era_.push_back(era_now_);
        if (lifetimes_) {  // the driver sets expires_at (with jitter) before handing it to the core
            made_.back()->expires_at = now_ + std::chrono::milliseconds(5 + rng_() % 100);
            model_.res[made_.back()->id].expires_at = made_.back()->expires_at;
        }
        return made_.back()->id;
    }
    res* resource_of(int id) { return made_[static_cast<std::size_t>(id - 1)].get(); }
    static int id_of(resource* r) { return r ? static_cast<res*>(r)->id : -1; }
    int slot_of(waiter* w) { return static_cast<int>(w - waiters_.data()); }
    int era_of(int id) const { return era_[static_cast<std::size_t>(id - 1)]; }
    int alive() const { return static_cast<int>(made_.size() - destroyed_.size()); }
    int creations_running() const { return pending_creates_ + static_cast<int>(inline_slots_.size()); }
    int in_check(int id) const {
        for (std::size_t i = 0; i < checks_.size(); ++i)
            if (checks_[i].id == id) return static_cast<int>(i);
        return -1;
    }
    int check_of_slot(int s) const {
        for (std::size_t i = 0; i < checks_.size(); ++i)
            if (checks_[i].slot == s) return static_cast<int>(i);
        return -1;
    }
    // Resources the harness made, that are alive and that nobody has: idle in the pool.
    int idle_count() const {
        return alive() - static_cast<int>(held_.size() + checks_.size()) - (health_id_ >= 0 ? 1 : 0);
    }
    int reservations() const {
        return static_cast<int>(std::count(holds_reservation_.begin(), holds_reservation_.end(), true));
    }

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
            if (e.what == effect::kind::report_failure || e.what == effect::kind::ready) m.st = e.st;
            if (e.what == effect::kind::retry_after)
                m.d = std::chrono::duration_cast<std::chrono::nanoseconds>(e.d).count();
            if (e.what == effect::kind::leak_suspected || e.what == effect::kind::leak_returned) {
                m.res = id_of(e.r);
                m.d = std::chrono::duration_cast<std::chrono::nanoseconds>(e.d).count();
            }
            got.push_back(m);
        }
        fx.clear();
        auto want = model_.fx;
        model_.fx.clear();
        auto sorted = got;  // compared without order when it carries none; applied in the core's order
        if (unordered) {
            std::sort(sorted.begin(), sorted.end());
            std::sort(want.begin(), want.end());
        }
        if (sorted != want) {
            std::ostringstream o;
            o << "effects differ: core emitted " << got.size() << ", model " << want.size() << " [";
            for (auto& g : got) o << int(g.what) << ":" << g.waiter << "/" << g.res << " ";
            o << "] vs [";
            for (auto& g : want) o << int(g.what) << ":" << g.waiter << "/" << g.res << " ";
            o << "]";
            err(o.str());
            return;
        }
        if (tracing_ && !got.empty()) {
            std::string t = "  effects:";
            for (auto& g : got)
                t += " " + std::to_string(int(g.what)) + ":" + std::to_string(g.waiter) + "/" +
                     std::to_string(g.res) + "/" + std::to_string(int(g.st));
            note(t);
        }
        for (auto& e : got) {
            switch (e.what) {
            case effect::kind::wake:
                if (slot_state_[e.waiter] == slot::checking) {
                    // A waiter under a check leaves: its deadline, a cancel or close. The check goes on
                    // and decides only the resource's fate.
                    if (e.st == status::ok) err("a place handed to a waiter that waits for a verdict");
                    const int c = check_of_slot(e.waiter);
                    if (c < 0) err("no check under way for a checking waiter");
                    if (c >= 0) checks_[static_cast<std::size_t>(c)].slot = -1;
                } else if (slot_state_[e.waiter] != slot::parked) {
                    err("wake for a waiter that was neither parked nor waiting for a verdict");
                }
                slot_state_[e.waiter] = slot::posted;
                posted_.push_back(e.waiter);
                woken_with_place_[e.waiter] = e.st == status::ok;
                holds_reservation_[e.waiter] = e.st == status::ok;
                if (e.st == status::ok) {
                    woken_at_[e.waiter] = ++clock_;
                    // FIFO: a freed place goes to the oldest waiter still parked.
                    if (older_parked(e.waiter, woken_at_[e.waiter]) >= 0)
                        err("a place went to a younger waiter while an older one was parked");
                }
                if (e.st == status::timeout && !deadline_has_come(e.waiter))
                    err("a waiter timed out before its deadline");
                if (e.st == status::closed && !closed_) err("closed wake from an open pool");
                break;
            case effect::kind::create:
                ++pending_creates_;
                // Creations never take the pool above its max (a lowered one included).
                if (alive() + creations_running() > static_cast<int>(max_))
                    err("a creation started beyond max");
                break;
            case effect::kind::retry_after:
                if (retry_pending_) err("a second retry_after while one is pending");
                retry_pending_ = true;
                break;
            case effect::kind::leak_suspected:
                if (!held_by_.count(e.res) && in_check(e.res) < 0)
                    err("leak reported for a resource nobody holds");
                break;
            case effect::kind::destroy:
                if (held_by_.count(e.res)) err("destroyed a resource that is leased");
                if (in_check(e.res) >= 0) err("destroyed a resource under a borrow check");
                if (health_id_ == e.res) err("destroyed a resource in a health check");
                ++destroyed_[e.res];
                last_reason_[e.res] = e.reason;
                if (destroyed_[e.res] > 1) err("resource " + std::to_string(e.res) + " destroyed twice");
                if (era_of(e.res) < era_now_) --old_alive_;
                break;
            case effect::kind::ready:
                if (++ready_count_ > 1) err("ready said twice");
                if (e.st == status::ok && creations_running() != 0) err("ready while a creation runs");
                if (e.st == status::create_failed && !in_creation_failed_)
                    err("ready(create_failed) without a failed creation");
                if (e.st == status::closed && !in_close_) err("ready(closed) outside close");
                break;
            case effect::kind::drained:
                if (++drained_count_ > 1) err("drained said twice");
                if (!closed_) err("drained before close");
                if (alive() != 0) err("drained while " + std::to_string(alive()) + " resources live");
                if (creations_running() != 0) err("drained while a creation runs");
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
            s.reserved != model_.n_reserved() || s.creating != model_.creating ||
            s.total != s.idle + s.active || s.max != model_.cfg.max || !same_counters(s.c, model_.c)) {
            std::ostringstream o;
            o << "snapshot differs from the model: idle " << s.idle << "/" << model_.idle.size() << " active "
              << s.active << "/" << model_.active << " waiting " << s.waiting << "/" << model_.waiting()
              << " reserved " << s.reserved << "/" << model_.n_reserved() << " creating " << s.creating << "/"
              << model_.creating << " acquires " << s.c.acquires << "/" << model_.c.acquires << " timeouts "
              << s.c.timeouts << "/" << model_.c.timeouts << " destructions " << s.c.destructions << "/"
              << model_.c.destructions << " unavailable " << s.c.unavailable_rejections << "/"
              << model_.c.unavailable_rejections << " rejected " << s.c.rejected << "/" << model_.c.rejected;
            return void(err(o.str()));
        }
        if (s.c.immediate_takes > s.c.acquires) return void(err("more immediate takes than acquires"));
        if (core_.checking() != model_.checking.size()) return void(err("checking count differs"));
        if (core_.ready() != !model_.warming || core_.drained() != model_.drained)
            return void(err("ready() / drained() differ from the model"));
        for (std::size_t i = 0; i < model_.idle.size(); ++i)
            if (id_of(core_.idle_at(i)) != model_.idle[i])
                return void(err("idle order differs from the model"));
        if (core_.next_deadline() != model_.next_deadline()) return void(err("next deadline differs"));
        // No lost wake-up.
        if (!model_.parked.empty() && model_.idle.size() > model_.reserved.size())
            return void(err("free idle resource while a waiter is parked"));
    }

    void hand_out(int s, int id) {
        if (held_by_.count(id)) return void(err("resource " + std::to_string(id) + " handed to two holders"));
        if (in_check(id) >= 0) return void(err("handed out a resource under another check"));
        if (destroyed_.count(id)) return void(err("handed out a destroyed resource"));
        held_by_[id] = s;
        held_.push_back(id);
    }
    void complete(int s) {
        ++completions_[s];
        if (completions_[s] > starts_[s]) err("acquire completed twice");
        slot_state_[s] = slot::free;
        woken_with_place_[s] = false;
        holds_reservation_[s] = false;
        deadline_[s] = std::nullopt;
        waiters_[s] = waiter{};
        model_.w[static_cast<std::size_t>(s)] = model::mw{};
    }

    static bool same_take(const pool_core::take_result& t, const m_take& m) {
        return t.st == m.st && id_of(t.r) == m.r && (!t.r || t.check == m.check);
    }

    // A resource just taken out of idle for a borrower (newcomer, woken waiter, retry) that arrived at
    // `arrival` (harness clock; a newcomer arrives after everything): the oracles of a take. Returns the
    // harness's own verdict on before_acquire for it: due (when the pool has the hook) unless it was
    // made for this borrower: never lent, and made after the borrower arrived.
    static constexpr std::uint64_t newcomer = ~std::uint64_t{0};
    bool took_from_idle(const pool_core::take_result& t, std::uint64_t arrival = newcomer) {
        const int id = id_of(t.r);
        if (destroyed_.count(id)) err("took a destroyed resource");
        if (held_by_.count(id) || in_check(id) >= 0 || health_id_ == id) err("took a resource somebody has");
        if (strict_era_ && era_of(id) < era_now_) err("took a resource made before the latest retire_all");
        const bool lent_before = !ever_lent_.insert(id).second;
        const bool made_for_it = !lent_before && made_at_[static_cast<std::size_t>(id - 1)] > arrival;
        const bool ba_due = cfg_.before_acquire && !made_for_it;
        if (t.check == borrow_check::before_acquire && !ba_due)
            err("before_acquire for a resource made for this acquire");
        if (t.check == borrow_check::none && ba_due)
            err("lent a resource from idle without before_acquire (not made for this acquire)");
        if (t.check == borrow_check::validate && !cfg_.validate_on_borrow)
            err("validation without the option");
        return ba_due;
    }

    // The borrower in slot s got t (already compared with the model): lend it, or wait for its check.
    void after_take(int s, const pool_core::take_result& t, bool ba_due, bool sync) {
        if (t.check == borrow_check::none) {
            hand_out(s, id_of(t.r));
            return complete(s);
        }
        checks_.push_back({id_of(t.r), s, sync, t.check, ba_due});
        slot_state_[s] = sync ? slot::sync_checking : slot::checking;
        if (!sync && waiters_[s].state != waiter_state::checking)
            err("a waiter with a check due is not waiting for its verdict");
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
                if (id_of(r) != mt.r || mt.check != borrow_check::none)
                    return void(err("take_fast differs from the model's take"));
                newcomer_took_a_place();
                check();
                pool_core::take_result t{r, status::ok};
                took_from_idle(t);
                return after_take(s, t, false, false);
            }
            fast_declined = plain_take();
        }
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
        const int variant = static_cast<int>(rng_() % 4);
        auto t = core_.try_take();
        auto mt = model_.try_take();
        if (tracing_)
            note("acquire slot " + std::to_string(s) + ": take " + std::to_string(int(t.st)) + " r" +
                 std::to_string(id_of(t.r)) + " " + check_name(t.check));
        if (!same_take(t, mt)) return void(err("try_take differs"));
        if (t.r && fast_declined) return void(err("take_fast declined a plain take that try_take then made"));
        check();
        if (t.r) {
            newcomer_took_a_place();
            const bool ba_due = took_from_idle(t);
            if (t.check != borrow_check::none) {
                // The newcomer waits for the verdict; its deadline runs meanwhile (the driver's way: the
                // absolute deadline with the timeout it came from, or without it, or with one that did
                // not produce it, which must change nothing).
                std::optional<duration> span;
                if (timeout && variant != 0) span = timeout;
                if (!timeout && variant == 0) span = 10ms;
                core_.wait_for_check(waiters_[s], t.r, now_, deadline, span);
                model_.wait_for_check(s, mt.r, deadline);
                arrival_[s] = ++clock_;
                deadline_[s] = deadline;
                check();
            }
            return after_take(s, t, ba_due, false);
        }
        if (t.st != status::ok) return complete(s);
        effects fx;
        slot_state_[s] = slot::parked;
        status ps;
        if (timeout && variant < 2)
            ps = core_.park(waiters_[s], now_, deadline, timeout, fx);
        else if (timeout)
            ps = core_.park(waiters_[s], now_, timeout, fx);
        else if (variant == 0)
            ps = core_.park(waiters_[s], now_, at, std::optional<duration>(10ms), fx);
        else
            ps = core_.park(waiters_[s], now_, at, fx);
        status ms = model_.park(s, now_, deadline);
        if (tracing_) note("  park -> " + std::to_string(int(ps)));
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
        sync_arrival_[s] = {++clock_, core_.arrive(), model_.arrive()};
        sync_take(s);
    }

    // try_acquire's steps: take (a check due runs through check_done without a waiter), else create
    // with the synchronous factory where a place is free for anyone.
    void sync_take(int s) {
        auto t = core_.try_take(sync_arrival_[s].core);
        auto mt = model_.try_take(sync_arrival_[s].model);
        if (tracing_)
            note("try_acquire slot " + std::to_string(s) + ": take " + std::to_string(int(t.st)) + " r" +
                 std::to_string(id_of(t.r)) + " " + check_name(t.check));
        if (!same_take(t, mt)) return void(err("try_take differs"));
        check();
        if (t.r) {
            newcomer_took_a_place();
            const bool ba_due = took_from_idle(t, sync_arrival_[s].harness);
            return after_take(s, t, ba_due, true);
        }
        if (t.st != status::ok) return complete(s);
        bool b = core_.begin_inline_creation();
        if (b != model_.begin_inline()) return void(err("begin_inline_creation differs"));
        check();
        if (tracing_) note("  inline creation " + std::to_string(b));
        if (!b) return complete(s);
        newcomer_took_a_place();
        if (rng_() % 3 == 0) {  // the factory runs on: anything may happen meanwhile
            slot_state_[s] = slot::inline_creating;
            inline_slots_.push_back(s);
            return;
        }
        finish_inline(s);
    }

    void finish_inline(int s) {
        effects fx;
        if (tracing_) note("finish inline creation of slot " + std::to_string(s));
        if (rng_() % 5 == 0) {
            core_.inline_failed(fx);
            model_.inline_failed();
            slot_state_[s] = slot::free;  // no longer a creation under way
            settle(fx);
            return complete(s);
        }
        int id = new_resource();
        ever_lent_.insert(id);  // lent by inline_created itself
        status cs = core_.inline_created(resource_of(id), fx);
        if (cs != model_.inline_created(id)) return void(err("inline_created differs"));
        slot_state_[s] = slot::free;
        if (cs == status::ok) hand_out(s, id);  // before the effects: it is the caller's at once
        settle(fx);
        if (cs == status::closed && !closed_) return void(err("inline_created said closed in an open pool"));
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
        // Coming back while the pool is at or above its max (without it) or from before the latest
        // retire_all: it must not stay.
        const bool unwanted =
            alive() - 1 + creations_running() >= static_cast<int>(max_) || era_of(id) < era_now_;
        if (tracing_) note("release r" + std::to_string(id) + " kind " + std::to_string(int(kind)));
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
        if (unwanted && !destroyed_.count(id)) err("a returned resource beyond max or retired was kept");
    }

    void op_cancel() {
        std::vector<int> c;
        for (int s = 0; s < slots; ++s)
            if (slot_state_[s] == slot::parked || slot_state_[s] == slot::posted ||
                slot_state_[s] == slot::checking)
                c.push_back(s);
        if (c.empty()) return;
        int s = c[rng_() % c.size()];
        const slot before = slot_state_[s];
        effects fx;
        bool a = core_.cancel(waiters_[s], fx);
        if (tracing_) note("cancel slot " + std::to_string(s) + " -> " + std::to_string(a));
        if (a != model_.cancel(s)) return void(err("cancel differs"));
        if ((before == slot::parked || before == slot::checking) && !a)
            return void(err("a pending waiter could not be cancelled"));
        if (before == slot::posted && a) {
            if (!holds_reservation_[s]) return void(err("cancelled a waiter already decided"));
            holds_reservation_[s] = false;  // decided now; its resumption reports it
            reservation_dropped();
        }
        settle(fx);
        if (a && before != slot::posted && slot_state_[s] != slot::posted)
            err("a cancelled waiter was not woken");
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
        if (tracing_) note("advance to " + std::to_string(now_.time_since_epoch().count()));
        effects fx;
        core_.expire(now_, fx);
        model_.expire(now_);
        // Woken waiters whose deadline has come lose their reservation (decided with a timeout).
        for (int s = 0; s < slots; ++s)
            if (holds_reservation_[s] && deadline_has_come(s)) {
                holds_reservation_[s] = false;
                reservation_dropped();
            }
        settle(fx);  // earliest deadline first, equal deadlines in arrival order
        for (int s = 0; s < slots; ++s)
            if ((slot_state_[s] == slot::parked || slot_state_[s] == slot::checking) && deadline_has_come(s))
                return void(err("a pending waiter whose deadline has come was not timed out"));
    }

    void op_run_wake() {
        if (posted_.empty()) return;
        int s = posted_.front();
        posted_.pop_front();
        effects fx;
        auto t = core_.resume(waiters_[s], fx);
        auto mt = model_.resume(s);
        if (tracing_)
            note("resume slot " + std::to_string(s) + ": " + std::to_string(int(t.st)) + " r" +
                 std::to_string(id_of(t.r)) + " " + check_name(t.check));
        if (!same_take(t, mt)) return void(err("resume differs"));
        if (holds_reservation_[s] && !t.r) reservation_dropped();  // a half-open circuit's budget is used up
        holds_reservation_[s] = false;
        settle(fx);
        if (t.r) {
            if (!woken_with_place_[s])
                return void(err("a waiter woken with an error resumed with a resource"));
            // Served in arrival order: nobody older has been parked since before this waiter got its place
            // (a waiter that timed out or was cancelled is no longer parked; one that re-parked after a
            // rejected resource did so after the place was given).
            if (older_parked(s, woken_at_[s]) >= 0)
                return void(err("a younger waiter was served while an older one was parked"));
            const bool ba_due = took_from_idle(t, arrival_[s]);
            return after_take(s, t, ba_due, false);
        }
        if (t.st == status::timeout && !deadline_has_come(s))
            return void(err("a resumption reported a timeout before the deadline"));
        complete(s);
    }

    // The verdict of one check under way: the borrower's, a synchronous caller's, or one whose borrower
    // left (orphaned).
    void op_verdict() {
        if (checks_.empty()) return;
        const std::size_t i = rng_() % checks_.size();
        const pending_check pc = checks_[i];
        checks_.erase(checks_.begin() + static_cast<std::ptrdiff_t>(i));  // nobody's while it is decided
        const bool passed = rng_() % 10 < 7;
        if (rng_() % 2 == 0) now_ += std::chrono::nanoseconds(rng_() % 5'000'000);  // no expire() yet
        effects fx;
        auto v = core_.check_done(resource_of(pc.id), passed, now_, fx);
        auto mv = model_.check_done(pc.id, passed, now_);
        if (tracing_)
            note("verdict r" + std::to_string(pc.id) + " " + check_name(pc.check) + " slot " +
                 std::to_string(pc.slot) + (pc.sync ? " sync" : "") + (passed ? " pass" : " FAIL") +
                 " -> w " + std::to_string(v.w ? slot_of(v.w) : -1) + " " + std::to_string(int(v.t.st)) +
                 " r" + std::to_string(id_of(v.t.r)) + " " + check_name(v.t.check));
        if ((v.w ? slot_of(v.w) : -1) != mv.w || !same_take(v.t, mv.t))
            return void(err("check_done differs"));
        ++verdicts_;
        sync_verdicts_ += pc.sync;
        const bool orphaned = pc.slot < 0;
        const int expected = orphaned || pc.sync ? -1 : pc.slot;
        if ((v.w ? slot_of(v.w) : -1) != expected)
            return void(err("a verdict reached " + std::string(v.w ? "a waiter" : "nobody") +
                            ", not the borrower the harness recorded"));
        // Unwanted when it comes back: the pool is at its max without it, or it was retired.
        const bool unwanted =
            alive() - 1 + creations_running() >= static_cast<int>(max_) || era_of(pc.id) < era_now_;
        settle(fx);
        if (!error_.empty()) return;
        if (!passed) {
            if (!destroyed_.count(pc.id) || last_reason_[pc.id] != destroy_reason::rejected)
                return void(err("a rejected resource was not destroyed as rejected"));
        }
        if (orphaned) {
            ++orphaned_verdicts_;
            if (v.t.r || v.t.st != status::ok) return void(err("an orphaned verdict returned a result"));
            if (passed && (closed_ || unwanted) && !destroyed_.count(pc.id))
                return void(err("an orphaned resource was kept by a closed or over-full pool"));
            if (passed && closed_ && last_reason_[pc.id] != destroy_reason::closed)
                return void(err("an orphaned resource of a closed pool was not destroyed as closed"));
            if (passed && !closed_ && !unwanted && destroyed_.count(pc.id))
                return void(err("an orphaned resource that passed was destroyed"));
            return;
        }
        const int s = pc.slot;
        if (!passed) {
            if (pc.sync) {
                if (v.t.r || v.t.st != status::ok)
                    return void(err("a synchronous rejection returned a result"));
                return sync_take(s);  // it takes again itself
            }
            // The waiter took again in its arrival position: another resource, parked, or an error.
            if (v.t.r) {
                newcomer_took_a_place();  // a retry takes like a newcomer: never a reserved place
                const bool ba_due = took_from_idle(v.t, arrival_[s]);
                return after_take(s, v.t, ba_due, false);
            }
            if (v.t.st == status::timeout && !deadline_has_come(s))
                return void(err("a retry timed out before the waiter's deadline"));
            if (v.t.st != status::ok) return complete(s);
            if (deadline_has_come(s)) return void(err("re-parked a waiter whose deadline has passed"));
            if (waiters_[s].state != waiter_state::parked)
                return void(err("a re-parked waiter is not parked"));
            slot_state_[s] = slot::parked;
            parked_at_[s] = ++clock_;  // its arrival stays its first
            ++reparks_;
            return;
        }
        // Passed: the next check on the same resource, or lent.
        if (v.t.r && v.t.check != borrow_check::none) {
            if (v.t.r != resource_of(pc.id)) return void(err("the next check is on another resource"));
            if (pc.check != borrow_check::validate || v.t.check != borrow_check::before_acquire)
                return void(err(std::string("check order: ") + check_name(v.t.check) + " after " +
                                check_name(pc.check)));
            if (!pc.ba_due)
                return void(err("before_acquire after validation for a resource made for this acquire"));
            checks_.push_back({pc.id, s, pc.sync, v.t.check, pc.ba_due});
            if (!pc.sync && waiters_[s].state != waiter_state::checking)
                return void(err("a waiter with a further check is not waiting for it"));
            return;
        }
        if (v.t.r) {
            if (v.t.r != resource_of(pc.id)) return void(err("lent another resource than the one checked"));
            if (pc.check == borrow_check::validate && pc.ba_due)
                return void(err("lent after validation without before_acquire (not made for this acquire)"));
            hand_out(s, pc.id);
            return complete(s);
        }
        if (v.t.st != status::closed || !closed_) return void(err("a passed check lent nothing"));
        if (!destroyed_.count(pc.id)) return void(err("a checked resource of a closed pool was kept"));
        complete(s);
    }

    void op_finish_create() {
        if (!inline_slots_.empty() && (pending_creates_ == 0 || rng_() % 3 == 0)) {
            const std::size_t i = rng_() % inline_slots_.size();
            const int s = inline_slots_[i];
            inline_slots_.erase(inline_slots_.begin() + static_cast<std::ptrdiff_t>(i));
            return finish_inline(s);
        }
        if (pending_creates_ == 0) return;
        --pending_creates_;
        effects fx;
        if (rng_() % 6 == 0) {
            waiter* w = core_.creation_failed(fx);
            int ms = model_.creation_failed();
            if (tracing_) note("creation failed");
            if ((w ? slot_of(w) : -1) != ms) return void(err("creation_failed chose a different waiter"));
            in_creation_failed_ = true;
            settle(fx);
            in_creation_failed_ = false;
        } else {
            int id = new_resource();
            if (tracing_) note("created r" + std::to_string(id));
            core_.creation_succeeded(resource_of(id), fx);
            model_.creation_succeeded(id);
            settle(fx);
        }
    }

    // Health rounds, one resource at a time; its check may still run while other things happen.
    void op_health() {
        effects fx;
        if (health_id_ >= 0) {
            const int id = health_id_;
            health_id_ = -1;
            const bool healthy = rng_() % 4 != 0;
            const bool unwanted =
                alive() - 1 + creations_running() >= static_cast<int>(max_) || era_of(id) < era_now_;
            if (tracing_)
                note("end health check r" + std::to_string(id) + " healthy " + std::to_string(healthy));
            core_.end_check(resource_of(id), healthy, fx);
            model_.end_check(id, healthy);
            settle(fx);
            if ((!healthy || closed_ || unwanted) && !destroyed_.count(id))
                err("an unhealthy, retired or surplus resource (or one of a closed pool) was kept");
            if (healthy && !closed_ && !unwanted && destroyed_.count(id))
                err("a healthy resource was destroyed");
            return;
        }
        if (!round_open_ || rng_() % 8 == 0) {
            core_.begin_health_round();
            model_.begin_health_round();
            round_open_ = true;
            round_seen_.clear();
        }
        resource* r = core_.begin_check();
        int m = model_.begin_check();
        if (id_of(r) != m) return void(err("health check picked a different resource"));
        if (!r) {
            round_open_ = false;
            return check();
        }
        if (tracing_) note("health check r" + std::to_string(m));
        if (!round_seen_.insert(m).second) return void(err("a resource checked twice in one round"));
        if (held_by_.count(m) || in_check(m) >= 0 || destroyed_.count(m))
            return void(err("a health check took a resource that is not idle"));
        health_id_ = m;
        check();
        if (rng_() % 2 == 0) op_health();  // ends at once
    }

    void op_circuit() {
        const circuit s = static_cast<circuit>(rng_() % 3);
        const auto probes = static_cast<std::uint32_t>(rng_() % 3);
        effects fx;
        if (tracing_) note("circuit " + std::to_string(int(s)) + " probes " + std::to_string(probes));
        core_.set_circuit(s, fx, probes);
        model_.set_circuit(s, probes);
        if (s == circuit::open && circuit_ != circuit::open && reservations() > 0) {
            // Woken waiters are decided: unavailable.
            std::fill(holds_reservation_.begin(), holds_reservation_.end(), false);
            reservation_dropped();
        }
        circuit_ = s;
        settle(fx);
    }

    void op_housekeep() {
        now_ += std::chrono::milliseconds(rng_() % 30);
        effects fx;
        if (tracing_) note("housekeep");
        core_.housekeep(now_, fx);
        model_.housekeep(now_);
        settle(fx, true);  // evictions and leak reports of one pass carry no order
    }

    void op_backoff_elapsed() {
        if (!retry_pending_) return;
        retry_pending_ = false;
        if (tracing_) note("backoff elapsed");
        effects fx;
        core_.backoff_elapsed(fx);
        model_.backoff_elapsed();
        settle(fx);
    }

    void op_replenish() {
        if (tracing_) note("replenish");
        effects fx;
        core_.replenish(fx);
        model_.replenish();
        settle(fx);
    }

    void op_set_max() {
        // Lower or higher, or back to where the run started.
        auto m = rng_() % 2 == 0 ? cfg_.max : 1 + static_cast<std::uint32_t>(rng_() % 6);
        if (m < cfg_.min) m = cfg_.min;
        max_ = m;
        if (tracing_) note("set_max " + std::to_string(m));
        effects fx;
        core_.set_max(m, fx);
        model_.set_max(m);
        settle(fx);
        // Idle resources beyond the new max are gone at once; reserved ones are spoken for.
        if (alive() + creations_running() > static_cast<int>(max_) && idle_count() > reservations())
            err("idle resources beyond a lowered max were kept");
    }

    void op_retire_all() {
        effects fx;
        ++era_now_;
        if (tracing_) note("retire_all");
        core_.retire_all(fx);
        model_.retire_all();
        // Every idle resource goes now, but those that back a woken waiter's reservation.
        old_alive_ = alive();
        settle(fx);
        if (!closed_ && idle_count() > reservations()) err("idle resources kept by retire_all");
        // Places reserved now may be served by old resources later (they are on their way to
        // their waiters); without any, no old resource is ever taken again or left idle.
        strict_era_ = reservations() == 0;
    }

    void op_close() {
        effects fx;
        bool a = core_.close(fx);
        if (tracing_) note("close");
        if (a != model_.close()) return void(err("close differs"));
        closed_ = true;
        std::fill(holds_reservation_.begin(), holds_reservation_.end(), false);
        in_close_ = true;
        settle(fx);
        in_close_ = false;
        for (int s = 0; s < slots; ++s)
            if (slot_state_[s] == slot::parked || slot_state_[s] == slot::checking)
                return void(err("close left a waiter pending"));
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
    // The inline paths are for pools with nothing to check, stamp or report (not a documented rule:
    // these are the driver's contract with take_fast / release_fast).
    bool plain_take() const {
        return !closed_ && circuit_ == circuit::closed && !cfg_.before_acquire && !cfg_.validate_on_borrow &&
               cfg_.acquire_ttl == duration::zero();
    }
    bool plain_release() const {
        return !closed_ && parked_count() == 0 && !cfg_.reports && !cfg_.lifetimes &&
               cfg_.idle_ttl == duration::zero() && !cfg_.validate_on_borrow &&
               cfg_.acquire_ttl == duration::zero() && old_alive_ == 0 &&
               alive() + creations_running() <= static_cast<int>(max_);
    }
    // No barging: a newcomer (or a retry) never takes a place while a waiter is parked: every free place is
    // already reserved for the parked waiters.
    void newcomer_took_a_place() {
        if (parked_count() > 0) err("a newcomer took a place while a waiter was parked");
    }
    // After every operation (the invariants of docs/01-concepts.md), from what the harness created,
    // destroyed, holds and set; the core's audit() and the model are not consulted.
    void check_places() {
        if (!error_.empty()) return;
        const int parked = parked_count();
        const auto total = static_cast<std::uint32_t>(alive() + creations_running());
        const int idle = idle_count();
        if (total != core_.total())
            return void(err("total differs from what the harness created and destroyed"));
        if (total <= max_) lingering_ = false;
        if (total > max_ && idle > reservations() && !reservation_fell_through())
            return void(err("total above max with an unreserved idle resource"));
        if (idle < 0) return void(err("the harness's records disagree"));
        int checking = 0;
        for (const auto& c : checks_) checking += c.slot >= 0 && !c.sync;
        if (static_cast<std::uint32_t>(checking) != core_.checking())
            return void(err("waiters waiting for a verdict differ from the harness's"));
        if (closed_ && (parked > 0 || idle > 0 || checking > 0))
            return void(err("a closed pool keeps a pending waiter or an idle resource"));
        // Readiness: said exactly when no creation runs any more (or at a failure, or at close).
        if (ready_count_ == 0 && creations_running() == 0) return void(err("the pre-warm is over, no ready"));
        // Drained: said as soon as close left nothing.
        if (closed_ && drained_count_ == 0 && alive() == 0 && creations_running() == 0)
            return void(err("closed and empty, no drained"));
        if (strict_era_ && old_alive_ > 0 && idle > 0) {
            for (std::size_t i = 0; i < core_.idle(); ++i)
                if (era_of(id_of(core_.idle_at(i))) < era_now_)
                    return void(err("a resource made before the latest retire_all sits in idle"));
        }
        if (parked == 0) return;
        // Woken waiters hold at most one reservation each; every other idle resource is free.
        if (idle > reservations())
            return void(err("lost wake-up: a waiter is parked while an idle resource is unreserved"));
        const bool capacity_free = total < max_ && circuit_ != circuit::open && !closed_ && !retry_pending_;
        const int needed = std::min(parked, static_cast<int>(cfg_.max_concurrent_creations));
        if (capacity_free && creations_running() < needed)
            err("a waiter is parked while capacity is free and " + std::to_string(creations_running()) +
                " creations run (" + std::to_string(needed) + " required)");
    }
    // A lowered max keeps idle resources that back reservations; a reservation that then ends without
    // being served (timeout, cancel, the circuit opening) leaves such a resource idle, unreserved, until
    // it is next lent and returned (never taken from a holder, dropped as it comes back).
    bool reservation_fell_through() const { return lingering_; }
    void reservation_dropped() {
        if (alive() + creations_running() > static_cast<int>(max_)) lingering_ = true;
    }

    std::mt19937_64 rng_;
    config cfg_;
    pool_core core_;
    model model_;
    time_point now_ = time_point{} + 1s;
    int op_ = 0;
    std::vector<waiter> waiters_;
    std::vector<slot> slot_state_;
    std::vector<int> completions_, starts_;
    std::deque<int> posted_;
    std::unordered_set<int> ever_lent_;  // every resource the harness saw taken out for a borrower
    std::vector<pending_check> checks_;  // resources under a borrow check
    std::vector<int> inline_slots_;      // try_acquires whose synchronous factory runs
    int health_id_ = -1;                 // the resource in a health check, or -1
    bool round_open_ = false;
    std::set<int> round_seen_;
    int pending_creates_ = 0;
    bool retry_pending_ = false;
    bool lifetimes_ = false;
    // Harness records for the oracles, kept independently of the core and the model.
    std::vector<std::uint64_t> arrival_;  // when the acquire first parked or took (kept across a re-park)
    // A synchronous caller's arrival: the harness clock's, and the core's and the model's arrive().
    struct sync_arrival {
        std::uint64_t harness = 0, core = 0, model = 0;
    };
    std::vector<sync_arrival> sync_arrival_;
    std::vector<std::uint64_t> made_at_;    // by resource id - 1: the harness clock when it was made
    std::vector<std::uint64_t> parked_at_;  // when it last parked or re-parked
    std::vector<std::uint64_t> woken_at_;   // when a place was handed to it (a wake with status ok)
    std::vector<bool> woken_with_place_;    // its posted resumption carries a place, not an error
    std::vector<bool> holds_reservation_;   // ... and that place is still reserved for it
    std::vector<std::optional<time_point>> deadline_;  // its deadline, computed here
    std::uint64_t clock_ = 0;                          // orders the stamps above
    circuit circuit_ = circuit::closed;                // as last set
    std::uint32_t max_;                                // as last set
    std::vector<int> era_;                             // per resource: retire_all calls before it was made
    int era_now_ = 0;
    int old_alive_ = 0;        // resources alive made before the latest retire_all
    bool strict_era_ = false;  // the latest retire_all found no reservation
    bool lingering_ = false;   // over max, a reservation fell through: its idle resource may stay
    bool closed_ = false;
    int ready_count_ = 0, drained_count_ = 0;
    bool in_close_ = false, in_creation_failed_ = false;
    std::uint64_t fast_takes_ = 0, fast_releases_ = 0, verdicts_ = 0, orphaned_verdicts_ = 0, reparks_ = 0,
                  sync_verdicts_ = 0;
    std::vector<std::unique_ptr<res>> made_;
    std::map<int, int> destroyed_;
    std::map<int, destroy_reason> last_reason_;
    std::map<int, int> held_by_;
    std::vector<int> held_;
    std::string error_;
    const bool tracing_ = std::getenv("RESPOOL_MODEL_TRACE") != nullptr;
    std::string trail_;
};

// Random operations on the core's request_queue and on queue_model side by side. Every request leaves
// exactly once per time it was queued (taken, cancelled, expired or failed), expiry happens exactly when
// a request's own deadline has come, and the core's audit holds after every step.
class queue_run {
public:
    static constexpr int slots = 24;

    queue_run(std::uint64_t seed, std::size_t max_waiters)
        : rng_(seed), core_(max_waiters), nodes_(slots), where_(slots, place::free), taken_(slots) {
        model_.max = max_waiters;
    }

    std::string step(int op_index) {
        op_ = op_index;
        const int pick = static_cast<int>(rng_() % 100);
        if (pick < 40)
            op_push();
        else if (pick < 52)
            op_cancel();
        else if (pick < 68)
            op_take();
        else if (pick < 76)
            op_requeue();
        else if (pick < 96)
            op_expire();
        else
            op_fail_all();
        compare();
        return error_;
    }

    [[nodiscard]] std::uint64_t pushes() const noexcept { return pushes_; }
    [[nodiscard]] std::uint64_t expired() const noexcept { return expired_; }
    [[nodiscard]] std::uint64_t cancelled() const noexcept { return cancelled_; }
    [[nodiscard]] std::uint64_t requeued() const noexcept { return requeued_; }
    [[nodiscard]] std::uint64_t refused() const noexcept { return refused_; }

private:
    enum class place { free, queued, taken };

    void err(const std::string& what) {
        if (error_.empty()) error_ = "request queue, op " + std::to_string(op_) + ": " + what;
    }
    int slot_in(place p) {
        std::vector<int> in;
        for (int i = 0; i < slots; ++i)
            if (where_[static_cast<std::size_t>(i)] == p) in.push_back(i);
        return in.empty() ? -1 : in[rng_() % in.size()];
    }
    int id_of(const waiter* w) const {
        for (int i = 0; i < slots; ++i)
            if (&nodes_[static_cast<std::size_t>(i)] == w) return i;
        return -1;
    }

    void op_push() {
        const int i = slot_in(place::free);
        if (i < 0) return;
        const auto k = static_cast<std::size_t>(i);
        nodes_[k] = waiter{};
        std::optional<time_point> deadline;
        status st;
        switch (rng_() % 6) {
        case 0:  // the shared timeout of most requests
        case 1: {
            const duration t = rng_() % 2 ? duration(10ms) : duration(25ms);
            deadline = saturating_after(now_, t);
            st = core_.push_for(nodes_[k], now_, t);
            break;
        }
        case 2: {  // a distinct one (nanoseconds)
            const duration t = std::chrono::nanoseconds(1 + rng_() % 40'000'000);
            deadline = saturating_after(now_, t);
            st = core_.push_for(nodes_[k], now_, t);
            break;
        }
        case 3: {  // absolute, possibly past
            deadline = now_ - 5ms + std::chrono::microseconds(rng_() % 40'000);
            st = core_.push(nodes_[k], *deadline, duration::zero());
            break;
        }
        case 4:  // "as long as it takes"
            deadline = time_point::max();
            st = core_.push_for(nodes_[k], now_, duration::max());
            break;
        default:  // a condition, no deadline
            st = core_.push_unbounded(nodes_[k]);
            break;
        }
        std::uint64_t seq = 0;
        const bool m = model_.push(i, deadline, seq);
        if ((st == status::ok) != m) return err("push: the core says " + std::to_string(int(st)));
        if (!m) {
            if (st != status::exhausted) err("a refused push is not exhausted");
            ++refused_;
            return;
        }
        ++pushes_;
        where_[k] = place::queued;
        taken_[k] = {i, seq, deadline};
    }

    void op_cancel() {
        // Queued or not: cancelling one already gone says false and changes nothing.
        const int i = static_cast<int>(rng_() % slots);
        const auto k = static_cast<std::size_t>(i);
        const bool c = core_.cancel(nodes_[k]);
        const bool m = model_.cancel(i);
        if (c != m) return err("cancel of " + std::to_string(i) + " differs");
        if (c) {
            ++cancelled_;
            where_[k] = place::free;
        }
    }

    void op_take() {
        const std::size_t n = rng_() % 5;
        std::vector<waiter*> out;
        const std::size_t k = core_.take(n, out);
        const auto m = model_.take(n);
        if (k != out.size() || k != m.size()) return err("take took another number");
        for (std::size_t j = 0; j < k; ++j) {
            const int id = id_of(out[j]);
            if (id != m[j].id) return err("take: not the oldest first");
            if (request_queue::queued(*out[j])) return err("a taken request still says queued");
            where_[static_cast<std::size_t>(id)] = place::taken;
        }
    }

    void op_requeue() {
        const int i = slot_in(place::taken);
        if (i < 0) return;
        const auto k = static_cast<std::size_t>(i);
        if (rng_() % 3 == 0) {  // served: it is done with the queue
            where_[k] = place::free;
            return;
        }
        core_.requeue(nodes_[k]);
        model_.requeue(taken_[k]);
        where_[k] = place::queued;
        ++requeued_;
    }

    void op_expire() {
        now_ += std::chrono::microseconds(rng_() % 8000);
        effects fx;
        core_.expire(now_, fx);
        const auto m = model_.expire(now_);
        if (fx.size() != m.size())
            return err("expire: " + std::to_string(fx.size()) + " left, the model says " +
                       std::to_string(m.size()));
        for (std::size_t j = 0; j < m.size(); ++j) {
            if (fx[j].what != effect::kind::wake || fx[j].st != status::exhausted)
                return err("an expired request is not failed as exhausted");
            const int id = id_of(fx[j].w);
            if (id != m[j].id) return err("expire: not in (deadline, arrival) order");
            if (*m[j].deadline > now_) return err("expired before its deadline");
            where_[static_cast<std::size_t>(id)] = place::free;
        }
        expired_ += m.size();
        if (const auto d = core_.next_deadline(); d && *d <= now_) err("a due request stayed queued");
    }

    void op_fail_all() {
        effects fx;
        core_.fail_all(status::closed, fx);
        const auto m = model_.fail_all();
        if (fx.size() != m.size()) return err("fail_all: another number");
        for (std::size_t j = 0; j < m.size(); ++j) {
            if (fx[j].st != status::closed || id_of(fx[j].w) != m[j].id)
                return err("fail_all: not every request, oldest first, with the status given");
            where_[static_cast<std::size_t>(m[j].id)] = place::free;
        }
    }

    void compare() {
        if (!error_.empty()) return;
        if (const std::string a = core_.check(); !a.empty()) return err("core audit: " + a);
        if (core_.size() != model_.q.size()) return err("size differs");
        if (core_.next_deadline() != model_.next_deadline()) return err("next deadline differs");
        const int front = core_.front() ? id_of(core_.front()) : -1;
        if (front != (model_.q.empty() ? -1 : model_.q.front().id)) return err("front differs");
        std::size_t queued = 0;
        for (int i = 0; i < slots; ++i) {
            const bool q = request_queue::queued(nodes_[static_cast<std::size_t>(i)]);
            if (q != (where_[static_cast<std::size_t>(i)] == place::queued))
                return err("request " + std::to_string(i) +
                           " is queued in the core only, or in the model only");
            queued += q ? 1 : 0;
        }
        if (queued != model_.q.size()) return err("queued requests differ");
    }

    std::mt19937_64 rng_;
    request_queue core_;
    queue_model model_;
    std::vector<waiter> nodes_;
    std::vector<place> where_;
    std::vector<queue_model::entry> taken_;  // each slot's arrival record, for a requeue
    time_point now_ = time_point{} + std::chrono::hours(1);
    int op_ = 0;
    std::uint64_t pushes_ = 0, expired_ = 0, cancelled_ = 0, requeued_ = 0, refused_ = 0;
    std::string error_;
};

}  // namespace model_check
