// Bounded hooks: every coroutine hook x {honours cancellation, ignores it} x {its
// bound passes, close() interrupts it}, on a manual clock (no wall time decides anything). A hook
// past its bound or interrupted by close fails at once: the acquire it served moves on, its place is
// free, health checking goes on, close drains; a hook that ignores the cancellation keeps only its own
// resource, which is destroyed (exactly once) when the hook finally returns.
#include "test_support.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <list>
#include <string>

namespace {

enum class hook { factory, validate, before_acquire, healthcheck, before_release };
enum class stuck { honours_cancellation, ignores_cancellation };
enum class ending { bound, close };

const char* name(hook h) {
    switch (h) {
    case hook::factory: return "factory";
    case hook::validate: return "validate";
    case hook::before_acquire: return "before_acquire";
    case hook::healthcheck: return "healthcheck";
    case hook::before_release: return "before_release";
    }
    return "?";
}

// Waits that only the test ends. A hook that ignores cancellation filters it out of its coroutine.
struct gates {
    std::list<asio::steady_timer> waits;
    int entered = 0;
    asio::awaitable<void> hang(stuck how) {
        if (how == stuck::ignores_cancellation)
            co_await asio::this_coro::reset_cancellation_state(
                [](asio::cancellation_type) { return asio::cancellation_type::none; });
        ++entered;
        auto& t =
            waits.emplace_back(co_await asio::this_coro::executor, asio::steady_timer::time_point::max());
        auto [ec] = co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
        if (ec && how == stuck::honours_cancellation && !opened) throw boost::system::system_error(ec);
    }
    bool opened = false;
    void open() {
        opened = true;
        for (auto& t : waits) t.cancel();
    }
};

struct res {
    int id;
};

struct fixture {
    asio::io_context io;
    std::shared_ptr<respool::manual_clock> clock = std::make_shared<respool::manual_clock>();
    gates g;
    int created = 0, destroyed = 0, checks = 0;
    bool hanging = false;  // the hook under test hangs while this is set
    std::unique_ptr<pool<res>> p;

    void make(hook h, stuck how, std::size_t min) {
        respool::hooks<res> hk;
        auto maybe_hang = [this, how]() -> asio::awaitable<void> {
            if (hanging) co_await g.hang(how);
        };
        if (h == hook::factory) {
            hk.factory = [this, maybe_hang]() -> asio::awaitable<res> {
                co_await maybe_hang();
                co_return res{++created};
            };
        } else {
            hk.factory = [this] { return res{++created}; };
        }
        hk.destructor = [this](res&) { ++destroyed; };
        auto check = [this, maybe_hang](res&) -> asio::awaitable<bool> {
            ++checks;
            co_await maybe_hang();
            co_return true;
        };
        if (h == hook::validate || h == hook::healthcheck) hk.healthcheck = check;
        if (h == hook::before_acquire) hk.before_acquire = check;
        if (h == hook::before_release) hk.before_release = check;
        respool::pool_options o;
        o.min = min;
        o.max = 2;
        o.create_timeout = 1s;
        o.check_timeout = 1s;
        o.reset_timeout = 1s;
        o.create_retry_initial = {};
        o.create_retry_max = {};
        o.health_check_on_borrow = h == hook::validate;
        o.validate_after = 0ms;
        if (h == hook::healthcheck) o.healthcheck_interval = 10s;
        o.clock = clock;
        p = std::make_unique<pool<res>>(io.get_executor(), o, std::move(hk));
        test::step(io, *clock, 0ms);
    }

