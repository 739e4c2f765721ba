// The deadline index on its own: order by (deadline, arrival), removal from anywhere, the due waiters,
// whatever the mix of lanes (waiters sharing a timeout, absolute deadlines, re-parks); lanes shared,
// emptied and reused. Waiters here are bare nodes; the core's use of the index is in core_test.cpp.
#include "core/deadline_index.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <utility>
#include <vector>

using namespace respool::core;
using namespace std::chrono_literals;

namespace {

const time_point t0 = time_point{} + 1h;

// n waiters with arrival order 1..n and the deadlines given.
std::vector<waiter> waiters(const std::vector<time_point>& deadlines) {
    std::vector<waiter> ws(deadlines.size());
    for (std::size_t i = 0; i < ws.size(); ++i) {
        ws[i].seq = i + 1;
        ws[i].deadline = deadlines[i];
    }
    return ws;
}

// Takes waiters off the top until the index is empty; checks the whole index every few removals (a
// check is O(n)).
std::vector<waiter*> drain(deadline_index& h) {
    std::vector<waiter*> out;
    while (waiter* w = h.top()) {
        h.erase(*w);
        EXPECT_FALSE(deadline_index::contains(*w));
        if (out.size() % 16 == 0) {
            EXPECT_EQ(h.check(), "");
        }
        out.push_back(w);
    }
    return out;
}

bool in_deadline_then_arrival_order(const std::vector<waiter*>& v) {
    return std::is_sorted(v.begin(), v.end(), [](const waiter* a, const waiter* b) {
        return a->deadline < b->deadline || (a->deadline == b->deadline && a->seq < b->seq);
    });
}

}  // namespace

TEST(deadline_index, distinct_deadlines_come_out_in_deadline_order_whatever_the_insertion_order) {
    std::vector<time_point> d;
    for (int i = 0; i < 5000; ++i) d.push_back(t0 + std::chrono::microseconds(i * 7));
    std::shuffle(d.begin(), d.end(), std::mt19937(42));
    auto ws = waiters(d);
    deadline_index h;
    for (auto& w : ws) h.push(w);
    ASSERT_EQ(h.check(), "");
    ASSERT_EQ(h.size(), ws.size());
    EXPECT_EQ(h.top()->deadline, t0) << "the earliest deadline is on top";
    EXPECT_EQ(h.earliest(), t0);
    const auto out = drain(h);
    ASSERT_EQ(out.size(), ws.size());
    EXPECT_TRUE(in_deadline_then_arrival_order(out));
    EXPECT_TRUE(h.empty());
}

TEST(deadline_index, equal_deadlines_come_out_in_arrival_order) {
    // Three groups sharing a deadline each, pushed interleaved and with arrival order reversed.
    std::vector<time_point> d;
    for (int i = 0; i < 30; ++i) d.push_back(t0 + std::chrono::seconds(i % 3));
    auto ws = waiters(d);
    deadline_index h;
    for (auto it = ws.rbegin(); it != ws.rend(); ++it) h.push(*it);
    const auto out = drain(h);
    ASSERT_EQ(out.size(), 30u);
    for (std::size_t i = 0; i < 10; ++i) {
        EXPECT_EQ(out[i]->deadline, t0);
        EXPECT_EQ(out[i]->seq, 3 * i + 1) << "ties go to the older waiter";
    }
    EXPECT_TRUE(in_deadline_then_arrival_order(out));
}

TEST(deadline_index, removal_from_the_middle_keeps_the_rest_in_order) {
    std::vector<time_point> d;
    for (int i = 0; i < 2000; ++i) d.push_back(t0 + std::chrono::milliseconds((i * 7919) % 2000));
    auto ws = waiters(d);
    deadline_index h;
    for (auto& w : ws) h.push(w);
    // Remove every third waiter, as wakes and cancellations do, in a scattered order.
    std::vector<waiter*> gone;
    for (std::size_t i = 0; i < ws.size(); i += 3) gone.push_back(&ws[i]);
    std::shuffle(gone.begin(), gone.end(), std::mt19937(7));
    for (waiter* w : gone) {
        h.erase(*w);
        ASSERT_FALSE(deadline_index::contains(*w));
        ASSERT_EQ(h.check(), "");
    }
    ASSERT_EQ(h.size(), ws.size() - gone.size());
    const auto out = drain(h);
    EXPECT_TRUE(in_deadline_then_arrival_order(out));
    for (waiter* w : out) EXPECT_NE(w->seq % 3, 1u) << "a removed waiter came back";
}

