// pool<T> on a real io_context: the driver must keep every rule the core tests prove.
#include "test_support.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <string>
#include <vector>

using test::tracker;

TEST(pool, sync_factory_prewarms_min_before_the_constructor_returns) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    pool<conn> p(io.get_executor(), {.min = 3, .max = 5}, test::counting_hooks(t));
    EXPECT_EQ(t->created, 3);
    auto s = p.stats();
    EXPECT_EQ(s.idle, 3u);
    EXPECT_EQ(s.total, 3u);
    EXPECT_EQ(s.max, 5u);
}

TEST(pool, async_acquire_never_completes_inside_the_initiating_call) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    pool<conn> p(io.get_executor(), {.min = 1, .max = 1}, test::counting_hooks(t));
    bool called = false;
    p.async_acquire([&](error_code ec, lease<conn> l) {
        EXPECT_FALSE(ec);
        EXPECT_TRUE(l);
        called = true;
    });
    EXPECT_FALSE(called);
    io.run();
    EXPECT_TRUE(called);
    EXPECT_EQ(p.stats().idle, 1u) << "the lease died in the handler and came back";
}

TEST(pool, two_coroutines_on_max_one_alternate_without_barging) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    pool<conn> p(io.get_executor(), {.min = 1, .max = 1}, test::counting_hooks(t));
    std::string order;
    auto worker = [&](char name) -> asio::awaitable<void> {
        for (int i = 0; i < 4; ++i) {
            auto l = co_await p.async_acquire(asio::use_awaitable);
            order += name;
            // release at the end of the iteration, then immediately queue again
        }
    };
    asio::co_spawn(io, worker('A'), asio::detached);
    asio::co_spawn(io, worker('B'), asio::detached);
    io.run();
    EXPECT_EQ(order, "ABABABAB");
    EXPECT_EQ(t->created, 1);
}

TEST(pool, waiters_are_served_in_arrival_order) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    pool<conn> p(io.get_executor(), {.min = 1, .max = 1}, test::counting_hooks(t));
    auto held = p.try_acquire();
    ASSERT_TRUE(held);
    std::vector<int> served;
    for (int i = 0; i < 5; ++i)
        p.async_acquire([&, i](error_code ec, lease<conn>) {
            ASSERT_FALSE(ec);
            served.push_back(i);
        });
    io.poll();
    EXPECT_EQ(p.stats().waiting, 5u);
    held.release();
    io.run();
    EXPECT_EQ(served, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(pool, acquire_times_out_with_timeout_and_fires_exhausted_first) {
    struct obs : respool::observer {
        int exhausted = 0;
        std::uint32_t active_seen = 0;
        void on_exhausted(const respool::pool_stats& s) override {
            ++exhausted;
            active_seen = s.active;
        }
    };
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    pool<conn> p(io.get_executor(), {.min = 1, .max = 1}, test::counting_hooks(t));
    auto o = std::make_shared<obs>();
    p.set_observer(o);
    auto held = p.try_acquire();
    error_code got;
    p.async_acquire(10ms, [&](error_code ec, lease<conn> l) {
        got = ec;
        EXPECT_FALSE(l) << "a lease never reaches a caller that timed out";
    });
    io.run();  // returns once the waiter is done: no timer is left behind
    EXPECT_EQ(got, errc::timeout);
    EXPECT_EQ(o->exhausted, 1);
    EXPECT_EQ(o->active_seen, 1u);
    EXPECT_EQ(p.stats().timeouts, 1u);
    EXPECT_EQ(p.stats().waiting, 0u);
}

TEST(pool, default_acquire_timeout_applies_and_zero_fails_at_once) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    pool<conn> p(io.get_executor(), {.min = 1, .max = 1, .acquire_timeout = 5ms}, test::counting_hooks(t));
    auto held = p.try_acquire();
    error_code a, b;
    p.async_acquire([&](error_code ec, lease<conn>) { a = ec; });
    p.async_acquire(0ms, [&](error_code ec, lease<conn>) { b = ec; });
    io.run();
    EXPECT_EQ(a, errc::timeout);
    EXPECT_EQ(b, errc::timeout);
}

TEST(pool, served_waiter_leaves_no_armed_timer_behind) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    pool<conn> p(io.get_executor(), {.min = 1, .max = 1}, test::counting_hooks(t));
    auto held = p.try_acquire();
    bool ok = false;
    p.async_acquire(std::chrono::hours(1), [&](error_code ec, lease<conn> l) { ok = !ec && l; });
    io.poll();
    held.release();
    const auto start = std::chrono::steady_clock::now();
    io.run();  // would block for an hour if the deadline timer stayed armed
    EXPECT_TRUE(ok);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::minutes(1));
}

