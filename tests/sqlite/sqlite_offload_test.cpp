// The offload pool (the threads SQLite runs on) and the completion batch (completions going back to
// the caller's loop): every job runs exactly once, in order on one worker, including jobs queued when
// the pool shuts down and jobs queued by jobs then; completions run on the caller's loop, in the order
// they came, each once, and are discarded (not run) when the loop goes away with them.
// No sleeps: every wait is on a latch, a future or io_context::run.
#include "offload_pool.hpp"

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <atomic>
#include <future>
#include <memory>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using respool::sqlite::detail::completion_batch;
using respool::sqlite::detail::completion_node;
using respool::sqlite::detail::offload_executor;
using respool::sqlite::detail::offload_pool;
using respool::sqlite::detail::offload_settings;

namespace {

offload_settings settings(std::size_t threads) {
    offload_settings s;
    s.threads = threads;
    return s;
}

TEST(sqlite_offload_pool, every_job_runs_exactly_once_from_several_producers) {
    constexpr int producers = 3, each = 4000;
    std::vector<std::atomic<int>> runs(producers * each);
    {
        offload_pool pool(settings(3));
        std::vector<std::thread> threads;
        for (int p = 0; p < producers; ++p)
            threads.emplace_back([&, p] {
                for (int i = 0; i < each; ++i)
                    pool.get_executor().execute([&runs, k = p * each + i] { runs[k].fetch_add(1); });
            });
        for (auto& t : threads) t.join();
    }  // the destructor runs what is still queued
    for (std::size_t k = 0; k < runs.size(); ++k) ASSERT_EQ(runs[k].load(), 1) << k;
}

TEST(sqlite_offload_pool, one_worker_runs_jobs_in_submission_order) {
    std::vector<int> order;
    {
        offload_pool pool(settings(1));
        for (int i = 0; i < 1000; ++i) pool.get_executor().execute([&order, i] { order.push_back(i); });
    }
    ASSERT_EQ(order.size(), 1000u);
    for (int i = 0; i < 1000; ++i) EXPECT_EQ(order[static_cast<std::size_t>(i)], i);
}

TEST(sqlite_offload_pool, shutdown_runs_the_jobs_queued_and_the_jobs_they_queue) {
    std::promise<void> release;
    std::shared_future<void> gate = release.get_future().share();
    std::atomic<int> ran{0};
    auto pool = std::make_unique<offload_pool>(settings(1));
    offload_executor ex = pool->get_executor();
    ex.execute([gate] { gate.wait(); });  // holds the only worker while the rest queue up
    for (int i = 0; i < 100; ++i)
        ex.execute([&ran, ex] {
            ran.fetch_add(1);
            ex.execute([&ran] { ran.fetch_add(1); });  // queued during the shutdown
        });
    std::thread destroyer([&] { pool.reset(); });  // waits for the worker: the jobs are still queued
    release.set_value();
    destroyer.join();
    EXPECT_EQ(ran.load(), 200);
}

TEST(sqlite_offload_pool, its_executor_is_an_any_io_executor) {
    std::promise<std::thread::id> where;
    offload_pool pool(settings(1));
    asio::any_io_executor ex = pool.get_executor();
    ASSERT_NE(ex.target<offload_executor>(), nullptr);
    asio::post(ex, [&where] { where.set_value(std::this_thread::get_id()); });
    EXPECT_NE(where.get_future().get(), std::this_thread::get_id());
}

// A completion that records its index where it ran.
struct recorded final : completion_node {
    recorded(int i, std::vector<int>& l, std::atomic<int>& d) : index(i), log(l), discarded(d) {}
    void complete() noexcept override {
        log.push_back(index);
        delete this;
    }
    void discard() noexcept override {
        discarded.fetch_add(1);
        delete this;
    }
    int index;
    std::vector<int>& log;
    std::atomic<int>& discarded;
};

TEST(sqlite_completion_batch, completions_run_on_the_loop_once_each_in_the_order_they_came) {
    asio::io_context io;
    std::vector<int> log;
    std::atomic<int> discarded{0};
    constexpr int n = 5000;
    auto batch =
        std::make_shared<completion_batch>(io.get_executor(), respool::sqlite::detail::batch_settings{});
    auto work = asio::make_work_guard(io);
    {
        offload_pool pool(settings(1));  // one worker: the pushes come in submission order
        for (int i = 0; i < n; ++i) {
            batch->expect();
            pool.get_executor().execute([&, i] { batch->push(new recorded(i, log, discarded)); });
        }
        pool.get_executor().execute([&] { asio::post(io, [&] { work.reset(); }); });
        io.run();  // until the last completion and the guard's release ran
    }
    ASSERT_EQ(log.size(), static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) ASSERT_EQ(log[static_cast<std::size_t>(i)], i);
    EXPECT_EQ(discarded.load(), 0);
}

TEST(sqlite_completion_batch, completions_never_delivered_are_discarded_with_the_loop) {
    std::vector<int> log;
    std::atomic<int> discarded{0};
    {
        asio::io_context io;
        auto batch =
            std::make_shared<completion_batch>(io.get_executor(), respool::sqlite::detail::batch_settings{});
        for (int i = 0; i < 3; ++i) {
            batch->expect();
            batch->push(new recorded(i, log, discarded));  // the drain is posted, never run
        }
        batch.reset();  // the queued drain holds it now; destroying io destroys the drain
    }
    EXPECT_TRUE(log.empty());
    EXPECT_EQ(discarded.load(), 3);
}

}  // namespace