TEST(deadline_index, removing_the_latest_or_a_waiter_not_in_the_index_changes_nothing_else) {
    auto ws = waiters({t0 + 3s, t0 + 1s, t0 + 2s});
    deadline_index h;
    waiter outsider;
    h.erase(outsider);  // never pushed
    EXPECT_TRUE(h.empty());
    EXPECT_FALSE(h.earliest()) << "an empty index has no earliest deadline";
    for (auto& w : ws) h.push(w);
    h.erase(ws[0]);  // the latest deadline
    EXPECT_EQ(h.size(), 2u);
    EXPECT_EQ(h.check(), "");
    h.erase(ws[1]);
    h.erase(ws[1]);  // twice: the second is a no-op
    EXPECT_EQ(h.size(), 1u);
    EXPECT_EQ(h.check(), "");
}

TEST(deadline_index, an_erased_waiter_can_be_pushed_again_with_a_new_deadline) {
    auto ws = waiters({t0 + 1s, t0 + 2s, t0 + 3s});
    deadline_index h;
    for (auto& w : ws) h.push(w);
    h.erase(ws[0]);
    ws[0].deadline = t0 + 4s;
    h.push(ws[0]);
    const auto out = drain(h);
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[0], &ws[1]);
    EXPECT_EQ(out[2], &ws[0]);
}

TEST(deadline_index, due_gives_exactly_the_waiters_at_or_before_now) {
    auto ws = waiters({t0 + 30ms, t0 + 10ms, t0 + 20ms, t0 + 20ms, t0 + 21ms});
    deadline_index h;
    for (auto& w : ws) h.push(w);
    std::vector<waiter*> fired;
    while (waiter* w = h.due(t0 + 20ms)) {
        fired.push_back(w);
        h.erase(*w);
    }
    ASSERT_EQ(fired.size(), 3u) << "10 ms, and both 20 ms deadlines (a deadline equal to now is due)";
    EXPECT_EQ(fired[0], &ws[1]);
    EXPECT_EQ(fired[1], &ws[2]);
    EXPECT_EQ(fired[2], &ws[3]);
    EXPECT_EQ(h.top(), &ws[4]) << "21 ms is not due yet";
    EXPECT_EQ(h.due(t0 + 20ms), nullptr);
}

TEST(deadline_index, the_end_of_time_sorts_last_and_is_due_only_at_the_end_of_time) {
    auto ws = waiters({time_point::max(), t0 + 1s, time_point::max(), time_point::min() + 1s});
    deadline_index h;
    for (auto& w : ws) h.push(w);
    const time_point late = time_point::max() - 1ns;
    std::vector<waiter*> fired;
    while (waiter* w = h.due(late)) {
        fired.push_back(w);
        h.erase(*w);
    }
    ASSERT_EQ(fired.size(), 2u);
    EXPECT_EQ(fired[0], &ws[3]);
    EXPECT_EQ(fired[1], &ws[1]);
    EXPECT_EQ(h.top(), &ws[0]) << "of two time_point::max() deadlines the older waiter comes first";
    EXPECT_EQ(h.due(time_point::max()), &ws[0]);
}

// ---- lanes ----------------------------------------------------------------------------------------

namespace {

// Waiter i (arrival order seq_from + i) parks at `start + i * gap` with timeout `span`, as the core
// parks them: deadline = park time + span, the span kept for the lane.
void park_with_timeout(std::vector<waiter>& ws, std::size_t from, std::size_t n, time_point start,
                       duration gap, duration span, std::uint64_t seq_from) {
    for (std::size_t i = 0; i < n; ++i) {
        waiter& w = ws[from + i];
        w.seq = seq_from + i;
        w.span = span;
        w.deadline = start + static_cast<int>(i) * gap + span;
    }
}

}  // namespace

