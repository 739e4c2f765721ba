// The return list's protocol (src/asio/return_list.hpp), model-checked: every interleaving of its
// atomic steps, explored exhaustively with the real list and the real core. Each of the list's
// operations is one atomic read-modify-write of its head, and is taken here as one step; that they
// are atomic is tested under real threads in tests/tsan/lock_free_release_test.cpp. Two holders give their
// resources back without the lock while a third party acts under it: a waiter that parks (and takes a
// resource when woken), or close; and an inline taker absorbs the list when the core has nothing idle.
// The pool's lock is modelled as an owner, so a locked section's steps interleave with the lock-free
// steps of the others but never with another locked section. Every access to the list's one atomic
// word (a push's compare-and-swap, an absorb's or a close's exchange, an open's store) is a step of
// its own, and the driver's sequence around them (release, the guard's absorb, the unlock that opens
// or closes the list) is reproduced step by step. All of them are read-modify-writes of that one word
// or happen under the lock, so the interleavings of these steps are every behaviour the protocol has.
//
// After every schedule: no resource is lost or held twice, a waiter is always served (a lost wake-up
// would leave it parked beside a returned resource), close destroys each resource exactly once, the
// core's audit holds, the list is empty once a last locked section has run, and no releaser takes a
// step once the pool has drained (it could be freed then: a release must be over when its push
// succeeds).
#include "asio/pool_impl.hpp"
#include "asio/return_list.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace respool;
using respool::detail::closed_mark;
using respool::detail::core_of;
using respool::detail::node_of;
using respool::detail::resource_node;
using respool::detail::return_list;

enum class third_party { waiter_parks, pool_closes };

// One run of a schedule: the core, the list, the lock's owner, and the actors' program counters.
class world {
public:
    static constexpr int releasers = 2;  // actors 0 and 1; 2 is the third party; 3 the inline taker
    static constexpr int actors = 4;

    explicit world(third_party who) : who_(who), core_(config()) {
        core::effects started;
        core_.start(started);
        for (int i = 0; i < releasers; ++i) {
            nodes_[i] = std::make_unique<resource_node>();
            new (nodes_[i]->core_part) core::resource();
            core::effects fx;
            EXPECT_TRUE(core_.begin_inline_creation());
            EXPECT_EQ(core_.inline_created(core_of(nodes_[i].get()), fx), core::status::ok);
            holder_[i] = nodes_[i].get();
        }
        if (core_.uncontended()) list_.open();  // the unlock after start() opened it
    }

    // Whether actor `a` can take its next step now.
    [[nodiscard]] bool enabled(int a) const {
        if (done_[a]) return false;
        if (section_[a] == 2 || section_[a] == 3) return true;  // holds the lock: goes on
        if (a == 2 && parked_ && !woken_) return false;
        return !needs_lock(a) || owner_ < 0;
    }
    [[nodiscard]] bool all_done() const {
        for (bool d : done_)
            if (!d) return false;
        return true;
    }
    void step(int a) {
        if (a < releasers) {
            if (drained_)
                ADD_FAILURE() << "a releaser touched the pool after it drained (and could be freed)";
            return release_step(a);
        }
        if (a == 2) return third_party_step();
        return take_inline_step();
    }
    // What must hold once every actor is done; empty when it does.
    [[nodiscard]] std::string verdict() {
        if (owner_ >= 0) return "the lock is still held";
        // A last locked section, as any later call would make: it absorbs whatever is on the list.
        section_[3] = 0;
        while (section_[3] != 1) locked_section(3, [] {});
        if (resource_node* h = list_.head.load(); h && h != closed_mark())
            return "a resource stayed on the return list";
        if (std::string a = core_.audit(); !a.empty()) return "core audit: " + a;
        std::array<int, releasers> seen{};
        if (who_ == third_party::pool_closes) {
            if (taken_) {  // the inline taker's lease comes back after close
                core::effects fx;
                core_.release(core_of(taken_), core::pool_core::release_kind::ok, fx);
                apply(fx);
            }
            for (int i = 0; i < releasers; ++i)
                if (destroyed_[i] != 1) return "a resource was not destroyed exactly once";
            if (!drained_) return "close never drained";
            return {};
        }
        if (!served_) return "the waiter was never served";
        auto count = [&](resource_node* n) {
            for (int i = 0; i < releasers; ++i)
                if (n == nodes_[i].get()) ++seen[i];
        };
        count(served_);
        if (taken_) count(taken_);
        for (std::uint32_t k = core_.idle(); k > 0; --k) {  // the idle ones, in order
            core::resource* r = core_.take_fast();
            if (!r) return "the core counts idle resources it cannot lend";
            count(node_of(r));
        }
        for (int s : seen)
            if (s != 1) return "a resource is lost or held twice";
        return {};
    }

private:
    static core::config config() {
        core::config c;
        c.max = 2;
        return c;
    }
    [[nodiscard]] bool needs_lock(int a) const {
        if (a < releasers) return pc_[a] >= 1;
        return true;  // the third party and the inline taker work under the lock
    }

