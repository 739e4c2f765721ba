// What hooks get: a context (age, idle time, uses, why), a validate hook apart from the
// background healthcheck, a synchronous needs_reset that lets clean releases skip before_release,
// move-only callables, the factory's own error detail for the acquire it fails, and a coroutine
// validation that leaves borrows of recently used resources undelayed. Manual clock.
#include "test_support.hpp"

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <memory>
#include <sstream>
#include <stdexcept>
#include <vector>

using respool::hook_context;
using respool::hook_reason;

namespace {

struct fixture : test::clocked_fixture {
    respool::pool_options options() const { return clocked_fixture::options(2); }
    lease<conn> acquire(pool<conn>& p) {
        lease<conn> got;
        error_code result;
        p.async_acquire(5s, [&](error_code ec, lease<conn> l) {
            result = ec;
            got = std::move(l);
        });
        test::step(io, *clock, 0ms);
        EXPECT_FALSE(result) << result.message();
        return got;
    }
};

}  // namespace

TEST(hooks, checks_receive_age_idle_time_uses_and_the_reason_they_run) {
    fixture f;
    std::vector<hook_context> seen;
    auto h = test::counting_hooks(f.t);
    h.validate = [&](conn&, const hook_context& c) {
        seen.push_back(c);
        return true;
    };
    h.healthcheck = [&](conn&, const hook_context& c) {
        seen.push_back(c);
        return true;
    };
    h.before_release = [&](conn&, const hook_context& c) {
        seen.push_back(c);
        return true;
    };
    auto o = f.options();
    o.min = 1;
    o.health_check_on_borrow = true;
    o.validate_after = 1s;
    o.healthcheck_interval = 10s;
    pool<conn> p(f.io.get_executor(), o, std::move(h));

    test::step(f.io, *f.clock, 3s);
    auto l = f.acquire(p);  // idle 3 s > validate_after: validated on borrow
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].reason, hook_reason::on_borrow);
    EXPECT_EQ(seen[0].age, 3s);
    EXPECT_EQ(seen[0].idle_for, 3s);
    EXPECT_EQ(seen[0].uses, 0u) << "not lent before";

    test::step(f.io, *f.clock, 2s);
    l.release();
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[1].reason, hook_reason::on_release);
    EXPECT_EQ(seen[1].age, 5s);
    EXPECT_EQ(seen[1].idle_for, 0s);
    EXPECT_EQ(seen[1].uses, 1u);

    test::step(f.io, *f.clock, 5s);  // the first health tick, at 10 s
    ASSERT_EQ(seen.size(), 3u);
    EXPECT_EQ(seen[2].reason, hook_reason::in_background);
    EXPECT_EQ(seen[2].age, 10s);
    EXPECT_EQ(seen[2].idle_for, 5s);
    EXPECT_EQ(seen[2].uses, 1u);
}

TEST(hooks, validate_runs_on_borrow_and_healthcheck_only_in_the_background) {
    fixture f;
    int validations = 0, health_checks = 0;
    auto h = test::counting_hooks(f.t);
    h.validate = [&](conn&) {
        ++validations;
        return false;  // the idle one is dead: replaced for the caller
    };
    h.healthcheck = [&](conn&) {
        ++health_checks;
        return true;
    };
    auto o = f.options();
    o.min = 1;
    o.health_check_on_borrow = true;
    o.validate_after = 1s;
    pool<conn> p(f.io.get_executor(), o, std::move(h));
    test::step(f.io, *f.clock, 2s);
    auto l = f.acquire(p);
    EXPECT_EQ(validations, 1);
    EXPECT_EQ(health_checks, 0);
    EXPECT_EQ(l->id, 2) << "a replacement, created for the caller and not validated again";
    EXPECT_EQ(p.stats().rejected, 1u);
}

