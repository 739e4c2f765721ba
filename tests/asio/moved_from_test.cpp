// A moved-from pool is empty: valid() says so, and every member is either safe (it acts as a closed
// pool with nothing in it) or throws std::logic_error naming the problem; nothing dereferences null.
#include "test_support.hpp"

#include <boost/asio/bind_executor.hpp>

#include <stdexcept>
#include <utility>

TEST(moved_from, a_moved_from_pool_is_empty_and_acts_closed) {
    asio::io_context io;
    auto t = std::make_shared<test::tracker>();
    respool::pool<test::conn> a(io.get_executor(), {.min = 1, .max = 2}, test::counting_hooks(t));
    respool::pool<test::conn> b(std::move(a));
    EXPECT_TRUE(b.valid());
    EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): the moved-from state is under test
    const auto s = a.stats();
    EXPECT_TRUE(s.closed);
    EXPECT_EQ(s.total, 0u);
    respool::error_code ec;
    EXPECT_FALSE(a.try_acquire(ec));
    EXPECT_EQ(ec, errc::closed);
    int completions = 0;
    a.async_acquire(1s, asio::bind_executor(io, [&](respool::error_code e, respool::lease<test::conn> l) {
                        ++completions;
                        EXPECT_EQ(e, errc::closed);
                        EXPECT_FALSE(l);
                    }));
    a.async_wait_ready(asio::bind_executor(io, [&](respool::error_code e) {
        ++completions;
        EXPECT_EQ(e, errc::closed);
    }));
    a.async_close(1s, asio::bind_executor(io, [&](respool::error_code e) {
                      ++completions;
                      EXPECT_FALSE(e);
                  }));
    EXPECT_EQ(completions, 0) << "never inline";
    io.poll();
    EXPECT_EQ(completions, 3);
    a.close();
    a.retire_all();
    a.activate();
    a.deactivate();
    a.recover();
    EXPECT_EQ(a.state(), respool::circuit_state::closed);
    EXPECT_EQ(a.options().max, respool::pool_options{}.max);
    EXPECT_FALSE(a.get_executor());
    EXPECT_THROW(a.set_max(3), std::logic_error);
    EXPECT_THROW(a.set_observer(nullptr), std::logic_error);
    EXPECT_THROW(a.set_log_sink(nullptr), std::logic_error);
    // The pool it moved into is whole; assigning one back makes the empty one valid again.
    auto l = b.try_acquire();
    EXPECT_TRUE(l);
    l.release();
    a = std::move(b);
    EXPECT_TRUE(a.valid());
    EXPECT_FALSE(b.valid());  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(a.stats().total, 1u);
}
