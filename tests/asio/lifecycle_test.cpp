// Resilience and lifecycle on a real io_context: the default circuit strategy, leak reports with the
// acquire call site, eviction, lifetimes, validation on borrow, creation back-off, logging, histograms.
// The timing rules themselves are pinned down by tests/unit/lifecycle_test.cpp on a fake clock; here the
// pool's own timers run, and each test waits on a stats counter (never on a guessed sleep).
#include "test_support.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using respool::circuit_state;
using test::tracker;

namespace {

// A circuit breaker that records what a strategy asks of it.
struct fake_breaker : respool::circuit_breaker {
    circuit_state s = circuit_state::closed;
    int opened = 0, closed = 0, scheduled = 0;
    respool::duration delay{};
    std::uint32_t probes = 0;
    circuit_state state() const override { return s; }
    void activate() override {
        s = circuit_state::closed;
        ++closed;
    }
    void deactivate() override {
        s = circuit_state::open;
        ++opened;
    }
    void recover() override { s = circuit_state::half_open; }
    void recover(std::uint32_t p) override {
        s = circuit_state::half_open;
        probes = p;
    }
    void recover_after(respool::duration d, std::uint32_t p) override {
        ++scheduled;
        delay = d;
        probes = p;
    }
};

}  // namespace

TEST(strategy, opens_after_n_consecutive_failures_and_schedules_the_cool_down) {
    respool::failure_threshold_strategy st(
        {.failures_to_open = 3, .cool_down = 7s, .probes = 2, .successes_to_close = 2});
    fake_breaker cb;
    st.report_failure(cb, errc::broken);
    st.report_failure(cb, errc::broken);
    st.report_success(cb);  // resets the run
    st.report_failure(cb, errc::broken);
    st.report_failure(cb, errc::create_failed);
    EXPECT_EQ(cb.opened, 0);
    st.report_failure(cb, errc::poisoned);
    EXPECT_EQ(cb.opened, 1);
    EXPECT_EQ(cb.s, circuit_state::open);
    EXPECT_EQ(cb.scheduled, 1);
    EXPECT_EQ(cb.delay, respool::duration(7s));
    EXPECT_EQ(cb.probes, 2u);
    st.report_failure(cb, errc::broken);  // late report while open: ignored
    EXPECT_EQ(cb.opened, 1);
}

TEST(strategy, half_open_closes_after_m_successes_and_reopens_on_a_probe_failure) {
    respool::failure_threshold_strategy st(
        {.failures_to_open = 1, .cool_down = 1s, .probes = 1, .successes_to_close = 2});
    fake_breaker cb;
    cb.recover(1);
    st.report_failure(cb, errc::broken);
    EXPECT_EQ(cb.s, circuit_state::open) << "a probe failure reopens";
    EXPECT_EQ(cb.scheduled, 1);
    cb.recover(1);
    st.report_success(cb);
    EXPECT_EQ(cb.s, circuit_state::half_open);
    st.report_success(cb);
    EXPECT_EQ(cb.s, circuit_state::closed);
    EXPECT_EQ(cb.closed, 1);
}