TEST(deadline_index, waiters_sharing_a_timeout_share_one_lane_in_arrival_order) {
    std::vector<waiter> ws(1000);
    park_with_timeout(ws, 0, ws.size(), t0, 1ms, 5s, 1);
    ws[500].deadline = ws[499].deadline;  // two parked in the same tick: same deadline, arrival decides
    deadline_index h;
    for (auto& w : ws) h.push(w);
    ASSERT_EQ(h.check(), "");
    EXPECT_EQ(h.lanes(), 1u) << "one timeout, one lane: the heap above holds one head";
    for (auto& w : ws) EXPECT_EQ(w.lane, ws[0].lane);
    EXPECT_EQ(h.top(), &ws[0]);
    const auto out = drain(h);
    ASSERT_EQ(out.size(), ws.size());
    for (std::size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], &ws[i]);
    EXPECT_EQ(h.lanes(), 0u);
}

TEST(deadline_index, equal_absolute_deadlines_share_a_lane_and_the_end_of_time_shares_one_too) {
    // Absolute deadlines (no span) key their lane by the deadline itself; a saturated timeout
    // (duration::max(), deadline time_point::max()) keys it by the span, so "wait forever" is one lane.
    std::vector<waiter> ws(8);
    for (std::size_t i = 0; i < 4; ++i) {
        ws[i].seq = i + 1;
        ws[i].deadline = t0 + 1s;  // span zero: absolute
        ws[4 + i].seq = 5 + i;
        ws[4 + i].deadline = time_point::max();
        ws[4 + i].span = duration::max();
    }
    deadline_index h;
    for (auto& w : ws) h.push(w);
    ASSERT_EQ(h.check(), "");
    EXPECT_EQ(h.lanes(), 2u);
    const auto out = drain(h);
    for (std::size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], &ws[i]);
}

TEST(deadline_index, a_mix_of_shared_timeouts_distinct_timeouts_and_absolute_deadlines_comes_out_in_order) {
    // Three shared timeouts, 300 distinct ones (more than the lane table's entries: they open further
    // lanes for the same key) and absolute deadlines, interleaved in arrival order.
    const std::vector<duration> shared{2s, 5s, 30s};
    std::vector<waiter> ws(6000);
    std::mt19937 rng(11);
    time_point now = t0;
    for (std::size_t i = 0; i < ws.size(); ++i) {
        now += std::chrono::microseconds(rng() % 1000);  // several parks may share a tick
        waiter& w = ws[i];
        w.seq = i + 1;
        switch (rng() % 4) {
        case 0:
        case 1: w.span = shared[rng() % shared.size()]; break;
        case 2: w.span = 1h + std::chrono::microseconds(rng() % 300); break;
        default: w.span = duration::zero(); break;
        }
        w.deadline =
            w.span > duration::zero() ? now + w.span : now + std::chrono::milliseconds(rng() % 60000);
    }
    deadline_index h;
    for (auto& w : ws) h.push(w);
    ASSERT_EQ(h.check(), "");
    ASSERT_EQ(h.size(), ws.size());
    for (const duration span : shared) {
        std::set<std::uint32_t> lanes;
        for (const auto& w : ws)
            if (w.span == span) lanes.insert(w.lane);
        EXPECT_EQ(lanes.size(), 1u) << "one-off timeouts and deadlines do not split a shared timeout";
    }
    // Wakes and cancellations from anywhere, then the rest in order.
    for (std::size_t i = 0; i < ws.size(); i += 5) h.erase(ws[i]);
    ASSERT_EQ(h.check(), "");
    const auto out = drain(h);
    EXPECT_EQ(out.size(), ws.size() - ws.size() / 5);
    EXPECT_TRUE(in_deadline_then_arrival_order(out));
}