TEST(pool, per_operation_cancellation_completes_with_cancelled_and_loses_nothing) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    pool<conn> p(io.get_executor(), {.min = 1, .max = 1}, test::counting_hooks(t));
    auto held = p.try_acquire();
    asio::cancellation_signal sig;
    error_code got;
    bool second = false;
    p.async_acquire(asio::bind_cancellation_slot(sig.slot(), [&](error_code ec, lease<conn> l) {
        got = ec;
        EXPECT_FALSE(l);
    }));
    p.async_acquire([&](error_code ec, lease<conn> l) { second = !ec && l; });
    io.poll();
    sig.emit(asio::cancellation_type::terminal);
    io.poll();
    EXPECT_EQ(got, errc::cancelled);
    held.release();
    io.run();
    EXPECT_TRUE(second) << "the place went to the next waiter";
    EXPECT_EQ(p.stats().cancellations, 1u);
    EXPECT_EQ(p.stats().idle, 1u);
}

TEST(pool, cancelling_a_coroutine_awaiting_acquire_through_its_cancellation_slot) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    pool<conn> p(io.get_executor(), {.min = 1, .max = 1}, test::counting_hooks(t));
    auto held = p.try_acquire();
    asio::cancellation_signal sig;
    error_code got;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            auto [ec, l] = co_await p.async_acquire(asio::as_tuple(asio::use_awaitable));
            got = ec;
        },
        asio::bind_cancellation_slot(sig.slot(), asio::detached));
    io.poll();
    sig.emit(asio::cancellation_type::terminal);
    io.run();
    EXPECT_EQ(got, errc::cancelled);
}

TEST(pool, close_fails_waiters_with_closed_and_destroys_idle) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    pool<conn> p(io.get_executor(), {.min = 2, .max = 2}, test::counting_hooks(t));
    auto a = p.try_acquire();
    auto b = p.try_acquire();
    error_code got;
    p.async_acquire([&](error_code ec, lease<conn>) { got = ec; });
    io.poll();
    b.release();  // reserved for the waiter, which has not run yet
    p.close();
    p.close();  // idempotent
    io.run();
    EXPECT_EQ(got, errc::closed);
    EXPECT_EQ(t->destroyed, 1) << "the idle one";
    error_code ec;
    EXPECT_FALSE(p.try_acquire(ec));
    EXPECT_EQ(ec, errc::closed);
    a.release();
    EXPECT_EQ(t->destroyed, 2) << "a lease dies on release after close";
    bool after = false;
    p.async_acquire([&](error_code e, lease<conn>) { after = e == errc::closed; });
    io.restart();
    io.run();
    EXPECT_TRUE(after);
}

TEST(pool, leases_outlive_the_pool_object_and_die_on_release) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    lease<conn> kept;
    {
        pool<conn> p(io.get_executor(), {.min = 2, .max = 2}, test::counting_hooks(t));
        kept = p.try_acquire();
        ASSERT_TRUE(kept);
    }
    EXPECT_EQ(t->destroyed, 1);
    EXPECT_EQ(kept->id, 1);
    kept.release();
    EXPECT_EQ(t->destroyed, 2);
    EXPECT_EQ(t->live(), 0);
}

TEST(pool, poison_destroys_instead_of_returning) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    pool<conn> p(io.get_executor(), {.min = 1, .max = 1}, test::counting_hooks(t));
    auto l = p.try_acquire();
    l.poison();
    EXPECT_FALSE(l);
    EXPECT_EQ(t->destroyed, 1);
    auto s = p.stats();
    EXPECT_EQ(s.poisoned, 1u);
    EXPECT_EQ(s.total, 1u) << "min is replenished";
}

TEST(pool, before_acquire_rejection_destroys_and_tries_the_next_place) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    auto h = test::counting_hooks(t);
    h.before_acquire = [](conn& c) { return c.id != 1; };
    pool<conn> p(io.get_executor(), {.min = 2, .max = 2}, std::move(h));
    {  // lend both once: before_acquire never runs on a resource that was never lent
        auto a = p.try_acquire();
        auto b = p.try_acquire();
        ASSERT_TRUE(a && b);
        a.release();  // idle order: 1, then 2
        b.release();
    }
    int got = 0;
    p.async_acquire([&](error_code ec, lease<conn> l) {
        ASSERT_FALSE(ec);
        got = l->id;
    });
    io.run();
    EXPECT_EQ(got, 2);
    EXPECT_EQ(p.stats().rejected, 1u);
    EXPECT_EQ(p.stats().acquires, 3u);
}