    using outcome = test::outcome<res>;
    void acquire(outcome& out, respool::duration timeout) {
        test::acquire_into(*p, io, *clock, out, timeout);
    }
    // Lends the idle resource once (so it is no longer fresh) and lets it idle a moment.
    void use_once() { test::lend_once(*p, io, *clock, 1ms); }
};

void run_case(hook h, stuck how, ending e) {
    SCOPED_TRACE(std::string(name(h)) + (how == stuck::honours_cancellation ? " honours" : " ignores") +
                 (e == ending::bound ? " / bound" : " / close"));
    fixture f;
    const bool background = h == hook::healthcheck;
    f.make(h, how, h == hook::factory ? 0 : 1);
    if (h != hook::factory) f.use_once();

    fixture::outcome first, second;
    f.hanging = true;
    switch (h) {
    case hook::factory:
    case hook::validate:
    case hook::before_acquire: f.acquire(first, 10s); break;
    case hook::healthcheck: test::step(f.io, *f.clock, 10s); break;  // the health tick starts the check
    case hook::before_release:
        f.acquire(first, 10s);
        ASSERT_TRUE(first.l);
        first.l.release();
        test::step(f.io, *f.clock, 0ms);
        break;
    }
    ASSERT_EQ(f.g.entered, 1) << "the hook under test is running";
    if (h != hook::before_release) {
        ASSERT_EQ(first.completions, 0) << "the acquire waits for the hook";
    }
    f.hanging = false;  // replacements and later checks answer at once

    if (e == ending::bound) {
        test::step(f.io, *f.clock, 999ms);
        if (h != hook::before_release) {
            EXPECT_EQ(first.completions, 0) << "not before the bound";
        }
        if (h == hook::factory || h == hook::before_release) {
            EXPECT_EQ(f.p->stats().total, 1u) << "the hook's place still counts until its bound";
        }
        test::step(f.io, *f.clock, 1ms);
        const auto s = f.p->stats();
        switch (h) {
        case hook::factory:
            EXPECT_EQ(first.completions, 1);
            EXPECT_EQ(first.ec, errc::hook_timeout) << first.ec.message();
            EXPECT_EQ(s.create_failures, 1u);
            EXPECT_EQ(s.creating, 0u) << "the creation slot is free";
            break;
        case hook::validate:
        case hook::before_acquire:
            EXPECT_EQ(first.completions, 1);
            EXPECT_FALSE(first.ec) << "served by a replacement: " << first.ec.message();
            EXPECT_EQ(s.rejected, 1u);
            break;
        case hook::healthcheck:
            EXPECT_EQ(s.unhealthy, 1u);
            EXPECT_EQ(s.total, 1u) << "replaced up to min";
            break;
        case hook::before_release: EXPECT_EQ(s.broken, 1u); break;
        }
        EXPECT_LE(s.total, s.max);
        if (background) {  // health checking goes on
            const int before = f.checks;
            test::step(f.io, *f.clock, 10s);
            EXPECT_EQ(f.checks, before + 1) << "the next tick checks again";
        }
        if (h == hook::before_release) {  // the place is free again: an acquire is served at once
            f.acquire(second, 10s);
            EXPECT_EQ(second.completions, 1);
            EXPECT_FALSE(second.ec);
        }
        first.l.release();
        second.l.release();
        test::step(f.io, *f.clock, 0ms);
        const int live_while_stuck = f.created - f.destroyed;
        // A stuck hook that ignores cancellation still holds its resource; one that honours it is gone.
        const int stuck_resources = how == stuck::ignores_cancellation && h != hook::factory ? 1 : 0;
        EXPECT_EQ(live_while_stuck, static_cast<int>(f.p->stats().total) + stuck_resources);
    } else {
        bool closed = false;
        error_code close_ec;
        f.p->async_close(5s, [&](error_code ec) {
            closed = true;
            close_ec = ec;
        });
        test::step(f.io, *f.clock, 0ms);
        if (!background && h != hook::before_release) {
            EXPECT_EQ(first.completions, 1);
            EXPECT_EQ(first.ec, errc::closed) << first.ec.message();
        }
        EXPECT_TRUE(closed) << "close interrupts the hook: nothing left to wait for";
        EXPECT_FALSE(close_ec) << close_ec.message();
        EXPECT_EQ(f.p->stats().total, 0u);
        EXPECT_EQ(f.clock->alarms(), 0u) << "a closed, drained pool has no timer left";
    }
    f.g.open();  // the stuck hook finally returns
    test::step(f.io, *f.clock, 0ms);
    f.p.reset();
    test::step(f.io, *f.clock, 0ms);
    EXPECT_EQ(f.created, f.destroyed) << "each created resource destroyed exactly once";
}

}  // namespace

class bounded : public ::testing::TestWithParam<std::tuple<hook, stuck, ending>> {};

TEST_P(bounded, a_stuck_hook_fails_at_its_bound_or_at_close_and_nothing_leaks) {
    auto [h, how, e] = GetParam();
    run_case(h, how, e);
}

INSTANTIATE_TEST_SUITE_P(
    every_hook, bounded,
    ::testing::Combine(::testing::Values(hook::factory, hook::validate, hook::before_acquire,
                                         hook::healthcheck, hook::before_release),
                       ::testing::Values(stuck::honours_cancellation, stuck::ignores_cancellation),
                       ::testing::Values(ending::bound, ending::close)),
    [](const auto& param_info) {
        const auto& p = param_info.param;
        return std::string(name(std::get<0>(p))) +
               (std::get<1>(p) == stuck::honours_cancellation ? "_honours_cancellation"
                                                              : "_ignores_cancellation") +
               (std::get<2>(p) == ending::bound ? "_bound" : "_close");
    });

TEST(bounded_options, a_bound_of_zero_is_rejected_by_name) {
    asio::io_context io;
    auto msg = [&](respool::pool_options o) -> std::string {
        try {
            pool<int> p(io.get_executor(), o, {.factory = [] { return 1; }});
        } catch (const std::invalid_argument& e) {
            return e.what();
        }
        return "";
    };
    EXPECT_EQ(msg({.create_timeout = 0ms}), "respool: create_timeout (0ms) must be positive");
    EXPECT_EQ(msg({.check_timeout = -1ms}), "respool: check_timeout (-1ms) must be positive");
    EXPECT_EQ(msg({.reset_timeout = 0ms}), "respool: reset_timeout (0ms) must be positive");
}
