// The cancellation matrix (in the style of the bb8/deadpool test suites): every hook in
// {ok, error, slow, never completes} x the acquire ending by {success, timeout, cancel, close}.
// After each combination: the acquire completed exactly once, no resource was lent twice, total <= max,
// and once the pool is closed and the stuck hooks are torn down, every created resource was destroyed
// exactly once.
#include "test_support.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <list>
#include <string>

namespace {

enum class hook { factory, before_acquire, before_release, healthcheck };
enum class behaviour { ok, error, slow, never };
enum class ending { success, timeout, cancel, close };

const char* name(hook h) {
    switch (h) {
    case hook::factory: return "factory";
    case hook::before_acquire: return "before_acquire";
    case hook::before_release: return "before_release";
    case hook::healthcheck: return "healthcheck";
    }
    return "?";
}
const char* name(behaviour b) {
    switch (b) {
    case behaviour::ok: return "ok";
    case behaviour::error: return "error";
    case behaviour::slow: return "slow";
    case behaviour::never: return "never";
    }
    return "?";
}
const char* name(ending e) {
    switch (e) {
    case ending::success: return "success";
    case ending::timeout: return "timeout";
    case ending::cancel: return "cancel";
    case ending::close: return "close";
    }
    return "?";
}

struct res {
    int id;
    std::shared_ptr<int> lent;  // >1 would be a double lend
};

// Coroutine hooks whose behaviour is chosen per test. "never" waits on a timer that only the teardown
// cancels (a hook stuck on a dead socket until the process gives up on it).
struct harness {
    asio::io_context io;
    std::list<asio::steady_timer> stuck;
    int created = 0, destroyed = 0;

    asio::awaitable<void> behave(behaviour b) {
        switch (b) {
        case behaviour::ok: co_return;
        case behaviour::error: throw std::runtime_error("hook failed");
        case behaviour::slow: {
            asio::steady_timer t(co_await asio::this_coro::executor, 3ms);
            co_await t.async_wait(asio::use_awaitable);
            co_return;
        }
        case behaviour::never: {
            auto& t = stuck.emplace_back(co_await asio::this_coro::executor, std::chrono::hours(24));
            co_await t.async_wait(asio::use_awaitable);  // throws when the teardown cancels it
            co_return;
        }
        }
    }
};

void run_case(hook h, behaviour b, ending e) {
    SCOPED_TRACE(std::string(name(h)) + " " + name(b) + " / " + name(e));
    harness x;
    auto b_of = [&](hook which) { return which == h ? b : behaviour::ok; };
    respool::hooks<res> hooks;
    hooks.factory = [&, fb = b_of(hook::factory)]() -> asio::awaitable<res> {
        co_await x.behave(fb);
        co_return res{++x.created, std::make_shared<int>(0)};
    };
    hooks.destructor = [&](res& r) {
        EXPECT_EQ(*r.lent, 0) << "destroyed while lent";
        ++x.destroyed;
    };
    hooks.before_acquire = [&, fb = b_of(hook::before_acquire)](res&) -> asio::awaitable<bool> {
        co_await x.behave(fb);
        co_return true;
    };
    hooks.before_release = [&, fb = b_of(hook::before_release)](res&) -> asio::awaitable<bool> {
        co_await x.behave(fb);
        co_return true;
    };
    hooks.healthcheck = [&, fb = b_of(hook::healthcheck)](res&) -> asio::awaitable<bool> {
        co_await x.behave(fb);
        co_return true;
    };
    // The factory cases start empty (the acquire creates); the others start with one idle resource
    // (before_acquire only runs on idle ones) that is validated on borrow (the healthcheck case).
    const bool prewarm = h != hook::factory;
    auto p =
        std::make_unique<pool<res>>(x.io.get_executor(),
                                    respool::pool_options{.min = 0,
                                                          .max = 1,
                                                          .health_check_on_borrow = h == hook::healthcheck,
                                                          .validate_after = 0ms,
                                                          .create_retry_initial = {},
                                                          .create_retry_max = {}},
                                    std::move(hooks));
    if (prewarm) {
        bool got = false;
        p->async_acquire(5s, [&](error_code ec, lease<res> l) {
            ASSERT_FALSE(ec) << ec.message();
            got = true;
            l.release();  // before_release runs here with its behaviour
        });
        ASSERT_TRUE(test::run_until(x.io, [&] { return got; }));
        // Let the pool's clock pass validate_after = 0 (housekeeping tick) so the borrow validates.
        const auto until = std::chrono::steady_clock::now() + 25ms;
        ASSERT_TRUE(test::run_until(x.io, [&] { return std::chrono::steady_clock::now() >= until; }));
    }

    int completions = 0;
    error_code result;
    lease<res> held;
    asio::cancellation_signal sig;
    const auto timeout = e == ending::timeout ? 2ms : e == ending::success ? 300ms : 10s;
    p->async_acquire(timeout, asio::bind_cancellation_slot(sig.slot(), [&](error_code ec, lease<res> l) {
                         ++completions;
                         result = ec;
                         if (l) {
                             EXPECT_EQ((*l->lent)++, 0) << "lent twice";
                             held = std::move(l);
                         }
                     }));
    if (e == ending::cancel || e == ending::close) {
        asio::steady_timer t(x.io, 1ms);
        t.async_wait([&](error_code) {
            if (e == ending::cancel)
                sig.emit(asio::cancellation_type::terminal);
            else
                p->close();
        });
        ASSERT_TRUE(test::run_until(x.io, [&] { return completions > 0; }));
    } else {
        ASSERT_TRUE(test::run_until(x.io, [&] { return completions > 0; }))
            << "a stuck hook must not hang the acquire past its deadline";
    }
    const auto s = p->stats();
    EXPECT_LE(s.total, s.max);
    EXPECT_EQ(s.total, s.idle + s.active);
    if (held) {
        EXPECT_FALSE(result);
        --*held->lent;
        held.release();
    }
    // Teardown: close, unstick the stuck hooks, drain; then every creation has been destroyed once.
    p->close();
    for (auto& t : x.stuck) t.cancel();
    ASSERT_TRUE(test::run_until(x.io,
                                [&] {
                                    for (auto& t : x.stuck) t.cancel();
                                    return p->stats().total == 0;
                                }))
        << "total " << p->stats().total;
    x.io.restart();
    x.io.poll();
    EXPECT_EQ(completions, 1) << "completed exactly once";
    p.reset();
    x.io.poll();
    EXPECT_EQ(x.created, x.destroyed) << "each created resource destroyed exactly once";
}

}  // namespace

class matrix : public ::testing::TestWithParam<std::tuple<hook, behaviour, ending>> {};

TEST_P(matrix, acquire_completes_once_and_nothing_leaks) {
    auto [h, b, e] = GetParam();
    run_case(h, b, e);
}

INSTANTIATE_TEST_SUITE_P(
    every_hook_behaviour_and_ending, matrix,
    ::testing::Combine(::testing::Values(hook::factory, hook::before_acquire, hook::before_release,
                                         hook::healthcheck),
                       ::testing::Values(behaviour::ok, behaviour::error, behaviour::slow, behaviour::never),
                       ::testing::Values(ending::success, ending::timeout, ending::cancel, ending::close)),
    [](const auto& param_info) {
        const auto& p = param_info.param;
        return std::string(name(std::get<0>(p))) + "_" + name(std::get<1>(p)) + "_" + name(std::get<2>(p));
    });
