// A pool that is not thread_safe lives on one executor; its users call it only from there, but the
// handlers of their acquires may be bound to other executors (bind_executor), run by other threads.
// The pool's own bookkeeping must stay on its executor whatever the handler's (adversary report D1):
// under TSan any resumption on the handler's thread is a data race, and without it counters tear and
// more than `max` resources appear.
#include "../asio/test_support.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include <atomic>
#include <thread>

using namespace std::chrono_literals;
namespace asio = boost::asio;

TEST(executors, a_single_executor_pool_resumes_waiters_on_its_own_executor_whatever_the_handlers) {
    asio::io_context pool_io, handler_io;
    auto handler_work = asio::make_work_guard(handler_io);
    std::thread handler_thread([&] { handler_io.run(); });

    auto t = std::make_shared<test::tracker>();
    respool::pool<test::conn> p(pool_io.get_executor(), {.max = 2}, test::counting_hooks(t));
    constexpr int clients = 8, rounds = 200;
    std::atomic<int> done{0}, over_max{0};
    std::function<void(int)> next;
    next = [&](int left) {
        if (left == 0) {
            ++done;
            return;
        }
        // Called on the pool's executor, as documented; the handler runs on the other thread.
        p.async_acquire(5s, asio::bind_executor(
                                handler_io, [&, left](respool::error_code ec, respool::lease<test::conn> l) {
                                    ASSERT_FALSE(ec) << ec.message();
                                    // Back to the pool's executor to release and go on (a user obeying the
                                    // threading rule).
                                    asio::post(pool_io, [&, left, l = std::move(l)]() mutable {
                                        if (p.stats().total > 2) ++over_max;
                                        l.release();
                                        next(left - 1);
                                    });
                                }));
    };
    for (int c = 0; c < clients; ++c) asio::post(pool_io, [&] { next(rounds); });
    ASSERT_TRUE(test::run_until(
        pool_io, [&] { return done == clients; }, std::chrono::seconds(60)));
    handler_work.reset();
    handler_thread.join();
    EXPECT_EQ(over_max, 0);
    EXPECT_LE(t->created, 2);
    EXPECT_EQ(p.stats().acquires, static_cast<std::uint64_t>(clients * rounds));
}
