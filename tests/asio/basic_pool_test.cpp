// respool::basic_pool, the low-level pool under the C ABI: the caller's hooks make and free the nodes,
// checks run where pool<T> runs its hooks, an acquire that waits completes on the pool's executor.
#include "test_support.hpp"

#include <respool/basic_pool.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <stdexcept>

namespace {

namespace asio = boost::asio;
using respool::basic_check;
using respool::basic_node;
using respool::basic_pool;
using respool::errc;
using respool::error_code;

struct int_node final : basic_node {
    explicit int_node(int v) : value(v) {}
    int value;
};

// Counts what the pool asks of it; a check refuses while `refuse` names it.
struct script {
    int created = 0;
    int destroyed = 0;
    int checks = 0;
    std::optional<basic_check> refuse;
    std::optional<basic_check> present;  // the one check the hooks have
    error_code create_error;             // set: every creation fails with it
};

class scripted_hooks final : public respool::basic_hooks {
public:
    explicit scripted_hooks(script& s) : s_(s) {}
    bool has(basic_check c) const noexcept override { return s_.present == c; }
    basic_node* create(error_code& ec) noexcept override {
        if (s_.create_error) {
            ec = s_.create_error;
            return nullptr;
        }
        return new int_node(++s_.created);
    }
    bool check(basic_check c, basic_node&) noexcept override {
        ++s_.checks;
        return s_.refuse != c;
    }
    bool destroy(basic_node* n) noexcept override {
        ++s_.destroyed;
        delete static_cast<int_node*>(n);
        return true;
    }

private:
    script& s_;
};

int value_of(basic_node* n) {
    return static_cast<int_node*>(n)->value;
}

TEST(basic_pool, pre_warms_lends_and_takes_back_the_callers_nodes) {
    asio::io_context io;
    script s;
    {
        basic_pool p(io.get_executor(), {.min = 2, .max = 2}, std::make_unique<scripted_hooks>(s));
        EXPECT_EQ(s.created, 2);
        EXPECT_EQ(p.stats().idle, 2u);
        error_code ec;
        basic_node* a = p.try_acquire(ec);
        ASSERT_NE(a, nullptr);
        EXPECT_EQ(value_of(a), 1);  // the least recently released first
        basic_node* b = p.acquire_now(ec);
        ASSERT_NE(b, nullptr);
        EXPECT_EQ(p.try_acquire(ec), nullptr);
        EXPECT_EQ(ec, errc::exhausted);
        EXPECT_EQ(p.acquire_now(ec), nullptr);  // nothing free now: it would wait
        EXPECT_FALSE(ec);
        p.release(a, false);
        p.release(b, true);  // broken: destroyed
        EXPECT_EQ(s.destroyed, 1);
        EXPECT_EQ(p.stats().poisoned, 1u);
        EXPECT_EQ(p.stats().active, 0u);
    }
    EXPECT_EQ(s.destroyed, s.created);
}

TEST(basic_pool, a_waiting_acquire_is_served_on_the_pools_executor_never_inside_the_call) {
    asio::io_context io;
    script s;
    basic_pool p(io.get_executor(), {.min = 1, .max = 1}, std::make_unique<scripted_hooks>(s));
    error_code ec;
    basic_node* held = p.try_acquire(ec);
    ASSERT_NE(held, nullptr);
    int calls = 0;
    basic_node* got = nullptr;
    p.async_acquire(std::nullopt, [&](error_code e, basic_node* n) {
        ++calls;
        ec = e;
        got = n;
    });
    EXPECT_EQ(p.stats().waiting, 1u);
    p.release(held, false);
    EXPECT_EQ(calls, 0) << "completes through the executor, not inside release";
    ASSERT_TRUE(test::run_until(io, [&] { return calls == 1; }));
    EXPECT_FALSE(ec);
    EXPECT_EQ(got, held);
    p.release(got, false);

    // Decided at once (closed): still through the executor.
    p.close();
    p.async_acquire(std::chrono::seconds(1), [&](error_code e, basic_node* n) {
        ++calls;
        ec = e;
        got = n;
    });
    EXPECT_EQ(calls, 1);
    ASSERT_TRUE(test::run_until(io, [&] { return calls == 2; }));
    EXPECT_EQ(ec, errc::closed);
    EXPECT_EQ(got, nullptr);
}

TEST(basic_pool, a_waiting_acquire_times_out) {
    asio::io_context io;
    script s;
    basic_pool p(io.get_executor(), {.min = 1, .max = 1}, std::make_unique<scripted_hooks>(s));
    error_code ec;
    basic_node* held = p.try_acquire(ec);
    ASSERT_NE(held, nullptr);
    bool done = false;
    p.async_acquire(std::chrono::milliseconds(1), [&](error_code e, basic_node* n) {
        done = true;
        ec = e;
        EXPECT_EQ(n, nullptr);
    });
    ASSERT_TRUE(test::run_until(io, [&] { return done; }));
    EXPECT_EQ(ec, errc::timeout);
    p.release(held, false);
}

TEST(basic_pool, the_create_hooks_error_reaches_the_acquire) {
    asio::io_context io;
    script s;
    s.create_error = make_error_code(std::errc::connection_refused);
    basic_pool p(io.get_executor(), {.min = 0, .max = 1}, std::make_unique<scripted_hooks>(s));
    error_code ec;
    EXPECT_EQ(p.try_acquire(ec), nullptr);
    EXPECT_EQ(ec, std::errc::connection_refused);
    EXPECT_EQ(p.stats().create_failures, 1u);
}

TEST(basic_pool, only_the_checks_the_hooks_have_run) {
    asio::io_context io;
    script s;
    s.present = basic_check::before_release;
    basic_pool p(io.get_executor(), {.min = 1, .max = 1}, std::make_unique<scripted_hooks>(s));
    error_code ec;
    basic_node* n = p.try_acquire(ec);
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(s.checks, 0) << "no validate or before_acquire: the hooks have none";
    s.refuse = basic_check::before_release;
    p.release(n, false);
    EXPECT_EQ(s.checks, 1);
    EXPECT_EQ(s.destroyed, 1) << "refused on release: destroyed";
    EXPECT_EQ(p.stats().broken, 1u);
}

TEST(basic_pool, bad_arguments_name_what_is_wrong) {
    asio::io_context io;
    script s;
    try {
        basic_pool p(io.get_executor(), {.min = 4, .max = 3}, std::make_unique<scripted_hooks>(s));
        FAIL() << "min > max accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("min (4) must not exceed max (3)"), std::string::npos)
            << e.what();
    }
    try {
        basic_pool p(io.get_executor(), {}, nullptr);
        FAIL() << "null hooks accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_STREQ(e.what(), "respool: basic_pool needs hooks");
    }
    EXPECT_EQ(s.created, 0);
}

}  // namespace
