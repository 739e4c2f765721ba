// The deadline heap on its own: order by (deadline, arrival), removal from anywhere, the due waiters.
// Waiters here are bare nodes; the core's use of the heap is covered in core_test.cpp.
#include "core/deadline_heap.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
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

// Takes waiters off the top until the heap is empty; checks the whole heap every few removals (a check
// is O(n)).
std::vector<waiter*> drain(deadline_heap& h) {
    std::vector<waiter*> out;
    while (waiter* w = h.top()) {
        h.erase(*w);
        EXPECT_FALSE(deadline_heap::contains(*w));
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

TEST(deadline_heap, distinct_deadlines_come_out_in_deadline_order_whatever_the_insertion_order) {
    std::vector<time_point> d;
    for (int i = 0; i < 5000; ++i) d.push_back(t0 + std::chrono::microseconds(i * 7));
    std::shuffle(d.begin(), d.end(), std::mt19937(42));
    auto ws = waiters(d);
    deadline_heap h;
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

TEST(deadline_heap, equal_deadlines_come_out_in_arrival_order) {
    // Three groups sharing a deadline each, pushed interleaved and with arrival order reversed.
    std::vector<time_point> d;
    for (int i = 0; i < 30; ++i) d.push_back(t0 + std::chrono::seconds(i % 3));
    auto ws = waiters(d);
    deadline_heap h;
    for (auto it = ws.rbegin(); it != ws.rend(); ++it) h.push(*it);
    const auto out = drain(h);
    ASSERT_EQ(out.size(), 30u);
    for (std::size_t i = 0; i < 10; ++i) {
        EXPECT_EQ(out[i]->deadline, t0);
        EXPECT_EQ(out[i]->seq, 3 * i + 1) << "ties go to the older waiter";
    }
    EXPECT_TRUE(in_deadline_then_arrival_order(out));
}

TEST(deadline_heap, removal_from_the_middle_keeps_the_rest_in_order) {
    std::vector<time_point> d;
    for (int i = 0; i < 2000; ++i) d.push_back(t0 + std::chrono::milliseconds((i * 7919) % 2000));
    auto ws = waiters(d);
    deadline_heap h;
    for (auto& w : ws) h.push(w);
    // Remove every third waiter, as wakes and cancellations do, in a scattered order.
    std::vector<waiter*> gone;
    for (std::size_t i = 0; i < ws.size(); i += 3) gone.push_back(&ws[i]);
    std::shuffle(gone.begin(), gone.end(), std::mt19937(7));
    for (waiter* w : gone) {
        h.erase(*w);
        ASSERT_FALSE(deadline_heap::contains(*w));
        ASSERT_EQ(h.check(), "");
    }
    ASSERT_EQ(h.size(), ws.size() - gone.size());
    const auto out = drain(h);
    EXPECT_TRUE(in_deadline_then_arrival_order(out));
    for (waiter* w : out) EXPECT_NE(w->seq % 3, 1u) << "a removed waiter came back";
}

TEST(deadline_heap, removing_the_last_slot_or_a_waiter_not_in_the_heap_changes_nothing_else) {
    auto ws = waiters({t0 + 3s, t0 + 1s, t0 + 2s});
    deadline_heap h;
    waiter outsider;
    h.erase(outsider);  // never pushed
    EXPECT_TRUE(h.empty());
    EXPECT_FALSE(h.earliest()) << "an empty heap has no earliest deadline";
    for (auto& w : ws) h.push(w);
    h.erase(*h.at(h.size() - 1));
    EXPECT_EQ(h.size(), 2u);
    EXPECT_EQ(h.check(), "");
    h.erase(ws[1]);
    h.erase(ws[1]);  // twice: the second is a no-op
    EXPECT_EQ(h.size(), 1u);
    EXPECT_EQ(h.check(), "");
}

TEST(deadline_heap, an_erased_waiter_can_be_pushed_again_with_a_new_deadline) {
    auto ws = waiters({t0 + 1s, t0 + 2s, t0 + 3s});
    deadline_heap h;
    for (auto& w : ws) h.push(w);
    h.erase(ws[0]);
    ws[0].deadline = t0 + 4s;
    h.push(ws[0]);
    const auto out = drain(h);
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[0], &ws[1]);
    EXPECT_EQ(out[2], &ws[0]);
}

TEST(deadline_heap, due_gives_exactly_the_waiters_at_or_before_now) {
    auto ws = waiters({t0 + 30ms, t0 + 10ms, t0 + 20ms, t0 + 20ms, t0 + 21ms});
    deadline_heap h;
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

TEST(deadline_heap, the_end_of_time_sorts_last_and_is_due_only_at_the_end_of_time) {
    auto ws = waiters({time_point::max(), t0 + 1s, time_point::max(), time_point::min() + 1s});
    deadline_heap h;
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
