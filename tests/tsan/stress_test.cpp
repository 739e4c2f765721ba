// thread_safe mode under contention: 4 threads run one io_context; 48 client coroutines (each on its
// own strand) acquire with timeouts, get cancelled mid-wait, poison, try_acquire, and release. Built
// and run under ThreadSanitizer by scripts/test. Checks: no resource is ever lent to two holders,
// every acquire completes exactly once, total never exceeds max, nothing leaks.
#include "../asio/test_support.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <cstdlib>
#include <future>
#include <random>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using respool::errc;
using respool::error_code;
using respool::pool;
namespace asio = boost::asio;

namespace {

struct slot_res {
    int id = 0;
    std::atomic<int>* holders = nullptr;  // per-resource holder count, must stay 0/1
};

struct outcome_counts {
    std::atomic<long> started{0}, completed{0}, ok{0}, timeouts{0}, cancelled{0}, other{0};
    std::atomic<int> double_lend{0}, over_max{0};
};

}  // namespace

// What the mix runs through besides the pool's locked paths.
enum class mix {
    release_hook,  // a before_release hook: every release takes the general path
    plain,         // plain releases: the inline path under the pool's lock while nobody waits
    affinity,      // the thread-affinity cache lends and takes back between the lock sections
    checks,        // every borrow under a validation and a coroutine before_acquire
};

// With mix::plain, takes and releases go the inline way under the pool's lock, whose contenders yield
// before they sleep; with mix::affinity, resources come and go between the pool's lock sections: the
// same mix then also races cache takes, steals and puts against waiters parking. With mix::checks,
// every borrow goes through a synchronous validation and a coroutine before_acquire that sometimes
// takes a while and sometimes says no: their verdicts race the borrowers' deadlines and cancellations
// (the core's check_done), on four threads.
void stress(mix m) {
    const bool affinity = m == mix::affinity, checks = m == mix::checks;
    constexpr int threads = 4, clients = 48, max = 4;
    const int rounds =
        std::getenv("RESPOOL_STRESS_ROUNDS") ? std::atoi(std::getenv("RESPOOL_STRESS_ROUNDS")) : 1000;
    asio::io_context io(threads);
    std::vector<std::atomic<int>> holders(16384);  // refused resources are replaced: many creations
    std::atomic<int> created{0}, destroyed{0};
    outcome_counts c;

    respool::hooks<slot_res> h;
    h.factory = [&] {
        const int id = created++;
        if (id >= 16384) throw std::runtime_error("too many creations");
        return slot_res{id, &holders[static_cast<std::size_t>(id)]};
    };
    h.destructor = [&](slot_res& r) {
        if (r.holders->load() != 0) c.double_lend++;
        destroyed++;
    };
    // A few are "broken" (a before_release hook would turn the cache and the inline release off:
    // poison them instead).
    const bool hooked_release = m == mix::release_hook || m == mix::checks;
    if (hooked_release) h.before_release = [](slot_res& r) { return r.id % 97 != 5; };
    std::atomic<long> verdicts{0};
    if (checks) {
        h.healthcheck = [&verdicts](slot_res& r) {
            verdicts++;
            return r.id % 89 != 7;
        };
        h.before_acquire = [&verdicts, &c](slot_res& r) -> asio::awaitable<bool> {
            const long n = verdicts++;
            if (r.holders->load() != 0) c.double_lend++;  // checked while someone holds it
            if (n % 3 == 0) {
                asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::microseconds(n % 400));
                co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
            }
            co_return n % 11 != 0;  // sometimes no
        };
    }

    auto p = std::make_unique<pool<slot_res>>(io.get_executor(),
                                              respool::pool_options{.min = 2,
                                                                    .max = max,
                                                                    .thread_safe = true,
                                                                    .thread_affinity = affinity,
                                                                    .health_check_on_borrow = checks,
                                                                    .validate_after = 0ms},
                                              std::move(h));

    auto client = [&](int n) -> asio::awaitable<void> {
        std::mt19937 rng(static_cast<unsigned>(n) * 7919u + 1u);
        auto ex = co_await asio::this_coro::executor;
        for (int i = 0; i < rounds; ++i) {
            c.started++;
            const int mode = static_cast<int>(rng() % 10);
            if (mode == 0) {  // try_acquire
                auto l = p->try_acquire();
                c.completed++;
                if (l) {
                    if (l->holders->fetch_add(1) != 0) c.double_lend++;
                    l->holders->fetch_sub(1);
                    c.ok++;
                }
                continue;
            }
            // Shared: a canceller handler already queued when the acquire completes still finds its
            // signal (emitting after completion is a no-op: the slot was cleared).
            auto sig = std::make_shared<asio::cancellation_signal>();
            asio::steady_timer canceller(ex);
            if (mode <= 2) {  // cancel while (maybe) waiting, emitted on this client's strand
                canceller.expires_after(std::chrono::microseconds(rng() % 300));
                canceller.async_wait([sig](error_code e) {
                    if (!e) sig->emit(asio::cancellation_type::terminal);
                });
            }
            const auto timeout = std::chrono::microseconds(200 + rng() % 2000);
            auto [ec, l] = co_await p->async_acquire(
                timeout, asio::bind_cancellation_slot(sig->slot(), asio::as_tuple(asio::use_awaitable)));
            canceller.cancel();
            c.completed++;
            if (!ec) {
                c.ok++;
                if (l->holders->fetch_add(1) != 0) c.double_lend++;
                if (p->stats().total > static_cast<std::uint32_t>(max)) c.over_max++;
                if (rng() % 3 == 0) {
                    asio::steady_timer hold(ex, std::chrono::microseconds(rng() % 200));
                    co_await hold.async_wait(asio::as_tuple(asio::use_awaitable));
                }
                l->holders->fetch_sub(1);
                if (rng() % 50 == 0 || (!hooked_release && l->id % 97 == 5)) l.poison();
            } else if (ec == errc::timeout) {
                c.timeouts++;
            } else if (ec == errc::cancelled) {
                c.cancelled++;
            } else {
                c.other++;
            }
        }
    };
    for (int n = 0; n < clients; ++n) asio::co_spawn(asio::make_strand(io), client(n), asio::detached);

    std::vector<std::thread> pool_threads;
    for (int t = 0; t < threads; ++t) pool_threads.emplace_back([&] { io.run(); });
    for (auto& t : pool_threads) t.join();

    const auto s = p->stats();
    EXPECT_EQ(c.double_lend.load(), 0) << "a resource was lent to two holders at once";
    EXPECT_EQ(c.over_max.load(), 0);
    EXPECT_EQ(c.started.load(), c.completed.load()) << "every acquire completes exactly once";
    EXPECT_EQ(c.other.load(), 0);
    EXPECT_EQ(static_cast<long>(clients) * rounds, c.started.load());
    EXPECT_GT(c.ok.load(), 0);
    EXPECT_GT(c.timeouts.load() + c.cancelled.load(), 0) << "the mix must exercise the failure paths";
    EXPECT_EQ(s.waiting, 0u);
    EXPECT_EQ(s.active, 0u) << "every lease came back";
    EXPECT_LE(s.total, static_cast<std::uint32_t>(max));
    EXPECT_EQ(static_cast<long>(s.timeouts), c.timeouts.load());
    p.reset();
    EXPECT_EQ(created.load(), destroyed.load()) << "every created resource destroyed exactly once";
    if (checks) {
        EXPECT_GT(s.rejected, 0u) << "the mix must exercise refusals";
    }
    std::printf(
        "thread_safe stress%s: %ld acquires ok, %ld timeouts, %ld cancelled, %d created, %ld checks\n",
        affinity          ? " (thread affinity)"
        : checks          ? " (borrow checks)"
        : m == mix::plain ? " (inline paths)"
                          : "",
        c.ok.load(), c.timeouts.load(), c.cancelled.load(), created.load(), verdicts.load());
}

