// respool micro-benchmarks (Google Benchmark, release build). A benchmark, not a test: see
// docs/benchmarks.md for the figures and the command that reproduces them.
//
// Every benchmark reports allocs_per_op: heap allocations per iteration, counted by the global
// operator new below.
#include "bench_support.hpp"

#include <respool/pool.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

namespace asio = boost::asio;
using respool::error_code;
using respool::lease;
using respool::pool;

// ---- allocation counter ----------------------------------------------------------------------

static std::atomic<std::uint64_t> g_allocs{0};

void* operator new(std::size_t n) {
    g_allocs.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
    g_allocs.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete[](void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
    std::free(p);
}

namespace {

using bench::plain_hooks;
using bench::resource;

class alloc_probe {
public:
    explicit alloc_probe(benchmark::State& s) : s_(s), start_(g_allocs.load()) {}
    ~alloc_probe() {
        s_.counters["allocs_per_op"] =
            benchmark::Counter(static_cast<double>(g_allocs.load() - start_) /
                               static_cast<double>(std::max<std::int64_t>(1, s_.iterations())));
    }

private:
    benchmark::State& s_;
    std::uint64_t start_;
};

// try_acquire + release with idle resources: the fast path. Arg = pool size (all idle).
void cycle_try_acquire(benchmark::State& state) {
    asio::io_context io;
    auto keep_running = asio::make_work_guard(io);  // run_one must never find a stopped context
    const auto n = static_cast<std::size_t>(state.range(0));
    pool<resource> p(io.get_executor(), {.min = n, .max = n}, plain_hooks());
    {
        alloc_probe probe(state);
        for (auto _ : state) {
            lease<resource> l = p.try_acquire();
            benchmark::DoNotOptimize(&l.get());
            l.release();
        }
    }
    if (p.stats().acquires != static_cast<std::uint64_t>(state.iterations()))
        state.SkipWithError("lost acquires");
}
BENCHMARK(cycle_try_acquire)->Arg(1)->Arg(8)->Arg(100000);

// async_acquire with a callback when a resource is idle: decided at once, completion posted.
void cycle_async_acquire_callback(benchmark::State& state) {
    asio::io_context io;
    auto keep_running = asio::make_work_guard(io);  // run_one must never find a stopped context
    pool<resource> p(io.get_executor(), {.min = 1, .max = 1}, plain_hooks());
    alloc_probe probe(state);
    for (auto _ : state) {
        p.async_acquire([](error_code, lease<resource> l) { benchmark::DoNotOptimize(&l); });
        io.run_one();
    }
}
BENCHMARK(cycle_async_acquire_callback);

// Baselines for the hand-off: one Asio post and its execution, on the io_context directly and
// through any_io_executor (what the pool and most Asio code hold).
void post_round_trip(benchmark::State& state) {
    asio::io_context io;
    auto keep_running = asio::make_work_guard(io);  // run_one must never find a stopped context
    int x = 0;
    alloc_probe probe(state);
    for (auto _ : state) {
        asio::post(io, [&x] { ++x; });
        io.run_one();
    }
    benchmark::DoNotOptimize(x);
}
BENCHMARK(post_round_trip);

void post_round_trip_any_io_executor(benchmark::State& state) {
    asio::io_context io;
    auto keep_running = asio::make_work_guard(io);  // run_one must never find a stopped context
    asio::any_io_executor ex = io.get_executor();
    int x = 0;
    alloc_probe probe(state);
    for (auto _ : state) {
        asio::post(ex, [&x] { ++x; });
        io.run_one();
    }
    benchmark::DoNotOptimize(x);
}
BENCHMARK(post_round_trip_any_io_executor);

// Pure hand-off: K waiters are parked (untimed); the timed part releases the resource and runs the
// loop until all K were served: each handler takes the resource and releases it, which reserves the
// place for the next waiter. Nobody re-parks in the timed region. ns_per_handoff = time / K.
struct chain_handler {
    std::uint64_t* served;
    void operator()(error_code ec, lease<resource> l) const {
        if (!ec) ++*served;
        l.release();  // hands the place to the next waiter
    }
};

void handoff_release_to_waiter(benchmark::State& state) {
    asio::io_context io;
    auto keep_running = asio::make_work_guard(io);
    const auto batch = state.range(0);
    pool<resource> p(io.get_executor(), {.min = 1, .max = 1}, plain_hooks());
    std::uint64_t served = 0;
    alloc_probe probe(state);
    for (auto _ : state) {
        state.PauseTiming();
        auto held = p.try_acquire();
        for (std::int64_t i = 0; i < batch; ++i) p.async_acquire(chain_handler{&served});
        const std::uint64_t target = served + static_cast<std::uint64_t>(batch);
        state.ResumeTiming();
        held.release();
        while (served < target) io.run_one();
    }
    state.counters["ns_per_handoff"] = benchmark::Counter(
        static_cast<double>(served), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(handoff_release_to_waiter)->Arg(10)->Arg(1000)->Arg(100000)->Unit(benchmark::kMicrosecond);

// Full cycle with W parked waiters, steady state: W waiters queue on one resource; each
// iteration one of them is woken (release -> reservation -> posted resumption -> take -> handler),
// and its handler releases at once and queues again at the back. Arg = W. Three ways to queue: no
// deadline; all the same timeout (one deadline lane); each its own timeout, as per-request deadlines
// are (waiter i waits 1 h + i microseconds and keeps that timeout when it queues again).
struct cycler {
    pool<resource>* p;
    std::uint64_t* served;
    void queue() const { p->async_acquire(*this); }
    void operator()(error_code ec, lease<resource> l) const {
        if (ec) return;
        ++*served;
        l.release();  // hands the place to the next waiter
        queue();      // and queue again
    }
};

struct timed_cycler {
    pool<resource>* p;
    std::uint64_t* served;
    std::chrono::microseconds extra{0};  // 0 for all: one shared timeout
    void queue() const { p->async_acquire(std::chrono::hours(1) + extra, *this); }
    void operator()(error_code ec, lease<resource> l) const {
        if (ec) return;
        ++*served;
        l.release();
        queue();
    }
};

// The body of the three rows: `make(i)` is waiter i's cycler.
template <class Make>
void parked_cycle(benchmark::State& state, Make make) {
    asio::io_context io;
    auto keep_running = asio::make_work_guard(io);  // run_one must never find a stopped context
    const auto waiters = state.range(0);
    pool<resource> p(io.get_executor(), {.min = 1, .max = 1}, plain_hooks());
    std::uint64_t served = 0;
    auto held = p.try_acquire();
    for (std::int64_t i = 0; i < waiters; ++i) make(p, served, i).queue();
    held.release();
    for (int i = 0; i < 1000; ++i) io.run_one();  // warm the recycling allocator
    alloc_probe probe(state);
    const std::uint64_t before = served;
    for (auto _ : state) io.run_one();
    state.counters["ns_per_handoff"] = benchmark::Counter(
        static_cast<double>(served - before), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.counters["waiting"] = static_cast<double>(p.stats().waiting);
    p.close();
    keep_running.reset();
    io.run();
    benchmark::DoNotOptimize(served);
}

void cycle_with_parked_waiters(benchmark::State& state) {
    parked_cycle(state, [](pool<resource>& p, std::uint64_t& served, std::int64_t) {
        return cycler{&p, &served};
    });
}
BENCHMARK(cycle_with_parked_waiters)->Arg(1)->Arg(10)->Arg(1000)->Arg(100000);

void cycle_with_parked_waiters_with_deadlines(benchmark::State& state) {
    parked_cycle(state, [](pool<resource>& p, std::uint64_t& served, std::int64_t) {
        return timed_cycler{&p, &served};
    });
}
BENCHMARK(cycle_with_parked_waiters_with_deadlines)->Arg(10)->Arg(1000)->Arg(100000);

void cycle_with_parked_waiters_with_distinct_deadlines(benchmark::State& state) {
    parked_cycle(state, [](pool<resource>& p, std::uint64_t& served, std::int64_t i) {
        return timed_cycler{&p, &served, std::chrono::microseconds(i)};
    });
}
BENCHMARK(cycle_with_parked_waiters_with_distinct_deadlines)->Arg(10)->Arg(1000)->Arg(100000);

// Parking W waiters behind a held resource (the timed part), each with a 1 h timeout, either all the
// same or each its own (1 h + i microseconds). Closing the pool afterwards is not timed.
struct ignore_lease {
    void operator()(error_code, lease<resource>) const {}
};

void park_waiters(benchmark::State& state, bool distinct) {
    const auto waiters = state.range(0);
    std::uint64_t parked = 0, allocs = 0;
    for (auto _ : state) {
        state.PauseTiming();
        {
            asio::io_context io;
            pool<resource> p(io.get_executor(), {.min = 1, .max = 1}, plain_hooks());
            auto held = p.try_acquire();
            const std::uint64_t allocs_before = g_allocs.load();
            state.ResumeTiming();
            for (std::int64_t i = 0; i < waiters; ++i)
                p.async_acquire(std::chrono::hours(1) + std::chrono::microseconds(distinct ? i : 0),
                                ignore_lease{});
            state.PauseTiming();
            allocs += g_allocs.load() - allocs_before;
            parked += static_cast<std::uint64_t>(waiters);
            p.close();
            io.run();
        }
        state.ResumeTiming();
    }
    state.counters["ns_per_park"] = benchmark::Counter(
        static_cast<double>(parked), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.counters["allocs_per_park"] =
        static_cast<double>(allocs) / static_cast<double>(std::max<std::uint64_t>(1, parked));
}
void park_waiters_with_one_timeout(benchmark::State& state) {
    park_waiters(state, false);
}
void park_waiters_with_distinct_timeouts(benchmark::State& state) {
    park_waiters(state, true);
}
BENCHMARK(park_waiters_with_one_timeout)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(park_waiters_with_distinct_timeouts)->Arg(100000)->Unit(benchmark::kMillisecond);

// thread_safe mode: threads cycling on one shared pool of 8, with FIFO idle order (the lock) and with
// the thread-affinity cache (each thread takes back the resource it released).
pool<resource>& shared_pool(bool affinity) {
    static asio::io_context io;
    static pool<resource> fifo(io.get_executor(), {.min = 8, .max = 8, .thread_safe = true}, plain_hooks());
    static pool<resource> affine(
        io.get_executor(), {.min = 8, .max = 8, .thread_safe = true, .thread_affinity = true}, plain_hooks());
    return affinity ? affine : fifo;
}

void cycle_shared(benchmark::State& state, bool affinity) {
    auto& p = shared_pool(affinity);
    for (auto _ : state) {
        lease<resource> l = p.try_acquire();
        benchmark::DoNotOptimize(&l);
    }
}
void cycle_thread_safe(benchmark::State& state) {
    cycle_shared(state, false);
}
void cycle_thread_affinity(benchmark::State& state) {
    cycle_shared(state, true);
}
BENCHMARK(cycle_thread_safe)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(cycle_thread_affinity)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