TEST(hooks, a_clean_release_skips_before_release_when_needs_reset_says_no) {
    fixture f;
    int resets = 0;
    auto h = test::counting_hooks(f.t);
    h.needs_reset = [](conn& c) { return !c.healthy; };  // "dirty" stands for a touched session here
    h.before_release = [&](conn& c) -> asio::awaitable<bool> {
        ++resets;
        c.healthy = true;
        co_return true;
    };
    pool<conn> p(f.io.get_executor(), f.options(), std::move(h));
    auto l = f.acquire(p);
    l.release();  // clean: no coroutine
    test::step(f.io, *f.clock, 0ms);
    EXPECT_EQ(resets, 0);
    EXPECT_EQ(p.stats().idle, 1u) << "back in idle at once";
    l = f.acquire(p);
    l->healthy = false;
    l.release();  // dirty: the coroutine resets it
    EXPECT_EQ(p.stats().idle, 0u) << "the reset runs before it is idle again";
    test::step(f.io, *f.clock, 0ms);
    EXPECT_EQ(resets, 1);
    EXPECT_EQ(p.stats().idle, 1u);
}

TEST(hooks, needs_reset_must_be_synchronous) {
    fixture f;
    auto h = test::counting_hooks(f.t);
    h.needs_reset = [](conn&) -> asio::awaitable<bool> { co_return true; };
    EXPECT_THROW(pool<conn>(f.io.get_executor(), f.options(), std::move(h)), std::invalid_argument);
}

TEST(hooks, hooks_may_own_move_only_state) {
    fixture f;
    respool::hooks<conn> h;
    auto secret = std::make_unique<int>(7);
    h.factory = [s = std::move(secret)] { return conn{*s}; };
    h.destructor = [u = std::make_unique<int>(1)](conn&) {};
    pool<conn> p(f.io.get_executor(), f.options(), std::move(h));
    auto l = f.acquire(p);
    EXPECT_EQ(l->id, 7);
}

TEST(hooks, the_factory_error_detail_reaches_the_acquire_it_fails) {
    fixture f;
    respool::hooks<conn> h;
    h.factory = []() -> asio::awaitable<conn> {
        throw std::runtime_error("FATAL: password authentication failed for user \"app\"");
        co_return conn{};
    };
    auto o = f.options();
    o.create_retry_initial = {};
    o.create_retry_max = {};
    std::ostringstream log;
    pool<conn> p(f.io.get_executor(), o, std::move(h));
    p.set_log_sink(respool::make_ostream_log_sink(log, respool::log_level::warning));
    respool::diagnostics diag;
    error_code result;
    p.async_acquire(5s, diag, [&](error_code ec, lease<conn>) { result = ec; });
    test::step(f.io, *f.clock, 0ms);
    EXPECT_EQ(result, errc::create_failed);
    EXPECT_EQ(diag.message, "FATAL: password authentication failed for user \"app\"");
    ASSERT_TRUE(diag.error);
    EXPECT_THROW(std::rethrow_exception(diag.error), std::runtime_error);
    EXPECT_NE(log.str().find("creation failed: FATAL: password authentication failed"), std::string::npos)
        << log.str();
}

TEST(hooks, a_factory_error_code_of_its_own_reaches_the_acquire_as_is) {
    fixture f;
    respool::hooks<conn> h;
    h.factory = []() -> conn {
        throw boost::system::system_error(make_error_code(boost::system::errc::connection_refused),
                                          "connect 127.0.0.1:1");
    };
    pool<conn> p(f.io.get_executor(), f.options(), std::move(h));
    respool::diagnostics diag;
    error_code result;
    p.async_acquire(5s, diag, [&](error_code ec, lease<conn>) { result = ec; });
    test::step(f.io, *f.clock, 0ms);
    EXPECT_EQ(result, boost::system::errc::connection_refused);
    EXPECT_NE(diag.message.find("connect 127.0.0.1:1"), std::string::npos) << diag.message;
}

