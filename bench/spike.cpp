// Spike simulation (a benchmark program, not a test), after HikariCP's published spike-demand test:
// 50 simultaneous acquires against a pool with min_idle 5, max 50, 150 ms to create a connection and
// 2 ms of work per acquire. Prints how many resources were created for the spike and the wait
// percentiles. Run: build/release/bench/respool_spike [--creations N]  (N = max_concurrent_creations)
#include <respool/pool.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

struct result {
    std::uint64_t created_for_spike;
    double p50, p99, max;
};

result run(std::size_t creations, int clients, std::chrono::milliseconds connect,
           std::chrono::milliseconds work) {
    asio::io_context io;
    auto keep_running = asio::make_work_guard(io);  // run_one() must not find a stopped context
    respool::hooks<int> h;
    int next = 0;
    h.factory = [&]() -> asio::awaitable<int> {
        asio::steady_timer t(co_await asio::this_coro::executor, connect);
        co_await t.async_wait(asio::use_awaitable);
        co_return ++next;
    };
    respool::pool<int> pool(io.get_executor(), {.min = 5, .max = 50, .max_concurrent_creations = creations},
                            std::move(h));
    bool ready = false;
    pool.async_wait_ready([&](respool::error_code) { ready = true; });
    while (!ready) io.run_one();
    const auto warm = pool.stats().creations;

    std::vector<double> waits;
    int done = 0;
    const auto t0 = clock_type::now();
    for (int c = 0; c < clients; ++c) {
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                auto lease = co_await pool.async_acquire(std::chrono::seconds(30), asio::use_awaitable);
                waits.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
                asio::steady_timer t(co_await asio::this_coro::executor, work);
                co_await t.async_wait(asio::use_awaitable);
                ++done;
            },
            asio::detached);
    }
    while (done < clients) io.run_one();
    // Let creations started for the spike finish so they are counted (a cancelled or satisfied
    // demand does not abort a creation under way).
    while (pool.stats().creating > 0) io.run_one();
    std::sort(waits.begin(), waits.end());
    auto pct = [&](double q) {
        return waits[static_cast<std::size_t>(q * static_cast<double>(waits.size() - 1))];
    };
    return {pool.stats().creations - warm, pct(0.5), pct(0.99), waits.back()};
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::size_t> variants{1, 2};
    if (argc == 3 && std::strcmp(argv[1], "--creations") == 0)
        variants = {std::strtoul(argv[2], nullptr, 10)};
    std::printf("spike: 50 simultaneous acquires, min_idle 5, max 50, connect 150 ms, work 2 ms\n");
    std::printf("%-26s %14s %10s %10s %10s\n", "max_concurrent_creations", "created (total)", "p50 wait",
                "p99 wait", "max wait");
    for (std::size_t c : variants) {
        const result r = run(c, 50, 150ms, 2ms);
        std::printf("%-26zu %6llu (%2llu)    %8.1fms %8.1fms %8.1fms\n", c,
                    static_cast<unsigned long long>(r.created_for_spike),
                    static_cast<unsigned long long>(r.created_for_spike + 5), r.p50, r.p99, r.max);
    }
}
