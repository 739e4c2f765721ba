// The checks on the way out (validate, then before_acquire) race the borrower's deadline, its
// cancellation and close: the acquire ends at once, and the check's verdict, when
// it comes, decides only the resource's fate (a pass puts it back to idle, a failure destroys it;
// close interrupts the check itself, so its resource goes when the hook returns). The
// rules live in the core (pool_core::check_done); these cases check that the driver follows them, on a
// manual clock with a coroutine before_acquire the test answers by hand.
#include "test_support.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <list>
#include <optional>

namespace {

struct res {
    int id;
};

// A before_acquire coroutine that waits until the test answers it. It ignores cancellation, like a
// hook stuck in a call that cannot be interrupted: only the verdict the test gives ends it.
struct fixture {
    asio::io_context io;
    std::shared_ptr<respool::manual_clock> clock = std::make_shared<respool::manual_clock>();
    std::list<asio::steady_timer> pending;
    std::optional<bool> answer;  // the verdict the pending checks return when released
    bool hold = false;           // checks wait for the test while this is set
    int created = 0, destroyed = 0, checks = 0;
    std::unique_ptr<pool<res>> p;

    using outcome = test::outcome<res>;

    explicit fixture(std::size_t max = 1) {
        respool::hooks<res> hk;
        hk.factory = [this] { return res{++created}; };
        hk.destructor = [this](res&) { ++destroyed; };
        hk.before_acquire = [this](res&) -> asio::awaitable<bool> {
            ++checks;
            if (!hold) co_return true;
            co_await asio::this_coro::reset_cancellation_state(
                [](asio::cancellation_type) { return asio::cancellation_type::none; });
            auto& t = pending.emplace_back(co_await asio::this_coro::executor,
                                           asio::steady_timer::time_point::max());
            co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
            co_return *answer;
        };
        respool::pool_options o;
        o.min = 1;
        o.max = max;
        o.check_timeout = 1h;  // the test answers long before
        o.create_retry_initial = {};
        o.create_retry_max = {};
        o.clock = clock;
        p = std::make_unique<pool<res>>(io.get_executor(), o, std::move(hk));
        test::step(io, *clock, 0ms);
    }
    void acquire(outcome& out, respool::duration timeout) {
        test::acquire_into(*p, io, *clock, out, timeout);
    }
    // Lends the pre-warmed resource once, so that before_acquire runs on its next borrow.
    void use_once() { test::lend_once(*p, io, *clock, 0ms); }
    void give_verdict(bool passed) {
        answer = passed;
        for (auto& t : pending) t.cancel();
        test::step(io, *clock, 0ms);
    }
};

enum class leaves { by_timeout, by_cancel, by_close };

// The borrower leaves while its check runs; the verdict comes later.
void borrower_leaves_then_verdict(leaves how, bool passed) {
    fixture f;
    f.use_once();
    f.hold = true;
    fixture::outcome first;
    asio::cancellation_signal cancel;
    f.p->async_acquire(5s, asio::bind_cancellation_slot(cancel.slot(), [&first](error_code ec, lease<res> l) {
                           ++first.completions;
                           first.ec = ec;
                           first.l = std::move(l);
                       }));
    test::step(f.io, *f.clock, 0ms);
    ASSERT_EQ(f.pending.size(), 1u) << "before_acquire runs on the resource taken for the acquire";
    ASSERT_EQ(first.completions, 0);

    switch (how) {
    case leaves::by_timeout:
        test::step(f.io, *f.clock, 4999ms);
        EXPECT_EQ(first.completions, 0) << "not before its deadline";
        test::step(f.io, *f.clock, 1ms);
        EXPECT_EQ(first.ec, errc::timeout) << first.ec.message();
        EXPECT_EQ(f.p->stats().timeouts, 1u);
        break;
    case leaves::by_cancel:
        cancel.emit(asio::cancellation_type::terminal);
        test::step(f.io, *f.clock, 0ms);
        EXPECT_EQ(first.ec, errc::cancelled) << first.ec.message();
        EXPECT_EQ(f.p->stats().cancellations, 1u);
        break;
    case leaves::by_close:
        f.p->close();
        test::step(f.io, *f.clock, 0ms);
        EXPECT_EQ(first.ec, errc::closed) << first.ec.message();
        break;
    }
    EXPECT_EQ(first.completions, 1) << "the acquire ends at once, while the check still runs";
    EXPECT_FALSE(first.l);
    // close() also interrupts the check: it fails at once and its resource is counted out, to be
    // destroyed when the hook (which ignores the cancellation) returns.
    EXPECT_EQ(f.p->stats().total, how == leaves::by_close ? 0u : 1u) << "the resource under the check";
    EXPECT_EQ(f.destroyed, 0) << "not while its hook still runs";

    f.hold = false;
    f.give_verdict(passed);
    const auto s = f.p->stats();
    EXPECT_EQ(first.completions, 1) << "the verdict does not complete the acquire again";
    if (how == leaves::by_close) {
        EXPECT_EQ(s.total, 0u);
        EXPECT_EQ(f.destroyed, 1) << "destroyed when its hook returned, whatever the verdict";
    } else if (passed) {
        EXPECT_EQ(s.idle, 1u) << "a pass puts the resource back to idle";
        EXPECT_EQ(s.destructions, 0u);
        EXPECT_EQ(s.acquires, 1u) << "only the first, completed borrow counts";
        fixture::outcome next;
        f.acquire(next, 5s);
        EXPECT_EQ(next.completions, 1);
        EXPECT_FALSE(next.ec) << next.ec.message();
        EXPECT_EQ(f.created, 1) << "the next borrower gets the same resource";
    } else {
        EXPECT_EQ(s.rejected, 1u) << "a failure destroys the resource";
        EXPECT_EQ(s.total, 1u) << "replaced up to min";
        EXPECT_EQ(f.created, 2);
    }
    f.p.reset();
    test::step(f.io, *f.clock, 0ms);
    EXPECT_EQ(f.created, f.destroyed) << "every resource destroyed exactly once";
}

TEST(borrow_checks, a_borrower_that_times_out_during_a_check_leaves_the_resource_to_the_verdict) {
    {
        SCOPED_TRACE("pass");
        borrower_leaves_then_verdict(leaves::by_timeout, true);
    }
    SCOPED_TRACE("fail");
    borrower_leaves_then_verdict(leaves::by_timeout, false);
}

TEST(borrow_checks, a_borrower_cancelled_during_a_check_leaves_the_resource_to_the_verdict) {
    {
        SCOPED_TRACE("pass");
        borrower_leaves_then_verdict(leaves::by_cancel, true);
    }
    SCOPED_TRACE("fail");
    borrower_leaves_then_verdict(leaves::by_cancel, false);
}

TEST(borrow_checks, close_during_a_check_fails_the_borrower_and_the_resource_goes_after_the_verdict) {
    {
        SCOPED_TRACE("pass");
        borrower_leaves_then_verdict(leaves::by_close, true);
    }
    SCOPED_TRACE("fail");
    borrower_leaves_then_verdict(leaves::by_close, false);
}

// A refused resource sends its borrower back to the queue in its arrival position: ahead of a waiter
// that came later.
TEST(borrow_checks, a_refused_borrower_keeps_its_place_ahead_of_later_arrivals) {
    fixture f;
    f.use_once();
    f.hold = true;
    fixture::outcome first, second;
    f.acquire(first, 10s);
    ASSERT_EQ(f.pending.size(), 1u);
    f.acquire(second, 10s);  // max 1: it parks behind the check
    EXPECT_EQ(f.p->stats().waiting, 1u);
    f.hold = false;
    f.give_verdict(false);  // refused: destroyed, replaced; the replacement is fresh (no check)
    EXPECT_EQ(first.completions, 1);
    EXPECT_FALSE(first.ec) << "the first borrower gets the replacement: " << first.ec.message();
    EXPECT_EQ(second.completions, 0) << "the later arrival still waits";
    first.l.release();
    test::step(f.io, *f.clock, 0ms);
    EXPECT_EQ(second.completions, 1);
    EXPECT_FALSE(second.ec) << second.ec.message();
}

// The pre-warm's end is the core's to say: async_wait_ready completes with closed when the pool
// closes before it is over.
TEST(borrow_checks, wait_ready_reports_closed_when_the_pool_closes_during_the_pre_warm) {
    asio::io_context io;
    auto clock = std::make_shared<respool::manual_clock>();
    std::list<asio::steady_timer> creations;
    respool::hooks<res> hk;
    hk.factory = [&]() -> asio::awaitable<res> {
        auto& t =
            creations.emplace_back(co_await asio::this_coro::executor, asio::steady_timer::time_point::max());
        co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
        co_return res{1};
    };
    respool::pool_options o;
    o.min = 1;
    o.max = 1;
    o.clock = clock;
    pool<res> p(io.get_executor(), o, std::move(hk));
    int ready = 0;
    error_code ready_ec;
    p.async_wait_ready([&](error_code ec) {
        ++ready;
        ready_ec = ec;
    });
    test::step(io, *clock, 0ms);
    EXPECT_EQ(ready, 0) << "the creation is under way";
    p.close();
    test::step(io, *clock, 0ms);
    EXPECT_EQ(ready, 1);
    EXPECT_EQ(ready_ec, errc::closed) << ready_ec.message();
    for (auto& t : creations) t.cancel();
    test::step(io, *clock, 0ms);
}

}  // namespace
