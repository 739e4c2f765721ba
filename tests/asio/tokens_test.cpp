// async_acquire with every kind of completion token a user will reach for.
#include "test_support.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <future>
#include <thread>

using test::tracker;

TEST(tokens, plain_callback) {
    asio::io_context io;
    pool<conn> p(io.get_executor(), {.min = 1, .max = 1}, test::counting_hooks(std::make_shared<tracker>()));
    int id = 0;
    p.async_acquire([&](error_code ec, lease<conn> l) { id = ec ? -1 : l->id; });
    io.run();
    EXPECT_EQ(id, 1);
}

TEST(tokens, use_awaitable_throws_system_error_on_failure) {
    asio::io_context io;
    pool<conn> p(io.get_executor(), {.min = 1, .max = 1}, test::counting_hooks(std::make_shared<tracker>()));
    auto held = p.try_acquire();
    error_code caught;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            try {
                co_await p.async_acquire(1ms, asio::use_awaitable);
            } catch (const boost::system::system_error& e) {
                caught = e.code();
            }
        },
        asio::detached);
    io.run();
    EXPECT_EQ(caught, errc::timeout);
}

TEST(tokens, use_future_from_another_thread) {
    asio::io_context io;
    auto work = asio::make_work_guard(io);
    std::thread runner([&] { io.run(); });
    pool<conn> p(io.get_executor(), {.min = 1, .max = 1}, test::counting_hooks(std::make_shared<tracker>()));
    // The pool is bound to `io`; initiate on its thread, wait here.
    std::promise<std::future<lease<conn>>> handoff;
    asio::post(io, [&] { handoff.set_value(p.async_acquire(asio::use_future)); });
    auto l = handoff.get_future().get().get();
    EXPECT_EQ(l->id, 1);
    asio::post(io, [l = std::move(l)]() mutable { l.release(); });
    asio::post(io, [&] { p.close(); });
    work.reset();
    runner.join();
    EXPECT_EQ(p.stats().idle, 0u);
}

TEST(tokens, deferred_is_the_default_and_launches_when_invoked) {
    asio::io_context io;
    auto t = std::make_shared<tracker>();
    pool<conn> p(io.get_executor(), {.min = 1, .max = 1}, test::counting_hooks(t));
    auto op = p.async_acquire();  // deferred: nothing happens yet
    EXPECT_EQ(p.stats().acquires, 0u);
    int id = 0;
    std::move(op)([&](error_code ec, lease<conn> l) { id = ec ? -1 : l->id; });
    io.run();
    EXPECT_EQ(id, 1);
    // and deferred composes with co_await
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            auto l = co_await p.async_acquire(asio::use_awaitable);
            id = l->id + 10;
        },
        asio::detached);
    io.restart();
    io.run();
    EXPECT_EQ(id, 11);
}

TEST(tokens, completion_runs_on_the_handlers_associated_executor) {
    asio::io_context io;
    auto strand = asio::make_strand(io);
    pool<conn> p(io.get_executor(), {.min = 0, .max = 1}, test::counting_hooks(std::make_shared<tracker>()));
    bool on_strand = false;
    p.async_acquire(asio::bind_executor(
        strand, [&](error_code, lease<conn>) { on_strand = strand.running_in_this_thread(); }));
    io.run();
    EXPECT_TRUE(on_strand);
}