TEST(thread_safe, four_threads_with_timeouts_and_cancellations_keep_every_invariant) {
    stress(mix::release_hook);
}

TEST(thread_safe, the_inline_take_and_release_keep_every_invariant_under_the_same_mix) {
    stress(mix::plain);
}

TEST(thread_safe, the_thread_affinity_cache_keeps_every_invariant_under_the_same_mix) {
    stress(mix::affinity);
}

TEST(thread_safe, borrow_checks_racing_deadlines_and_cancellations_keep_every_invariant) {
    stress(mix::checks);
}

// The races of the fast paths (the thread-affinity cache, or the inline take and release of a shared
// FIFO pool, whose lock's contenders yield and then sleep), on plain threads: 6 threads cycle on a
// pool of 2 (cache takes, steals, puts, parking). Phase 1: waiters have a 10 s deadline, far beyond any
// honest wait here, so a timeout means a lost wake-up (a resource left in a slot, or a contender never
// woken, while a waiter waits). Phase 2: short deadlines, and another thread opens and closes the
// circuit (every change drains the cache) and reads stats; then the pool closes. No resource may be lent
// twice, the counters must add up, and every resource must be destroyed once.
void fast_path_races(bool toggle_circuit, bool affinity) {
    constexpr int workers = 6;
    const int max = toggle_circuit ? 2 : 1;  // one resource: a lost one would stall every waiter
    const int rounds =
        std::getenv("RESPOOL_STRESS_ROUNDS") ? std::atoi(std::getenv("RESPOOL_STRESS_ROUNDS")) * 4 : 4000;
    asio::io_context io(1);
    auto work = asio::make_work_guard(io);
    std::thread runner([&] { io.run(); });
    std::vector<std::atomic<int>> holders(4096);  // by id: ids never wrap onto a live one
    std::atomic<int> created{0}, destroyed{0}, double_lend{0}, bad_stats{0};
    std::atomic<long> ok{0}, timeouts{0}, unavailable{0}, closed{0}, other{0};

    respool::hooks<slot_res> h;
    h.factory = [&] {
        const int id = created++;
        return slot_res{id, &holders[static_cast<std::size_t>(id % 4096)]};
    };
    h.destructor = [&](slot_res&) { destroyed++; };
    auto p = std::make_unique<pool<slot_res>>(
        io.get_executor(),
        respool::pool_options{
            .min = 0, .max = static_cast<std::size_t>(max), .thread_safe = true, .thread_affinity = affinity},
        std::move(h));

    std::atomic<bool> stop_toggling{false};
    std::thread toggler([&] {
        std::mt19937 rng(7);
        while (toggle_circuit && !stop_toggling.load()) {
            if (rng() % 4 == 0)
                p->deactivate();
            else
                p->activate();
            const auto s = p->stats();
            if (s.idle + s.active != s.total || s.total > static_cast<std::uint32_t>(max)) bad_stats++;
            std::this_thread::yield();
        }
        p->activate();
    });
    std::vector<std::thread> ts;
    for (int w = 0; w < workers; ++w)
        ts.emplace_back([&, w] {
            std::mt19937 rng(static_cast<unsigned>(w) + 11u);
            for (int i = 0; i < rounds; ++i) {
                respool::lease<slot_res> l;
                error_code ec;
                if (rng() % 2 == 0) {
                    l = p->try_acquire();
                    if (!l) continue;
                } else {
                    std::promise<std::pair<error_code, respool::lease<slot_res>>> done;
                    p->async_acquire(toggle_circuit ? std::chrono::microseconds(50 + rng() % 500)
                                                    : std::chrono::microseconds(10'000'000),
                                     [&done](error_code e, respool::lease<slot_res> got) {
                                         done.set_value({e, std::move(got)});
                                     });
                    std::tie(ec, l) = done.get_future().get();
                }
                if (ec == errc::timeout)
                    timeouts++;
                else if (ec == errc::unavailable)
                    unavailable++;
                else if (ec == errc::closed)
                    closed++;
                else if (ec)
                    other++;
                if (!l) continue;
                ok++;
                if (l->holders->fetch_add(1) != 0) double_lend++;
                if (rng() % 8 == 0) std::this_thread::yield();
                l->holders->fetch_sub(1);
                if (rng() % 200 == 0) l.poison();
            }
        });
    for (auto& t : ts) t.join();
    stop_toggling = true;
    toggler.join();

    const auto s = p->stats();
    EXPECT_EQ(double_lend.load(), 0) << "a resource was lent to two holders at once";
    EXPECT_EQ(bad_stats.load(), 0) << "idle + active == total <= max at every snapshot";
    EXPECT_EQ(other.load(), 0);
    EXPECT_GT(ok.load(), 0);
    if (!toggle_circuit) {
        EXPECT_EQ(timeouts.load(), 0) << "a waiter was left waiting while a resource was free";
    }
    EXPECT_EQ(s.active, 0u) << "every lease came back, none is stuck in the cache as active";
    EXPECT_EQ(s.waiting, 0u);
    EXPECT_GE(s.acquires, static_cast<std::uint64_t>(ok.load())) << "cache takes are counted";
    p->close();
    EXPECT_EQ(p->stats().total, 0u) << "close drains the cache";
    EXPECT_EQ(created.load(), destroyed.load());
    p.reset();
    work.reset();
    runner.join();
    std::printf("%s races%s: %ld ok, %ld timeouts, %ld unavailable, %d created\n",
                affinity ? "affinity cache" : "shared FIFO pool", toggle_circuit ? " (circuit toggling)" : "",
                ok.load(), timeouts.load(), unavailable.load(), created.load());
}

TEST(thread_safe, affinity_cache_never_leaves_a_waiter_waiting_beside_a_cached_resource) {
    fast_path_races(false, true);
}

TEST(thread_safe, affinity_cache_races_with_circuit_changes_stats_and_close) {
    fast_path_races(true, true);
}

TEST(thread_safe, shared_fifo_pool_never_leaves_a_waiter_waiting_beside_a_returned_resource) {
    fast_path_races(false, false);
}

TEST(thread_safe, shared_fifo_pool_races_with_circuit_changes_stats_and_close) {
    fast_path_races(true, false);
}
