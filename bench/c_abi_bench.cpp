// The C ABI's cost (Google Benchmark, release build): a lend and a return through respool.h, next to
// what the same lend costs through the public pool<T> when a plain C thread must wait for it. The C
// pool runs its own thread; a blocking respool_acquire of a free resource is served on the caller's
// thread without a hand-off. pool<T>'s async_acquire always completes through an executor, so a C
// caller on its own thread would wait for a cross-thread completion (the *_via_pool_t rows): that
// gap is why the C ABI sits on the low-level basic_pool instead (docs/03-design.md).
//
//   build/release/bench/respool_c_abi_bench
#include "bench_support.hpp"

#include <respool/respool.h>
#include <respool/pool.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <benchmark/benchmark.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace asio = boost::asio;

namespace {

// A C pool of one resource (min = max = 1): every iteration lends the same one.
class c_pool_fixture {
public:
    c_pool_fixture() {
        respool_hooks h{};
        h.create = [](void*, void** out) -> int {
            *out = std::malloc(16);
            return *out ? 0 : 1;
        };
        h.destroy = [](void*, void* r) { std::free(r); };
        respool_config cfg{1, 1, 0, 0};
        if (respool_create(&cfg, &h, &pool_) != RESPOOL_OK) std::abort();
    }
    ~c_pool_fixture() { respool_free(pool_); }
    c_pool_fixture(const c_pool_fixture&) = delete;
    c_pool_fixture& operator=(const c_pool_fixture&) = delete;
    respool_pool* get() const noexcept { return pool_; }

private:
    respool_pool* pool_ = nullptr;
};

void c_try_acquire_release(benchmark::State& state) {
    c_pool_fixture f;
    for (auto _ : state) {
        void* r = nullptr;
        if (respool_try_acquire(f.get(), &r) != RESPOOL_OK) std::abort();
        respool_release(f.get(), r);
    }
}
BENCHMARK(c_try_acquire_release);

void c_acquire_release(benchmark::State& state) {  // blocking acquire of a free resource
    c_pool_fixture f;
    for (auto _ : state) {
        void* r = nullptr;
        if (respool_acquire(f.get(), &r, 1000) != RESPOOL_OK) std::abort();
        respool_release(f.get(), r);
    }
}
BENCHMARK(c_acquire_release);

// The caller's thread waits for a completion on another thread, as a blocking acquire that parks does.
struct completion {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    void* r = nullptr;
    void signal(void* res) {
        std::lock_guard<std::mutex> g(m);
        r = res;
        done = true;
        cv.notify_one();
    }
    void* wait() {
        std::unique_lock<std::mutex> lk(m);
        cv.wait(lk, [this] { return done; });
        done = false;
        return r;
    }
};

void c_acquire_async_release(benchmark::State& state) {  // the callback runs on the pool's thread
    c_pool_fixture f;
    completion c;
    for (auto _ : state) {
        if (respool_acquire_async(
                f.get(), 1000, [](void* user, int, void* r) { static_cast<completion*>(user)->signal(r); },
                &c) != RESPOOL_OK)
            std::abort();
        respool_release(f.get(), c.wait());
    }
}
BENCHMARK(c_acquire_async_release);

// pool<T> as the C ABI would use it: thread_safe, its executor run by a thread of its own, the lend
// and the return from the caller's thread.
class pool_t_fixture {
public:
    pool_t_fixture()
        : pool_(io_.get_executor(), {.min = 1, .max = 1, .thread_safe = true}, bench::plain_hooks()),
          thread_([this] { io_.run(); }) {}
    ~pool_t_fixture() {
        pool_.close();
        work_.reset();
        thread_.join();
    }
    pool_t_fixture(const pool_t_fixture&) = delete;
    pool_t_fixture& operator=(const pool_t_fixture&) = delete;
    respool::pool<bench::resource>& get() noexcept { return pool_; }

private:
    asio::io_context io_{1};
    asio::executor_work_guard<asio::io_context::executor_type> work_{io_.get_executor()};
    respool::pool<bench::resource> pool_;
    std::thread thread_;
};

void try_acquire_release_via_pool_t(benchmark::State& state) {
    pool_t_fixture f;
    for (auto _ : state) {
        respool::lease<bench::resource> l = f.get().try_acquire();
        if (!l) std::abort();
    }
}
BENCHMARK(try_acquire_release_via_pool_t);

// What a blocking respool_acquire of a free resource would cost on pool<T>: async_acquire, then wait
// for its completion on the pool's thread.
void acquire_release_via_pool_t(benchmark::State& state) {
    pool_t_fixture f;
    struct slot {
        completion c;
        respool::lease<bench::resource> l;
    } s;
    for (auto _ : state) {
        f.get().async_acquire(std::chrono::seconds(1),
                              [&s](respool::error_code, respool::lease<bench::resource> l) {
                                  s.l = std::move(l);
                                  s.c.signal(nullptr);
                              });
        s.c.wait();
        if (!s.l) std::abort();
        s.l.release();
    }
}
BENCHMARK(acquire_release_via_pool_t);

}  // namespace

BENCHMARK_MAIN();