TEST(deadline_index, a_re_park_goes_back_into_the_middle_of_its_lane) {
    std::vector<waiter> ws(10);
    park_with_timeout(ws, 0, ws.size(), t0, 1ms, 5s, 1);
    deadline_index h;
    for (auto& w : ws) h.push(w);
    // Waiter 6 is woken, its resource rejected, and it parks again with its deadline and arrival order.
    const std::uint32_t lane = ws[5].lane;
    h.erase(ws[5]);
    ASSERT_EQ(h.check(), "");
    h.push(ws[5]);
    ASSERT_EQ(h.check(), "");
    EXPECT_EQ(ws[5].lane, lane) << "its place was a few waiters back from the tail: the same lane";
    EXPECT_EQ(ws[5].dprev, &ws[4]);
    EXPECT_EQ(ws[5].dnext, &ws[6]);
    EXPECT_EQ(h.lanes(), 1u);
    // The head re-parks too: it heads the lane again.
    h.erase(ws[0]);
    EXPECT_EQ(h.top(), &ws[1]);
    h.push(ws[0]);
    EXPECT_EQ(h.top(), &ws[0]) << "the lane's new head moved its heap slot";
    EXPECT_EQ(h.earliest(), ws[0].deadline);
    const auto out = drain(h);
    for (std::size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], &ws[i]);
}

TEST(deadline_index, a_re_park_far_behind_the_tail_gets_a_lane_of_its_own_and_keeps_its_place) {
    const std::size_t n = 4 * deadline_index::walk_limit;
    std::vector<waiter> ws(n);
    park_with_timeout(ws, 0, n, t0, 1ms, 5s, 1);
    deadline_index h;
    for (auto& w : ws) h.push(w);
    h.erase(ws[1]);
    h.push(ws[1]);  // its place is n - 2 waiters back: further than a push walks
    ASSERT_EQ(h.check(), "");
    EXPECT_EQ(h.lanes(), 2u);
    EXPECT_NE(ws[1].lane, ws[0].lane);
    // Newcomers with the timeout still go to the long lane, at its tail.
    std::vector<waiter> later(3);
    park_with_timeout(later, 0, later.size(), t0 + 1s, 1ms, 5s, n + 1);
    for (auto& w : later) h.push(w);
    EXPECT_EQ(later[0].lane, ws[0].lane);
    EXPECT_EQ(h.lanes(), 2u);
    const auto out = drain(h);
    ASSERT_EQ(out.size(), n + later.size());
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(out[i], &ws[i]);
    EXPECT_EQ(h.lanes(), 0u);
}

TEST(deadline_index, a_lane_that_empties_is_recycled_and_reused_without_growing) {
    std::vector<waiter> a(5), b(5), c(1);
    park_with_timeout(a, 0, a.size(), t0, 1ms, 5s, 1);
    park_with_timeout(b, 0, b.size(), t0 + 10ms, 1ms, 7s, 6);
    deadline_index h;
    for (auto& w : a) h.push(w);
    for (auto& w : b) h.push(w);
    EXPECT_EQ(h.lanes(), 2u);
    EXPECT_EQ(h.lanes_made(), 2u);
    for (auto& w : a) h.erase(w);  // the 5 s lane empties from the front, the head's slot moving each time
    ASSERT_EQ(h.check(), "");
    EXPECT_EQ(h.lanes(), 1u);
    EXPECT_EQ(h.top(), &b[0]);
    // The same timeout again, and a new one: both lanes come from the free list.
    park_with_timeout(a, 0, a.size(), t0 + 20ms, 1ms, 5s, 11);
    park_with_timeout(c, 0, 1, t0 + 30ms, 1ms, 1s, 16);
    for (auto& w : a) h.push(w);
    ASSERT_EQ(h.check(), "");
    h.push(c[0]);
    ASSERT_EQ(h.check(), "");
    EXPECT_EQ(h.lanes(), 3u);
    EXPECT_EQ(h.lanes_made(), 3u);
    EXPECT_EQ(h.top(), &c[0]) << "the 1 s timeout parked last but is due first";
    const auto out = drain(h);
    EXPECT_EQ(out.size(), 11u);
    EXPECT_TRUE(in_deadline_then_arrival_order(out));
    EXPECT_EQ(h.lanes_made(), 3u);
}