TEST(strategy, rejects_bad_options_by_name) {
    auto msg = [](respool::breaker_options o) {
        try {
            respool::failure_threshold_strategy s(o);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_EQ(msg({.failures_to_open = 0}), "respool: failures_to_open (0) must be at least 1");
    EXPECT_EQ(msg({.probes = 0}), "respool: probes (0) must be at least 1");
    EXPECT_EQ(msg({.cool_down = -1s}), "respool: cool_down (-1s) must not be negative");
}

TEST(lifecycle_pool, failures_open_the_circuit_which_fails_waiters_then_probes_close_it) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    bool down = true;
    respool::hooks<conn> h;
    h.factory = [&]() -> conn {
        if (down) throw std::runtime_error("connection refused");
        return conn{++t->created};
    };
    h.destructor = [t](conn&) { ++t->destroyed; };
    pool<conn> p(io.get_executor(), {.min = 0, .max = 2, .create_retry_initial = {}, .create_retry_max = {}},
                 std::move(h));
    p.set_circuit_strategy(std::make_shared<respool::failure_threshold_strategy>(respool::breaker_options{
        .failures_to_open = 2, .cool_down = 20ms, .probes = 1, .successes_to_close = 1}));
    std::vector<error_code> got;
    for (int i = 0; i < 4; ++i) p.async_acquire(5s, [&](error_code ec, lease<conn>) { got.push_back(ec); });
    ASSERT_TRUE(test::run_until(io, [&] { return got.size() == 4; }));
    EXPECT_EQ(got[0], errc::create_failed);
    EXPECT_EQ(got[1], errc::create_failed);
    EXPECT_EQ(got[2], errc::unavailable) << "opening fails parked waiters at once";
    EXPECT_EQ(got[3], errc::unavailable);
    EXPECT_EQ(p.state(), circuit_state::open);
    down = false;
    ASSERT_TRUE(test::run_until(io, [&] { return p.state() == circuit_state::half_open; }))
        << "after the cool-down";
    {
        auto probe = p.try_acquire();
        ASSERT_TRUE(probe);
        error_code ec;
        EXPECT_FALSE(p.try_acquire(ec)) << "one probe only";
        EXPECT_EQ(ec, errc::unavailable);
    }  // the probe's release is a success: the circuit closes
    EXPECT_EQ(p.state(), circuit_state::closed);
    auto s = p.stats();
    EXPECT_EQ(s.circuit_opened, 1u);
    EXPECT_EQ(s.circuit_half_opened, 1u);
    EXPECT_EQ(s.circuit_closed, 1u);
    EXPECT_EQ(s.probes, 1u);
}

TEST(lifecycle_pool, leak_is_reported_once_with_the_acquire_site_and_again_on_return) {
    struct obs : respool::observer {
        int suspected = 0, returned = 0;
        std::uint_least32_t line = 0;
        std::string file;
        std::chrono::nanoseconds held{};
        void on_leak_suspected(std::chrono::nanoseconds h, const respool::source_location& where) override {
            ++suspected;
            line = where.line();
            file = where.file_name();
            held = h;
        }
        void on_leak_returned(std::chrono::nanoseconds, const respool::source_location&) override {
            ++returned;
        }
    };
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    pool<conn> p(io.get_executor(), {.min = 1, .max = 1, .acquire_ttl = 40ms}, test::counting_hooks(t));
    auto o = std::make_shared<obs>();
    p.set_observer(o);
    std::ostringstream log;
    p.set_log_sink(respool::make_ostream_log_sink(log, respool::log_level::info, "test-pool"));
    const auto expected_line = respool::source_location::current().line() + 1;
    auto leaked = p.try_acquire();
    ASSERT_TRUE(test::run_until(io, [&] { return p.stats().leaks == 1; }));
    EXPECT_EQ(o->suspected, 1);
    EXPECT_EQ(o->line, expected_line);
    EXPECT_NE(o->file.find("lifecycle_test.cpp"), std::string::npos);
    EXPECT_GE(o->held, std::chrono::nanoseconds(40ms));
    leaked.release();
    EXPECT_EQ(o->returned, 1);
    EXPECT_NE(log.str().find("test-pool warning: leak suspected: lease held for"), std::string::npos)
        << log.str();
    EXPECT_NE(log.str().find("lifecycle_test.cpp:" + std::to_string(expected_line)), std::string::npos)
        << log.str();
    EXPECT_NE(log.str().find("leaked lease returned"), std::string::npos);
}

namespace {

// A pool of `size` (min = max) whose leases are reported as leaked after 40 ms, on a manual clock, with
// an observer that records each report.
struct leak_rig {
    struct reports final : respool::observer {
        std::vector<std::uint_least32_t> lines;
        std::vector<std::chrono::nanoseconds> held;
        std::function<void(std::uint_least32_t)> at_first;  // runs inside the first report, once
        void on_leak_suspected(std::chrono::nanoseconds h, const respool::source_location& where) override {
            lines.push_back(where.line());
            held.push_back(h);
            if (at_first) std::exchange(at_first, nullptr)(where.line());
        }
    };
    static respool::pool_options options(std::uint32_t size, std::shared_ptr<respool::manual_clock> c) {
        respool::pool_options o;
        o.min = size;
        o.max = size;
        o.acquire_ttl = 40ms;
        o.clock = std::move(c);
        return o;
    }
    explicit leak_rig(std::uint32_t size)
        : p(io.get_executor(), options(size, clock), test::counting_hooks(t)) {
        p.set_observer(seen);
        io.poll();
    }
    void poll() {
        io.restart();
        io.poll();
    }
    // Moves time on in 10 ms steps until the pool has reported `n` leaks (200 ms at most).
    void until_leaks(std::uint64_t n) {
        for (int i = 0; i < 20 && p.stats().leaks < n; ++i) {
            clock->advance(10ms);
            poll();
        }
    }
    asio::io_context io;
    std::shared_ptr<respool::manual_clock> clock = std::make_shared<respool::manual_clock>();
    std::shared_ptr<tracker> t = std::make_shared<tracker>();
    std::shared_ptr<reports> seen = std::make_shared<reports>();
    pool<conn> p;
};

}  // namespace

// A leak report runs after the pool's lock is released, and says what it had copied by then: here the
// observer, at the first report, gives the other leaked lease back poisoned, so its resource is
// destroyed before its own report runs; that report still names its acquire. (Under ASan, a report
// that read the destroyed resource fails this test.)
TEST(lifecycle_pool, a_leak_report_outlives_the_resource_it_is_about) {
    leak_rig r(2);
    const auto line_a = respool::source_location::current().line() + 1;
    auto a = r.p.try_acquire();
    const auto line_b = respool::source_location::current().line() + 1;
    auto b = r.p.try_acquire();
    ASSERT_TRUE(a && b);
    r.seen->at_first = [&](std::uint_least32_t reported) { (reported == line_a ? b : a).poison(); };
    r.until_leaks(2);
    auto& lines = r.seen->lines;
    ASSERT_EQ(lines.size(), 2u);
    std::sort(lines.begin(), lines.end());
    EXPECT_EQ(lines, (std::vector<std::uint_least32_t>{line_a, line_b}));
    for (auto h : r.seen->held) EXPECT_GE(h, std::chrono::nanoseconds(40ms));
    EXPECT_EQ(r.p.stats().poisoned, 1u);
    EXPECT_EQ(r.t->destroyed, 1) << "the second report ran after its resource was destroyed";
}

// An acquire that parks is named by its own call site when the resource it waited for is lent to it on
// its resumption, not at its first take.
TEST(lifecycle_pool, a_parked_acquire_is_reported_with_its_own_site) {
    leak_rig r(1);
    auto first = r.p.try_acquire();
    ASSERT_TRUE(first);
    std::optional<respool::lease<conn>> second;
    const auto line = respool::source_location::current().line() + 1;
    r.p.async_acquire([&](respool::error_code ec, respool::lease<conn> l) {
        ASSERT_FALSE(ec);
        second = std::move(l);
    });
    r.poll();
    ASSERT_EQ(r.p.stats().waiting, 1u) << "parked behind the first lease";
    first.release();
    r.poll();
    ASSERT_TRUE(second && *second);
    r.until_leaks(1);
    EXPECT_EQ(r.seen->lines, std::vector<std::uint_least32_t>{line});
}

TEST(lifecycle_pool, idle_ttl_evicts_down_to_min) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    pool<conn> p(io.get_executor(), {.min = 1, .max = 3, .idle_ttl = 40ms}, test::counting_hooks(t));
    {
        auto a = p.try_acquire(), b = p.try_acquire(), c = p.try_acquire();
        ASSERT_TRUE(a && b && c);
    }
    EXPECT_EQ(p.stats().idle, 3u);
    ASSERT_TRUE(test::run_until(io, [&] { return p.stats().evicted == 2; }));
    EXPECT_EQ(p.stats().total, 1u) << "never below min";
    EXPECT_EQ(t->destroyed, 2);
}

