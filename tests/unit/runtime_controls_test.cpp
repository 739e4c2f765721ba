// set_max and retire_all in the core, against oracles of their own (no reference model): a random mix
// of takes, releases, creations, set_max and retire_all on one pool. After every step: the core's audit,
// nothing destroyed twice, never more than max resources once every holder has returned; a resource
// made before the latest retire_all is never lent again, nor kept when it comes back; and a lowered max
// never takes a resource from its holder.
#include "core/pool_core.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

using namespace respool::core;

namespace {

struct res : resource {
    int id = 0;
    int era = 0;  // the test's own count of retire_all calls when it was made
    int destroyed = 0;
    bool lent = false;
};

}  // namespace

TEST(runtime_controls_core, random_set_max_and_retire_all_keep_every_promise) {
    for (unsigned seed = 1; seed <= 20; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        std::mt19937 rng(seed);
        config c;
        c.min = 1;
        c.max = 4;
        c.max_concurrent_creations = 2;
        pool_core core(c);
        std::vector<std::unique_ptr<res>> made;
        std::vector<res*> held;
        int pending_creates = 0, era = 0;
        std::uint32_t max = c.max;
        auto apply = [&](effects& fx) {
            for (std::size_t i = 0; i < fx.size(); ++i) {
                const effect& e = fx[i];
                if (e.what == effect::kind::create) ++pending_creates;
                if (e.what == effect::kind::destroy) {
                    auto* r = static_cast<res*>(e.r);
                    ASSERT_FALSE(r->lent) << "destroyed while a holder has it";
                    ASSERT_EQ(++r->destroyed, 1) << "destroyed twice";
                }
            }
            fx.clear();
        };
        effects fx;
        core.start(fx);
        apply(fx);
        for (int step = 0; step < 4000; ++step) {
            switch (rng() % 6) {
            case 0:
            case 1: {  // take
                auto t = core.try_take();
                if (!t.r && core.begin_inline_creation()) {  // try_acquire's synchronous creation
                    made.push_back(std::make_unique<res>());
                    made.back()->id = static_cast<int>(made.size());
                    made.back()->era = era;
                    ASSERT_EQ(core.inline_created(made.back().get(), fx), status::ok);
                    apply(fx);
                    t.r = made.back().get();
                }
                if (!t.r) break;
                auto* r = static_cast<res*>(t.r);
                ASSERT_EQ(r->era, era) << "lent a resource made before the latest retire_all";
                ASSERT_EQ(r->destroyed, 0);
                r->lent = true;
                held.push_back(r);
                break;
            }
            case 2: {  // release
                if (held.empty()) break;
                const auto i = rng() % held.size();
                res* r = held[i];
                held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
                r->lent = false;
                core.release(r, pool_core::release_kind::ok, fx);
                apply(fx);
                if (r->era != era) {
                    ASSERT_EQ(r->destroyed, 1) << "an old resource came back and was kept";
                }
                break;
            }
            case 3: {  // a creation finishes
                if (pending_creates == 0) break;
                --pending_creates;
                made.push_back(std::make_unique<res>());
                made.back()->id = static_cast<int>(made.size());
                made.back()->era = era;
                core.creation_succeeded(made.back().get(), fx);
                apply(fx);
                break;
            }
            case 4: {  // set_max
                max = 1 + static_cast<std::uint32_t>(rng() % 6);
                const auto lent_before = held.size();
                core.set_max(max, fx);
                apply(fx);
                ASSERT_EQ(held.size(), lent_before);
                // Idle resources beyond the new max are gone at once (reserved ones are spoken for).
                if (core.total() - core.creating() > max) {
                    ASSERT_EQ(core.idle(), core.reserved()) << "idle surplus kept after set_max";
                }
                break;
            }
            case 5:  // retire_all
                if (rng() % 4 != 0) break;
                ++era;
                core.retire_all(fx);
                apply(fx);
                break;
            }
            ASSERT_EQ(core.audit(), "");
            // Once every holder has returned, the pool is within its max.
            if (held.empty()) {
                ASSERT_LE(core.total() - core.creating(), max) << "step " << step;
            }
            for (std::size_t i = 0; i < core.idle(); ++i)
                ASSERT_EQ(static_cast<res*>(core.idle_at(i))->era, era) << "an old resource sits in idle";
        }
        for (res* r : held) {
            r->lent = false;
            core.release(r, pool_core::release_kind::ok, fx);
            apply(fx);
        }
        core.close(fx);
        apply(fx);
        while (pending_creates > 0) {  // creations that finish after close are destroyed
            --pending_creates;
            made.push_back(std::make_unique<res>());
            core.creation_succeeded(made.back().get(), fx);
            apply(fx);
        }
        for (const auto& r : made) EXPECT_EQ(r->destroyed, 1) << "resource " << r->id;
    }
}

// A lowered max blocks the inline release while the pool is above it. A creation that fails brings the
// pool back within max without destroying anything: the inline paths serve again at once.
TEST(runtime_controls_core, a_failed_creation_that_ends_the_shrink_reopens_the_inline_release) {
    config c;
    c.min = 0;
    c.max = 3;
    c.max_concurrent_creations = 2;
    pool_core core(c);
    effects fx;
    core.start(fx);
    fx.clear();
    res r;
    ASSERT_TRUE(core.begin_inline_creation());
    ASSERT_EQ(core.inline_created(&r, fx), status::ok);
    waiter w;
    ASSERT_EQ(core.park(w, time_point{}, std::nullopt, fx), status::ok);
    ASSERT_EQ(core.creating(), 1u);
    core.set_max(1, fx);  // 1 lent + 1 being made > 1
    EXPECT_FALSE(core.uncontended());
    EXPECT_EQ(core.creation_failed(fx), &w);
    ASSERT_EQ(core.total(), 1u);
    EXPECT_EQ(core.resume(w, fx).st, status::create_failed);
    EXPECT_EQ(core.audit(), "");
    EXPECT_TRUE(core.uncontended()) << "within max again: nothing needs the general path";
    EXPECT_TRUE(core.release_fast(&r));
    EXPECT_EQ(core.idle(), 1u);
}