namespace {
struct counting_observer : respool::observer {
    int created = 0, taken = 0;
    void on_created() override { ++created; }
    void on_taken(std::chrono::nanoseconds) override { ++taken; }
};
struct throwing_observer : respool::observer {
    void on_created() override { throw std::runtime_error("observer bug"); }
};
}  // namespace

TEST(observers, several_observers_each_see_every_event_and_one_that_throws_stops_none) {
    fixture f;
    auto a = std::make_shared<counting_observer>();
    auto b = std::make_shared<counting_observer>();
    pool<conn> p(f.io.get_executor(), f.options(), test::counting_hooks(f.t));
    p.add_observer(a);
    p.add_observer(std::make_shared<throwing_observer>());
    p.add_observer(b);
    auto l = f.acquire(p);
    EXPECT_EQ(a->created, 1);
    EXPECT_EQ(b->created, 1);
    EXPECT_EQ(a->taken, 1);
    EXPECT_EQ(b->taken, 1);
    p.remove_observer(a);
    l.release();
    l = f.acquire(p);
    EXPECT_EQ(a->taken, 1) << "removed";
    EXPECT_EQ(b->taken, 2);
    p.set_observer(nullptr);
    l.release();
    l = f.acquire(p);
    EXPECT_EQ(b->taken, 2) << "set_observer(nullptr) removes them all";
}

TEST(observers, histograms_carry_the_sum_of_what_they_recorded) {
    fixture f;
    auto o = f.options();
    o.record_timings = true;
    o.max = 1;
    pool<conn> p(f.io.get_executor(), o, test::counting_hooks(f.t));
    auto held = f.acquire(p);
    test::step(f.io, *f.clock, 250ms);
    lease<conn> second;
    p.async_acquire(5s, [&](error_code, lease<conn> l) { second = std::move(l); });
    test::step(f.io, *f.clock, 100ms);
    held.release();  // held 350 ms; the waiter waited 100 ms
    test::step(f.io, *f.clock, 50ms);
    second.release();  // held 50 ms
    const auto s = p.stats();
    EXPECT_EQ(s.hold_time.total(), 2u);
    EXPECT_EQ(s.hold_time.sum, std::chrono::nanoseconds(400ms));
    EXPECT_EQ(s.wait_time.total(), 2u);
    EXPECT_EQ(s.wait_time.sum, std::chrono::nanoseconds(100ms)) << "the immediate take adds nothing";
}

// A before_acquire that always says no, with a floor of resources to keep (min): every rejection
// makes the pool create a replacement. before_acquire runs on every resource taken from idle, the
// pre-warmed one included; a replacement made for the acquire whose check refused skips it, so one
// acquire ends with the replacement instead of creating and rejecting forever.
TEST(hooks, a_before_acquire_that_always_says_no_cannot_make_one_acquire_loop) {
    fixture f;
    auto h = test::counting_hooks(f.t);
    auto asked = std::make_shared<int>(0);
    h.before_acquire = [asked](conn&) {
        ++*asked;
        return false;
    };
    auto o = f.options();
    o.min = 1;
    pool<conn> p(f.io.get_executor(), o, std::move(h));
    auto first = p.try_acquire();  // the pre-warmed one is checked (and refused), then replaced
    ASSERT_TRUE(first);
    EXPECT_EQ(first->id, 2);
    EXPECT_EQ(*asked, 1) << "before_acquire ran on the pre-warmed resource, not on its replacement";
    EXPECT_EQ(p.stats().rejected, 1u);
    first.release();
    auto second = p.try_acquire();  // the only idle one was lent before: rejected, then replaced
    ASSERT_TRUE(second);
    EXPECT_EQ(second->id, 3);
    EXPECT_EQ(*asked, 2);
    EXPECT_EQ(p.stats().rejected, 2u);
    second.release();
    auto third = f.acquire(p);  // the same through async_acquire
    ASSERT_TRUE(third);
    EXPECT_EQ(third->id, 4);
    EXPECT_EQ(*asked, 3);
    EXPECT_EQ(p.stats().rejected, 3u);
    EXPECT_EQ(f.t->created.load(), 4);
}

