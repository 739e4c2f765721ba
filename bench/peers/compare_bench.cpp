// The C++ side of bench/compare: respool (a shared thread_safe pool with FIFO idle order, the same with
// the thread-affinity cache, and one pool per thread), the naive pool a C++ developer would otherwise
// hand-roll, and the floors of any shared FIFO order (fifo_floor.hpp), on the workloads of the Java peer
// harness, measured the same way (threads cycle for a fixed time after a warm-up; median of reps).
//
//   respool_compare <seconds> <reps> [variant...]   prints: cycle <variant> <threads> <pool> <median ops/s>
// With variant names, only those run (e.g. respool_compare 0.5 5 respool-shared naive-cpp).
#include "asio/pool_lock.hpp"  // the pool's own lock, for the floor under it
#include "fifo_floor.hpp"
#include "naive_pool.hpp"

#include "../bench_support.hpp"

#include <respool/pool.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

namespace asio = boost::asio;

namespace {

using bench::plain_hooks;
using bench::resource;

// Ops/s of `threads` threads running `cycle(thread_index)` for `seconds`, after a warm-up.
double measure(int threads, double seconds, const std::function<void(int)>& cycle) {
    std::atomic<bool> stop{false};
    std::atomic<long long> ops{0};
    std::barrier start(threads + 1);
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
        ts.emplace_back([&, t] {
            start.arrive_and_wait();
            long long n = 0;
            while (!stop.load(std::memory_order_relaxed)) {
                for (int i = 0; i < 256; ++i) cycle(t);
                n += 256;
            }
            ops += n;
        });
    start.arrive_and_wait();
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    stop = true;
    for (auto& t : ts) t.join();
    return static_cast<double>(ops.load()) /
           std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct variant {
    const char* name;
    std::function<void(int)> cycle;
    std::vector<double> runs;
};

// Medians of `reps` runs per variant, taken round-robin (variant A, B, C, A, B, C, ...) after one
// warm-up run each: on a shared machine, load that comes and goes hits every variant alike.
void measure_interleaved(std::vector<variant>& vs, int reps, double seconds, int threads) {
    for (auto& v : vs) measure(threads, seconds, v.cycle);  // warm-up
    for (int i = 0; i < reps; ++i)
        for (auto& v : vs) v.runs.push_back(measure(threads, seconds, v.cycle));
    for (auto& v : vs) std::sort(v.runs.begin(), v.runs.end());
}

}  // namespace

int main(int argc, char** argv) {
    const double seconds = argc > 1 ? std::atof(argv[1]) : 0.5;
    const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
    const int workloads[][2] = {{1, 32}, {2, 32}, {8, 32}, {8, 4}};
    for (const auto& w : workloads) {
        const int threads = w[0];
        const auto size = static_cast<std::size_t>(w[1]);
        std::vector<variant> vs;

        // One thread_safe pool shared by every thread, with the default FIFO idle order and with the
        // thread-affinity cache; a thread that finds nothing free waits on the pool's executor (run by
        // one extra thread) through a future.
        asio::io_context io;
        auto guard = asio::make_work_guard(io);
        std::thread runner([&] { io.run(); });
        respool::pool<resource> shared(io.get_executor(), {.min = size, .max = size, .thread_safe = true},
                                       plain_hooks());
        respool::pool<resource> affine(
            io.get_executor(), {.min = size, .max = size, .thread_safe = true, .thread_affinity = true},
            plain_hooks());
        auto shared_cycle = [](respool::pool<resource>& p) {
            return [&p](int) {
                respool::lease<resource> l = p.try_acquire();
                if (!l) l = p.async_acquire(asio::use_future).get();
            };
        };
        vs.push_back({"respool-shared", shared_cycle(shared), {}});
        vs.push_back({"respool-shared-affinity", shared_cycle(affine), {}});

        // One pool per thread (each bound to its own executor: no locks).
        std::vector<std::unique_ptr<asio::io_context>> ios;
        std::vector<std::unique_ptr<respool::pool<resource>>> pools;
        for (int t = 0; t < threads; ++t) {
            ios.push_back(std::make_unique<asio::io_context>(1));
            pools.push_back(std::make_unique<respool::pool<resource>>(
                ios.back()->get_executor(), respool::pool_options{.min = size, .max = size}, plain_hooks()));
        }
        vs.push_back({"respool-per-thread",
                      [&](int t) {
                          respool::lease<resource> l = pools[static_cast<std::size_t>(t)]->try_acquire();
                          if (!l) std::abort();  // a pool per thread never runs dry with one lease at a time
                      },
                      {}});

        naive_pool<resource> naive(size, [] { return resource{1}; });
        vs.push_back({"naive-cpp", [&](int) { naive.release(naive.acquire()); }, {}});

        // The floors of one shared FIFO order (fifo_floor.hpp): take the oldest, put it back.
        std::vector<resource> items(size, resource{1});
        bench::lockfree_fifo<resource> lockfree(size);
        bench::locked_fifo<resource> locked(size);
        bench::locked_fifo<resource, respool::detail::pool_lock> pool_locked(size);
        for (auto& r : items) {
            (void)lockfree.push(&r);
            locked.push(&r);
            pool_locked.push(&r);
        }
        vs.push_back({"fifo-floor-lockfree",
                      [&](int) {
                          resource* r;
                          // All lent (pool < threads); then, the slot a take of a lap ago still finishes.
                          while (!(r = lockfree.pop())) std::this_thread::yield();
                          while (!lockfree.push(r)) std::this_thread::yield();
                      },
                      {}});
        vs.push_back({"fifo-floor-mutex",
                      [&](int) {
                          resource* r;
                          while (!(r = locked.pop())) std::this_thread::yield();
                          locked.push(r);
                      },
                      {}});
        vs.push_back({"fifo-floor-pool-lock",
                      [&](int) {
                          resource* r;
                          while (!(r = pool_locked.pop())) std::this_thread::yield();
                          pool_locked.push(r);
                      },
                      {}});

        if (argc > 3)
            std::erase_if(vs, [&](const variant& v) {
                return std::none_of(argv + 3, argv + argc,
                                    [&](const char* a) { return std::string_view(a) == v.name; });
            });
        measure_interleaved(vs, reps, seconds, threads);
        // A floor that lost a resource measured something else than the order: count them back.
        const char* lost = nullptr;
        auto holds_all = [size](auto& fifo) {
            std::size_t n = 0;
            while (fifo.pop()) ++n;
            return n == size;
        };
        if (!holds_all(lockfree)) lost = "fifo-floor-lockfree";
        if (!holds_all(locked)) lost = "fifo-floor-mutex";
        if (!holds_all(pool_locked)) lost = "fifo-floor-pool-lock";
        if (lost)
            std::fprintf(stderr, "respool_compare: %s lost resources (%d threads, pool %zu)\n", lost, threads,
                         size);
        else
            for (const auto& v : vs)
                std::printf("cycle %s %d %zu %.0f\n", v.name, threads, size, v.runs[v.runs.size() / 2]);
        std::fflush(stdout);
        shared.close();
        affine.close();
        guard.reset();
        runner.join();
        if (lost) return 1;
    }
}
