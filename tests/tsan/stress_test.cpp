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
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <cstdlib>
#include <random>
#include <thread>
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

TEST(thread_safe, four_threads_with_timeouts_and_cancellations_keep_every_invariant) {
    constexpr int threads = 4, clients = 48, max = 4;
    const int rounds = std::getenv("RESPOOL_STRESS_ROUNDS") ? std::atoi(std::getenv("RESPOOL_STRESS_ROUNDS")) : 1000;
    asio::io_context io(threads);
    std::vector<std::atomic<int>> holders(1024);
    std::atomic<int> created{0}, destroyed{0};
    outcome_counts c;

    respool::hooks<slot_res> h;
    h.factory = [&] {
        const int id = created++;
        if (id >= 1024) throw std::runtime_error("too many creations");
        return slot_res{id, &holders[static_cast<std::size_t>(id)]};
    };
    h.destructor = [&](slot_res& r) {
        if (r.holders->load() != 0) c.double_lend++;
        destroyed++;
    };
    h.before_release = [](slot_res& r) { return r.id % 97 != 5; };  // a few are "broken"

    auto p = std::make_unique<pool<slot_res>>(
        io.get_executor(), respool::pool_options{.min = 2, .max = max, .thread_safe = true}, std::move(h));

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
                if (rng() % 50 == 0) l.poison();
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
    std::printf("thread_safe stress: %ld acquires ok, %ld timeouts, %ld cancelled, %d created\n", c.ok.load(),
                c.timeouts.load(), c.cancelled.load(), created.load());
}