TEST(pool, before_release_false_marks_broken_and_reports_failure) {
    struct strategy : respool::circuit_strategy {
        int ok = 0, bad = 0;
        error_code last;
        void report_success(respool::circuit_breaker&) override { ++ok; }
        void report_failure(respool::circuit_breaker&, const error_code& ec) override {
            ++bad;
            last = ec;
        }
    };
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    auto h = test::counting_hooks(t);
    h.before_release = [](conn& c) { return c.healthy; };
    pool<conn> p(io.get_executor(), {.min = 1, .max = 1}, std::move(h));
    auto s = std::make_shared<strategy>();
    p.set_circuit_strategy(s);
    { auto l = p.try_acquire(); }
    {
        auto l = p.try_acquire();
        l->healthy = false;
    }
    EXPECT_EQ(s->ok, 1);
    EXPECT_EQ(s->bad, 1);
    EXPECT_EQ(s->last, errc::broken);
    EXPECT_EQ(p.stats().broken, 1u);
    EXPECT_EQ(t->destroyed, 1);
}

TEST(pool, factory_failure_reaches_the_waiter_with_the_factory_error) {
    asio::io_context io;
    int calls = 0;
    respool::hooks<conn> h;
    h.factory = [&]() -> conn {
        if (++calls == 1) throw boost::system::system_error(asio::error::connection_refused);
        return conn{calls};
    };
    pool<conn> p(io.get_executor(), {.min = 0, .max = 1}, std::move(h));
    error_code first, second;
    p.async_acquire([&](error_code ec, lease<conn>) { first = ec; });
    p.async_acquire([&](error_code ec, lease<conn>) { second = ec; });
    io.run();
    EXPECT_EQ(first, asio::error::connection_refused) << "errors surface at once, not as timeouts";
    EXPECT_FALSE(second) << "demand re-triggered creation";
    EXPECT_EQ(p.stats().create_failures, 1u);
}

TEST(pool, coroutine_factory_and_hooks_work_and_wait_ready_reports_prewarm) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    respool::hooks<conn> h;
    h.factory = [&]() -> asio::awaitable<conn> {
        asio::steady_timer tm(co_await asio::this_coro::executor, 1ms);
        co_await tm.async_wait(asio::use_awaitable);  // "connecting"
        co_return conn{++t->created};
    };
    h.destructor = [t](conn&) { ++t->destroyed; };
    h.before_acquire = [](conn& c) -> asio::awaitable<bool> { co_return c.id != 2; };
    h.before_release = [](conn&) -> asio::awaitable<bool> { co_return true; };
    pool<conn> p(io.get_executor(), {.min = 3, .max = 3}, std::move(h));
    EXPECT_EQ(t->created, 0) << "a coroutine factory starts at construction and runs on the loop";
    error_code ready = errc::timeout;
    std::vector<int> ids;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            // before_acquire never runs on a resource that was never lent: lend the pre-warmed three
            // once, then the next round is checked.
            auto [ec] = co_await p.async_wait_ready(asio::as_tuple(asio::use_awaitable));
            ready = ec;
            {
                std::vector<lease<conn>> first;
                for (int i = 0; i < 3; ++i) first.push_back(co_await p.async_acquire(asio::use_awaitable));
            }
            for (int i = 0; i < 3; ++i) {
                auto l = co_await p.async_acquire(asio::use_awaitable);
                ids.push_back(l->id);
            }
        },
        asio::detached);
    io.run();
    EXPECT_FALSE(ready);
    EXPECT_EQ(ids.size(), 3u);
    for (int id : ids) EXPECT_NE(id, 2) << "rejected by the coroutine before_acquire";
    EXPECT_EQ(p.stats().rejected, 1u);
    EXPECT_EQ(error_code(), error_code());
    error_code ec;
    EXPECT_FALSE(p.try_acquire(ec));
    EXPECT_EQ(ec, errc::not_supported) << "try_acquire cannot run a coroutine before_acquire";
}

TEST(pool, healthcheck_destroys_unhealthy_idle_resources_and_replaces_them) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    auto h = test::counting_hooks(t);
    h.healthcheck = [](conn& c) { return c.id > 2; };
    pool<conn> p(io.get_executor(), {.min = 2, .max = 4, .healthcheck_interval = 5ms}, std::move(h));
    auto held = p.try_acquire();  // id 1 is leased: never checked
    ASSERT_TRUE(test::run_until(io, [&] { return p.stats().unhealthy >= 1; }));
    auto s = p.stats();
    EXPECT_EQ(s.unhealthy, 1u) << "only the idle id 2 fails; the leased id 1 is not checked";
    EXPECT_EQ(held->id, 1);
    EXPECT_GE(s.total, 2u) << "replaced up to min";
}

