// The core's request queue on its own: FIFO order, the limit, O(1) cancellation from anywhere, expiry
// in deadline order as exhausted, a batch or a share taken oldest first, a taken request put back in
// its arrival place, fail-all, and requests that wait with no deadline (a condition, not a timeout).
#include "core/request_queue.hpp"

#include <gtest/gtest.h>

#include <vector>

using namespace respool::core;
using namespace std::chrono_literals;

namespace {

const time_point t0 = time_point{} + 1h;

std::vector<waiter*> failed(const effects& fx, status want) {
    std::vector<waiter*> out;
    for (std::size_t i = 0; i < fx.size(); ++i) {
        EXPECT_EQ(fx[i].what, effect::kind::wake);
        EXPECT_EQ(fx[i].st, want);
        out.push_back(fx[i].w);
    }
    return out;
}

TEST(request_queue, takes_in_arrival_order_a_batch_then_a_share) {
    request_queue q;
    std::vector<waiter> ws(5);
    for (auto& w : ws) ASSERT_EQ(q.push_for(w, t0, 1s), status::ok);
    EXPECT_EQ(q.size(), 5u);
    EXPECT_EQ(q.front(), &ws[0]);
    std::vector<waiter*> out;
    EXPECT_EQ(q.take(2, out), 2u);
    EXPECT_EQ(out, (std::vector<waiter*>{&ws[0], &ws[1]}));
    EXPECT_FALSE(request_queue::queued(ws[0]));
    EXPECT_EQ(q.take(10, out), 3u);  // a share larger than what waits: all of it
    EXPECT_EQ(out.size(), 5u);
    EXPECT_EQ(out[4], &ws[4]);
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.next_deadline(), std::nullopt);
    EXPECT_EQ(q.check(), "");
}

TEST(request_queue, refuses_a_push_beyond_max_waiters_and_changes_nothing) {
    request_queue q(2);
    waiter a, b, c;
    ASSERT_EQ(q.push_for(a, t0, 1s), status::ok);
    ASSERT_EQ(q.push_unbounded(b), status::ok);
    EXPECT_EQ(q.push_for(c, t0, 1s), status::exhausted);
    EXPECT_FALSE(request_queue::queued(c));
    EXPECT_EQ(q.size(), 2u);
    EXPECT_TRUE(q.cancel(a));
    EXPECT_EQ(q.push_for(c, t0, 1s), status::ok);  // room again
    EXPECT_EQ(q.check(), "");
}

TEST(request_queue, cancels_from_the_middle_once) {
    request_queue q;
    std::vector<waiter> ws(3);
    for (auto& w : ws) ASSERT_EQ(q.push_for(w, t0, 1s), status::ok);
    EXPECT_TRUE(q.cancel(ws[1]));
    EXPECT_FALSE(q.cancel(ws[1]));  // not queued any more
    EXPECT_EQ(ws[1].result, status::cancelled);
    EXPECT_EQ(q.check(), "");
    std::vector<waiter*> out;
    q.take(3, out);
    EXPECT_EQ(out, (std::vector<waiter*>{&ws[0], &ws[2]}));
    EXPECT_FALSE(q.cancel(ws[0]));  // taken: the cancellation is the scheduler's to handle
}

TEST(request_queue, expires_due_requests_in_deadline_order_as_exhausted) {
    request_queue q;
    waiter a, b, c, d, e;
    ASSERT_EQ(q.push_for(a, t0, 30ms), status::ok);
    ASSERT_EQ(q.push_for(b, t0, 10ms), status::ok);                 // another lane, earlier
    ASSERT_EQ(q.push(c, t0 + 10ms, duration::zero()), status::ok);  // absolute, ties b: b arrived first
    ASSERT_EQ(q.push_unbounded(d), status::ok);                     // never expires
    ASSERT_EQ(q.push_for(e, t0, duration::max()), status::ok);      // saturates, never an overflow
    EXPECT_EQ(q.next_deadline(), t0 + 10ms);
    effects fx;
    q.expire(t0 + 9ms, fx);
    EXPECT_TRUE(fx.empty());
    q.expire(t0 + 10ms, fx);
    EXPECT_EQ(failed(fx, status::exhausted), (std::vector<waiter*>{&b, &c}));
    EXPECT_EQ(q.next_deadline(), t0 + 30ms);
    fx.clear();
    q.expire(t0 + 1h, fx);
    EXPECT_EQ(failed(fx, status::exhausted), (std::vector<waiter*>{&a}));
    EXPECT_EQ(q.next_deadline(), time_point::max());
    EXPECT_EQ(q.size(), 2u);
    EXPECT_EQ(q.front(), &d);
    EXPECT_EQ(q.check(), "");
}

TEST(request_queue, puts_a_taken_request_back_in_its_arrival_place_with_its_deadline) {
    request_queue q;
    std::vector<waiter> ws(4);
    for (auto& w : ws) ASSERT_EQ(q.push_for(w, t0, 1s), status::ok);
    std::vector<waiter*> out;
    q.take(3, out);
    waiter later;
    ASSERT_EQ(q.push_for(later, t0 + 5ms, 1s), status::ok);
    q.requeue(ws[2]);  // back in reverse order, as a batch that ran only its first statement does
    q.requeue(ws[1]);
    EXPECT_EQ(q.check(), "");
    out.clear();
    q.take(10, out);
    EXPECT_EQ(out, (std::vector<waiter*>{&ws[1], &ws[2], &ws[3], &later}));
    for (auto* w : {&ws[1], &ws[2]}) EXPECT_EQ(w->deadline, t0 + 1s);
    q.requeue(ws[1]);
    effects fx;
    q.expire(t0 + 1s, fx);  // its deadline did not move
    EXPECT_EQ(failed(fx, status::exhausted), (std::vector<waiter*>{&ws[1]}));
}

TEST(request_queue, fails_everything_oldest_first) {
    request_queue q;
    waiter a, b, c;
    ASSERT_EQ(q.push_for(a, t0, 1s), status::ok);
    ASSERT_EQ(q.push_unbounded(b), status::ok);
    ASSERT_EQ(q.push_for(c, t0, 2s), status::ok);
    effects fx;
    q.fail_all(status::closed, fx);
    EXPECT_EQ(failed(fx, status::closed), (std::vector<waiter*>{&a, &b, &c}));
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.next_deadline(), std::nullopt);
    EXPECT_EQ(q.check(), "");
    EXPECT_EQ(q.push_for(a, t0, 1s), status::ok);  // a node can queue again once it left
    EXPECT_EQ(q.check(), "");
}

TEST(request_queue, requests_sharing_a_timeout_share_one_lane) {
    request_queue q;
    std::vector<waiter> ws(1000);
    for (std::size_t i = 0; i < ws.size(); ++i)
        ASSERT_EQ(q.push_for(ws[i], t0 + std::chrono::microseconds(i), 5s), status::ok);
    EXPECT_EQ(q.check(), "");
    effects fx;
    q.expire(t0 + 5s + std::chrono::microseconds(499), fx);
    EXPECT_EQ(fx.size(), 500u);
    EXPECT_EQ(fx[0].w, &ws[0]);
    EXPECT_EQ(fx[499].w, &ws[499]);
    EXPECT_EQ(q.front(), &ws[500]);
}

}  // namespace