    void apply(core::effects& fx) {
        for (std::size_t i = 0; i < fx.size(); ++i) {
            const core::effect& e = fx[i];
            if (e.what == core::effect::kind::wake && e.w == &waiter_) woken_ = true;
            if (e.what == core::effect::kind::destroy)
                for (int k = 0; k < releasers; ++k)
                    if (node_of(e.r) == nodes_[k].get()) ++destroyed_[k];
            if (e.what == core::effect::kind::drained) drained_ = true;
        }
    }

    // The guard's absorb, at the start of a locked section (driver_state::absorb_returns_locked).
    void absorb() {
        resource_node* h = list_.head.load(std::memory_order_relaxed);
        if (!h || h == closed_mark()) return;
        for (resource_node* r = list_.take_all(); r;) {
            resource_node* next = r->next_returned;
            if (!core_.release_fast(core_of(r))) {
                ADD_FAILURE() << "release_fast refused while the list is open";
                return;
            }
            r = next;
        }
    }

    // A `guard` section of actor `a` in three steps, each holding the lock: (1) lock and absorb;
    // (2) `body`, then bring the list in line with the core (driver_state::unlock_returns): open it,
    // or unlock when it is as it should be; (3) when it must close: close it, taking what it holds
    // back into the core, and unlock. Other threads' pushes may land between any two of them.
    // section_[a]: 0 before, 3 after (1), 2 after (2) when the list must close, 1 when done.
    void locked_section(int a, const std::function<void()>& body) {
        if (section_[a] == 0) {
            owner_ = a;
            absorb();
            section_[a] = 3;
            return;
        }
        if (section_[a] == 3) {
            body();
            const bool want = core_.uncontended();
            if (want == list_.is_open()) {
                owner_ = -1;
                section_[a] = 1;
                return;
            }
            if (want) {
                list_.open();
                owner_ = -1;
                section_[a] = 1;
                return;
            }
            section_[a] = 2;
            return;
        }
        core::effects fx;
        for (resource_node* r = list_.close(); r;) {
            resource_node* next = r->next_returned;
            core_.release(core_of(r), core::pool_core::release_kind::ok, fx);
            r = next;
        }
        apply(fx);
        owner_ = -1;
        section_[a] = 1;
    }

    // pool_impl::release, one visible step at a time: pc 0 pushes (done when that succeeds: the
    // resource is the pool's again); the list was closed: 1 is the inline release under the lock
    // (plain_guard: release_fast, no absorb, the list untouched); 2 the general one, a guard section
    // (finish_release).
    void release_step(int a) {
        resource_node* mine = holder_[a];
        switch (pc_[a]) {
        case 0:
            if (list_.push(mine))
                done_[a] = true;
            else
                pc_[a] = 1;
            return;
        case 1:
            if (core_.release_fast(core_of(mine)))
                done_[a] = true;
            else
                pc_[a] = 2;
            return;
        default:
            locked_section(a, [&] {
                core::effects fx;
                core_.release(core_of(mine), core::pool_core::release_kind::ok, fx);
                apply(fx);
            });
            if (section_[a] == 1) done_[a] = true;
        }
    }