TEST(lifecycle_pool, max_lifetime_retires_idle_resources_and_replaces_the_floor) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    pool<conn> p(io.get_executor(), {.min = 1, .max = 1, .max_lifetime = 40ms}, test::counting_hooks(t));
    ASSERT_TRUE(test::run_until(io, [&] { return p.stats().retired >= 1 && p.stats().idle == 1; }));
    EXPECT_GE(t->created, 2) << "the retired one was replaced";
    EXPECT_EQ(p.stats().total, 1u);
}

TEST(lifecycle_pool, validation_on_borrow_runs_the_healthcheck_on_long_idle_resources) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    auto h = test::counting_hooks(t);
    int checks = 0;
    h.healthcheck = [&](conn& c) {
        ++checks;
        return c.id != 1;
    };
    pool<conn> p(io.get_executor(),
                 {.min = 1, .max = 1, .health_check_on_borrow = true, .validate_after = 0ms}, std::move(h));
    {
        auto fresh = p.try_acquire();
        EXPECT_EQ(checks, 0) << "a resource just created is not validated";
    }
    // Once the pool's clock has moved past the threshold, the next borrow validates it; id 1 fails and
    // a fresh one is lent instead.
    int lent_id = 0;
    ASSERT_TRUE(test::run_until(io, [&] {
        auto l = p.try_acquire();
        lent_id = l ? l->id : 0;
        return p.stats().rejected == 1;
    }));
    EXPECT_EQ(lent_id, 2);
    EXPECT_GE(checks, 1);
}