TEST(pool, healthcheck_timer_does_not_keep_an_idle_event_loop_alive) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    auto h = test::counting_hooks(t);
    h.healthcheck = [](conn&) { return true; };
    pool<conn> p(io.get_executor(), {.min = 1, .max = 1, .healthcheck_interval = std::chrono::hours(1)},
                 std::move(h));
    const auto start = std::chrono::steady_clock::now();
    io.run();  // nothing to do: returns at once
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::minutes(1));
}

TEST(pool, opening_the_circuit_fails_waiters_and_rejects_acquires) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    pool<conn> p(io.get_executor(), {.min = 1, .max = 1}, test::counting_hooks(t));
    auto held = p.try_acquire();
    error_code got;
    p.async_acquire([&](error_code ec, lease<conn>) { got = ec; });
    io.poll();
    p.deactivate();
    EXPECT_EQ(p.state(), respool::circuit_state::open);
    io.run();
    EXPECT_EQ(got, errc::unavailable);
    held.release();
    error_code ec;
    EXPECT_FALSE(p.try_acquire(ec)) << "open: none even with an idle resource";
    EXPECT_EQ(ec, errc::unavailable);
    p.recover();
    EXPECT_EQ(p.state(), respool::circuit_state::half_open);
    EXPECT_TRUE(p.try_acquire());
    p.activate();
    EXPECT_EQ(p.state(), respool::circuit_state::closed);
}

TEST(pool, strategy_can_open_the_circuit_from_a_report) {
    struct trip_on_failure : respool::circuit_strategy {
        void report_success(respool::circuit_breaker&) override {}
        void report_failure(respool::circuit_breaker& cb, const error_code&) override { cb.deactivate(); }
    };
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    pool<conn> p(io.get_executor(), {.min = 1, .max = 2}, test::counting_hooks(t));
    p.set_circuit_strategy(std::make_shared<trip_on_failure>());
    p.try_acquire().poison();
    EXPECT_EQ(p.state(), respool::circuit_state::open);
}

TEST(pool, async_close_waits_for_leases_then_completes) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    pool<conn> p(io.get_executor(), {.min = 2, .max = 2}, test::counting_hooks(t));
    auto l = p.try_acquire();
    error_code closed = errc::timeout;
    bool done = false;
    p.async_close(std::chrono::hours(1), [&](error_code ec) {
        closed = ec;
        done = true;
    });
    io.poll();
    EXPECT_FALSE(done) << "a lease is still out";
    EXPECT_EQ(t->destroyed, 1);
    l.release();
    io.run();
    EXPECT_TRUE(done);
    EXPECT_FALSE(closed);
    EXPECT_EQ(t->live(), 0);
}

TEST(pool, async_close_gives_up_after_the_grace_period) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    pool<conn> p(io.get_executor(), {.min = 1, .max = 1}, test::counting_hooks(t));
    auto l = p.try_acquire();
    error_code closed;
    p.async_close(1ms, [&](error_code ec) { closed = ec; });
    io.run();
    EXPECT_EQ(closed, errc::timeout);
    l.release();
    EXPECT_EQ(t->live(), 0);
}

TEST(pool, max_waiters_sheds_load_with_exhausted) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    pool<conn> p(io.get_executor(), {.min = 1, .max = 1, .max_waiters = 1}, test::counting_hooks(t));
    auto held = p.try_acquire();
    error_code a, b;
    p.async_acquire([&](error_code ec, lease<conn>) { a = ec; });
    p.async_acquire([&](error_code ec, lease<conn>) { b = ec; });
    io.poll();
    EXPECT_EQ(b, errc::exhausted);
    held.release();
    io.run();
    EXPECT_FALSE(a);
}

TEST(pool, observer_sees_lifecycle_events) {
    struct obs : respool::observer {
        int created = 0, destroyed = 0, taken = 0, released = 0, poisoned = 0;
        void on_created() override { ++created; }
        void on_destroyed(respool::destroy_reason) override { ++destroyed; }
        void on_taken(std::chrono::nanoseconds) override { ++taken; }
        void on_released(std::chrono::nanoseconds) override { ++released; }
        void on_poisoned() override { ++poisoned; }
    };
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    pool<conn> p(io.get_executor(), {.min = 0, .max = 2}, test::counting_hooks(t));
    auto o = std::make_shared<obs>();
    p.set_observer(o);
    {
        auto a = p.try_acquire();
        auto b = p.try_acquire();
        b.poison();
    }
    EXPECT_EQ(o->created, 2);
    EXPECT_EQ(o->taken, 2);
    EXPECT_EQ(o->released, 2);
    EXPECT_EQ(o->poisoned, 1);
    EXPECT_EQ(o->destroyed, 1);
}