    // The waiter: one guard section that takes an idle resource or parks; once woken, one that
    // resumes. Or close, in one guard section.
    void third_party_step() {
        if (who_ == third_party::pool_closes) {
            locked_section(2, [&] {
                core::effects fx;
                core_.close(fx);
                apply(fx);
            });
            if (section_[2] == 1) done_[2] = true;
            return;
        }
        if (!parked_) {
            locked_section(2, [&] {
                core::effects fx;
                const auto t = core_.try_take();
                if (t.r) {
                    served_ = node_of(t.r);
                } else {
                    EXPECT_EQ(core_.park(waiter_, core_.now(), std::nullopt, fx), core::status::ok);
                    parked_ = true;
                }
                apply(fx);
            });
        } else {
            locked_section(2, [&] {
                core::effects fx;
                const auto t = core_.resume(waiter_, fx);
                EXPECT_EQ(t.st, core::status::ok);
                served_ = node_of(t.r);
                apply(fx);
            });
        }
        if (section_[2] != 1) return;
        section_[2] = 0;
        if (served_) done_[2] = true;
    }

    // take_inline with a return list (plain_guard, no open/close): the core first, then the list.
    void take_inline_step() {
        core::resource* r = core_.take_fast();
        if (!r) {
            absorb();
            r = core_.take_fast();
        }
        taken_ = r ? node_of(r) : nullptr;
        done_[3] = true;
    }

    third_party who_;
    core::pool_core core_;
    return_list list_;
    std::array<std::unique_ptr<resource_node>, releasers> nodes_;
    std::array<resource_node*, releasers> holder_{};
    int owner_ = -1;
    std::array<int, actors> pc_{};
    std::array<int, actors> section_{};
    std::array<bool, actors> done_{};
    core::waiter waiter_;
    bool parked_ = false, woken_ = false;
    resource_node* served_ = nullptr;
    resource_node* taken_ = nullptr;
    std::array<int, releasers> destroyed_{};
    bool drained_ = false;
};

// Explores every schedule depth first, replaying each prefix on a fresh world (the core is not
// copyable). Returns the number of complete schedules; fails the test at the first broken one.
long explore(third_party who, std::vector<int>& schedule) {
    world w(who);
    for (int a : schedule) w.step(a);
    if (w.all_done()) {
        const std::string v = w.verdict();
        if (!v.empty()) {
            std::string s;
            for (int a : schedule) s += std::to_string(a) + " ";
            ADD_FAILURE() << v << " (schedule: " << s << ")";
            return -1;
        }
        return 1;
    }
    long n = 0;
    bool any = false;
    for (int a = 0; a < world::actors; ++a) {
        if (!w.enabled(a)) continue;
        any = true;
        schedule.push_back(a);
        const long m = explore(who, schedule);
        schedule.pop_back();
        if (m < 0) return -1;
        n += m;
    }
    if (!any) {
        ADD_FAILURE() << "no actor can move and some are not done: a lost wake-up or a lock never released";
        return -1;
    }
    return n;
}

}  // namespace

TEST(return_list_model, a_parked_waiter_is_served_and_nothing_is_lost_in_any_interleaving) {
    std::vector<int> schedule;
    const long n = explore(third_party::waiter_parks, schedule);
    ASSERT_GT(n, 0);
    std::printf("return list model, a waiter parks: %ld schedules, every one correct\n", n);
}

TEST(return_list_model, close_destroys_every_resource_once_in_any_interleaving) {
    std::vector<int> schedule;
    const long n = explore(third_party::pool_closes, schedule);
    ASSERT_GT(n, 0);
    std::printf("return list model, the pool closes: %ld schedules, every one correct\n", n);
}