// The rule for every taker: a pre-warmed resource that was never lent still passes before_acquire,
// through try_acquire and async_acquire alike; only one created for the acquire itself skips it.
TEST(hooks, before_acquire_runs_on_pre_warmed_resources_never_lent) {
    fixture f;
    auto h = test::counting_hooks(f.t);
    auto asked = std::make_shared<int>(0);
    h.before_acquire = [asked](conn&) {
        ++*asked;
        return true;
    };
    auto o = f.options();
    o.min = 2;
    o.max = 3;
    pool<conn> p(f.io.get_executor(), o, std::move(h));
    ASSERT_EQ(p.stats().idle, 2u);
    auto a = p.try_acquire();
    ASSERT_TRUE(a);
    EXPECT_EQ(*asked, 1) << "pre-warmed, taken by try_acquire";
    auto b = f.acquire(p);
    ASSERT_TRUE(b);
    EXPECT_EQ(*asked, 2) << "pre-warmed, taken by async_acquire";
    auto c = p.try_acquire();  // nothing idle: created for this acquire
    ASSERT_TRUE(c);
    EXPECT_EQ(c->id, 3);
    EXPECT_EQ(*asked, 2) << "made for this acquire: no before_acquire";
}

namespace {

// An allocator that counts what the pool allocates through a handler's associated allocator: an
// acquire that has to wait (or to wait for a coroutine check) keeps its operation there.
template <class T>
struct counting_allocator {
    using value_type = T;
    int* count;
    explicit counting_allocator(int* c) noexcept : count(c) {}
    template <class U>
    counting_allocator(const counting_allocator<U>& o) noexcept : count(o.count) {}
    T* allocate(std::size_t n) {
        ++*count;
        return std::allocator<T>().allocate(n);
    }
    void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }
    template <class U>
    bool operator==(const counting_allocator<U>& o) const noexcept {
        return count == o.count;
    }
};

}  // namespace

TEST(hooks, a_coroutine_validation_leaves_borrows_of_recently_used_resources_undelayed) {
    fixture f;
    int validations = 0;
    auto h = test::counting_hooks(f.t);
    h.validate = [&](conn&) -> asio::awaitable<bool> {
        ++validations;
        co_return true;
    };
    auto o = f.options();
    o.min = 1;
    o.max = 1;
    o.health_check_on_borrow = true;
    o.validate_after = 1s;
    pool<conn> p(f.io.get_executor(), o, std::move(h));
    test::step(f.io, *f.clock, 0ms);

    int ops = 0;
    lease<conn> got;
    auto borrow = [&] {
        error_code result = make_error_code(respool::errc::closed);
        p.async_acquire(
            5s, asio::bind_allocator(counting_allocator<void>(&ops), [&](error_code ec, lease<conn> l) {
                result = ec;
                got = std::move(l);
            }));
        test::step(f.io, *f.clock, 0ms);
        EXPECT_FALSE(result) << result.message();
    };

    borrow();  // idle 0 s: nothing to validate, decided at once
    EXPECT_EQ(validations, 0);
    EXPECT_EQ(ops, 0) << "an acquire decided at once makes no operation";
    got.release();

    test::step(f.io, *f.clock, 2s);
    borrow();  // idle 2 s > validate_after: the coroutine validates it, the acquire waits for the verdict
    EXPECT_EQ(validations, 1);
    EXPECT_EQ(ops, 1) << "an acquire that waits for a coroutine check keeps its operation";
    EXPECT_TRUE(got);
    got.release();

    borrow();  // just returned: no validation, at once again
    EXPECT_EQ(validations, 1);
    EXPECT_EQ(ops, 1);
}