TEST(lifecycle_pool, creation_backoff_is_observable_and_demand_is_served_after_it) {
    struct obs : respool::observer {
        int retries = 0;
        std::chrono::nanoseconds delay{};
        void on_creation_retry(const error_code&, std::chrono::nanoseconds d) override {
            ++retries;
            delay = d;
        }
    };
    asio::io_context io;
    int calls = 0;
    respool::hooks<conn> h;
    h.factory = [&]() -> conn {
        if (++calls <= 2) throw boost::system::system_error(asio::error::connection_refused);
        return conn{calls};
    };
    pool<conn> p(io.get_executor(), {.max = 1, .create_retry_initial = 5ms, .create_retry_max = 20ms},
                 std::move(h));
    auto o = std::make_shared<obs>();
    p.set_observer(o);
    std::vector<error_code> got;
    for (int i = 0; i < 3; ++i) p.async_acquire(5s, [&](error_code ec, lease<conn>) { got.push_back(ec); });
    ASSERT_TRUE(test::run_until(io, [&] { return got.size() == 3; }));
    EXPECT_EQ(got[0], asio::error::connection_refused);
    EXPECT_EQ(got[1], asio::error::connection_refused) << "after the first back-off";
    EXPECT_FALSE(got[2]) << "after the second";
    EXPECT_EQ(o->retries, 2);
    EXPECT_EQ(o->delay, std::chrono::nanoseconds(10ms)) << "doubled";
    EXPECT_EQ(p.stats().creation_retries, 2u);
}

TEST(lifecycle_pool, wait_and_hold_histograms_count_every_lease) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    auto clock = std::make_shared<respool::manual_clock>();  // the parked one waits 5 us exactly
    pool<conn> p(io.get_executor(), {.min = 1, .max = 1, .clock = clock, .record_timings = true},
                 test::counting_hooks(t));
    auto held = p.try_acquire();
    int done = 0;
    p.async_acquire([&](error_code, lease<conn>) { ++done; });
    io.poll();
    clock->advance(std::chrono::microseconds(5));
    held.release();
    io.run();
    auto s = p.stats();
    EXPECT_EQ(s.wait_time.total(), 2u);
    EXPECT_EQ(s.wait_time.counts[0], 1u) << "the immediate one";
    EXPECT_EQ(s.wait_time.counts[respool::histogram::bucket(std::chrono::microseconds(5))], 1u);
    EXPECT_EQ(s.hold_time.total(), 2u);
    EXPECT_EQ(respool::histogram::bucket(std::chrono::microseconds(0)), 0u);
    EXPECT_EQ(respool::histogram::bucket(std::chrono::microseconds(1)), 1u);
    EXPECT_EQ(respool::histogram::bucket(std::chrono::microseconds(3)), 2u);
    EXPECT_EQ(respool::histogram::bucket(std::chrono::hours(1)), respool::histogram::size - 1);
}

// The creation histogram times each successful factory call on the pool's clock (pre-warm and a
// creation made for try_acquire alike), only with record_timings; stats report the min option.
TEST(lifecycle_pool, creation_histogram_times_each_factory_call_and_stats_report_min) {
    for (const bool timed : {true, false}) {
        asio::io_context io;
        auto clock = std::make_shared<respool::manual_clock>();
        auto t = std::make_shared<tracker>();
        respool::hooks<conn> h = test::counting_hooks(t);
        h.factory = [t, clock] {
            clock->advance(3ms);  // the factory's round trip to the database
            return conn{++t->created};
        };
        respool::pool_options o;
        o.min = 2;
        o.max = 3;
        o.record_timings = timed;
        o.clock = clock;
        pool<conn> p(io.get_executor(), o, std::move(h));
        io.poll();
        auto a = p.try_acquire(), b = p.try_acquire(), c = p.try_acquire();
        ASSERT_TRUE(a && b && c);
        const auto s = p.stats();
        EXPECT_EQ(s.min, 2u);
        EXPECT_EQ(s.creations, 3u);
        if (timed) {
            EXPECT_EQ(s.create_time.total(), 3u);
            EXPECT_EQ(s.create_time.counts[respool::histogram::bucket(3ms)], 3u) << "3 ms each";
            EXPECT_EQ(s.create_time.sum, 9ms);
        } else {
            EXPECT_EQ(s.create_time.total(), 0u) << "no clock read without record_timings";
        }
    }
}

TEST(lifecycle_pool, lifecycle_options_are_validated_by_name) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    auto msg = [&](respool::pool_options o) {
        try {
            pool<conn> p(io.get_executor(), o, test::counting_hooks(t));
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_EQ(msg({.idle_ttl = -1ms}), "respool: idle_ttl (-1ms) must not be negative");
    EXPECT_EQ(msg({.max_lifetime = -1ms}), "respool: max_lifetime (-1ms) must not be negative");
    EXPECT_EQ(msg({.acquire_ttl = -1ms}), "respool: acquire_ttl (-1ms) must not be negative");
    EXPECT_EQ(msg({.create_retry_initial = 50ms, .create_retry_max = 10ms}),
              "respool: create_retry_max (10ms) must not be below create_retry_initial (50ms)");
    EXPECT_EQ(t->created, 0);
}