TEST(deadline_index, a_steady_cycle_of_wakes_and_parks_makes_no_new_lanes) {
    // 1000 waiters on the pool's timeout and 100 with timeouts of their own, served in deadline order
    // and parking again (as the hand-off benchmark does): once warm, every lane comes from the free list.
    std::vector<waiter> ws(1100);
    time_point now = t0;
    std::uint64_t seq = 1;
    auto park = [&](waiter& w, std::size_t i) {
        w.seq = seq++;
        w.span = i < 1000 ? 5s : 5s + std::chrono::microseconds(i);
        w.deadline = now + w.span;
    };
    deadline_index h;
    for (std::size_t i = 0; i < ws.size(); ++i) {
        park(ws[i], i);
        h.push(ws[i]);
        now += 1us;
    }
    const std::size_t made = h.lanes_made();
    for (int round = 0; round < 20000; ++round) {
        waiter* w = h.top();
        h.erase(*w);
        park(*w, static_cast<std::size_t>(w - ws.data()));
        h.push(*w);
        now += 1us;
    }
    ASSERT_EQ(h.check(), "");
    EXPECT_EQ(h.lanes_made(), made);
    EXPECT_EQ(h.lanes(), 101u);
}

TEST(deadline_index, random_operations_agree_with_a_sorted_reference) {
    // Pushes (shared, distinct and absolute), wakes and cancellations from anywhere, re-parks with the
    // old deadline and arrival order, and expiries, checked against a sorted set after every step.
    std::mt19937 rng(2026);
    std::vector<waiter> ws(300);
    std::vector<bool> ever(ws.size(), false);
    std::set<std::pair<time_point, std::uint64_t>> ref;
    deadline_index h;
    time_point now = t0;
    std::uint64_t seq = 1;
    for (int step = 0; step < 40000; ++step) {
        waiter& w = ws[rng() % ws.size()];
        const std::size_t i = static_cast<std::size_t>(&w - ws.data());
        const auto op = rng() % 10;
        if (deadline_index::contains(w)) {
            if (op < 6) {
                ref.erase({w.deadline, w.seq});
                h.erase(w);
            }
        } else if (op < 3 && ever[i]) {  // re-park: deadline, arrival order and span kept
            ref.insert({w.deadline, w.seq});
            h.push(w);
        } else {
            now += std::chrono::microseconds(rng() % 50);
            w.seq = seq++;
            const auto kind = rng() % 3;
            w.span = kind == 0   ? duration::zero()
                     : kind == 1 ? std::chrono::milliseconds(10 * (1 + rng() % 3))
                                 : std::chrono::microseconds(rng() % 100000 + 1);
            w.deadline =
                w.span > duration::zero() ? now + w.span : now + std::chrono::microseconds(rng() % 40000);
            ever[i] = true;
            ref.insert({w.deadline, w.seq});
            h.push(w);
        }
        if (rng() % 50 == 0) {  // time passes: the due waiters go, earliest first
            now += std::chrono::milliseconds(rng() % 5);
            while (waiter* d = h.due(now)) {
                ASSERT_FALSE(ref.empty());
                ASSERT_EQ(std::make_pair(d->deadline, d->seq), *ref.begin());
                ref.erase(ref.begin());
                h.erase(*d);
            }
        }
        ASSERT_EQ(h.size(), ref.size());
        if (ref.empty()) {
            ASSERT_EQ(h.top(), nullptr);
        } else {
            ASSERT_NE(h.top(), nullptr);
            ASSERT_EQ(std::make_pair(h.top()->deadline, h.top()->seq), *ref.begin());
            ASSERT_EQ(h.earliest(), ref.begin()->first);
        }
        if (step % 97 == 0) {
            ASSERT_EQ(h.check(), "") << "step " << step;
        }
    }
    ASSERT_EQ(h.check(), "");
}
