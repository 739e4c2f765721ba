// The C ABI's respool_free racing the calls that keep a freed handle alive: the last
// respool_release, a blocking respool_acquire parked in the pool, and a pending
// respool_acquire_async. respool_free may be called while resources are lent and acquires are
// under way; the handle is then deleted by whichever of them finishes last, and nothing may touch
// it afterwards. Each round starts the racing calls at the same moment on their own threads.
// Only the C API (respool.h) is used. Built and run under ThreadSanitizer and ASan+UBSan by
// scripts/test (label tsan). Bounded: RESPOOL_C_FREE_ROUNDS rounds per case (default 2000) or 20 s,
// whichever comes first.
#include <respool/respool.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <thread>
#include <vector>

namespace {

struct counters {
    std::atomic<int> created{0}, destroyed{0};
};

int create_int(void* ctx, void** out) {
    auto* c = static_cast<counters*>(ctx);
    *out = new int(++c->created);
    return 0;
}

void destroy_int(void* ctx, void* r) {
    delete static_cast<int*>(r);
    ++static_cast<counters*>(ctx)->destroyed;
}

respool_pool* make_pool(counters& c, std::uint32_t min, std::uint32_t max) {
    respool_hooks h{};
    h.ctx = &c;
    h.create = create_int;
    h.destroy = destroy_int;
    respool_config cfg{min, max, 0, 0};  // no health checks: no timer outlives the pool's thread
    respool_pool* p = nullptr;
    EXPECT_EQ(respool_create(&cfg, &h, &p), RESPOOL_OK);
    return p;
}

// Rounds to run and when to stop: the count from the environment, at most 20 s per case.
class budget {
public:
    budget() {
        const char* env = std::getenv("RESPOOL_C_FREE_ROUNDS");
        rounds_ = env ? std::atoi(env) : 2000;
    }
    bool next() {
        if (done_ >= rounds_ || std::chrono::steady_clock::now() >= until_) return false;
        ++done_;
        return true;
    }
    int done() const { return done_; }

private:
    int rounds_ = 0, done_ = 0;
    std::chrono::steady_clock::time_point until_ =
        std::chrono::steady_clock::now() + std::chrono::seconds(20);
};

// Runs every function on its own thread, all released at the same moment, and joins them.
template <class... F>
void race(F&&... fs) {
    constexpr int n = sizeof...(F);
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    auto start = [&](auto& f) {
        return std::thread([&] {
            ready.fetch_add(1);
            while (!go.load()) std::this_thread::yield();
            f();
        });
    };
    std::vector<std::thread> threads;
    (threads.push_back(start(fs)), ...);
    while (ready.load() < n) std::this_thread::yield();
    go.store(true);
    for (auto& t : threads) t.join();
}

// Bounded wait for a parked waiter: the deterministic step before the race.
bool wait_for_waiting(respool_pool* p, std::uint32_t n) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    respool_stats s{};
    while (std::chrono::steady_clock::now() < until) {
        if (respool_get_stats(p, &s) == RESPOOL_OK && s.waiting == n) return true;
        std::this_thread::yield();
    }
    return false;
}

}  // namespace

// The last lease (or the last two, on two threads) comes back while another thread frees the pool.
TEST(c_free_race, last_release_races_free) {
    budget b;
    std::deque<counters> all;  // outlive the rounds: a pool's own thread may still be finishing
    while (b.next()) {
        counters& c = all.emplace_back();
        const bool two = b.done() % 2 == 0;
        respool_pool* p = make_pool(c, 0, 2);
        ASSERT_NE(p, nullptr);
        void* r1 = nullptr;
        void* r2 = nullptr;
        ASSERT_EQ(respool_try_acquire(p, &r1), RESPOOL_OK);
        if (two) {
            ASSERT_EQ(respool_try_acquire(p, &r2), RESPOOL_OK);
        }
        int st1 = 1, st2 = RESPOOL_OK;
        if (two) {
            race([&] { st1 = respool_release(p, r1); }, [&] { st2 = respool_release_broken(p, r2); },
                 [&] { respool_free(p); });
        } else {
            race([&] { st1 = respool_release(p, r1); }, [&] { respool_free(p); });
        }
        EXPECT_EQ(st1, RESPOOL_OK);
        EXPECT_EQ(st2, RESPOOL_OK);
        EXPECT_EQ(c.created.load(), c.destroyed.load());
    }
    std::printf("%d rounds\n", b.done());
}

// A thread blocked in respool_acquire is woken (served by the release, or failed by the close)
// while the last lease comes back and the pool is freed.
TEST(c_free_race, free_races_the_last_release_and_a_parked_acquire) {
    budget b;
    std::deque<counters> all;  // outlive the rounds: a pool's own thread may still be finishing
    while (b.next()) {
        counters& c = all.emplace_back();
        respool_pool* p = make_pool(c, 1, 1);
        ASSERT_NE(p, nullptr);
        void* held = nullptr;
        ASSERT_EQ(respool_try_acquire(p, &held), RESPOOL_OK);
        int waited = 1, released = 1, rel = 1;
        std::thread waiter([&] {
            void* r = nullptr;
            waited = respool_acquire(p, &r, 0);
            if (waited == RESPOOL_OK) released = respool_release(p, r);  // then the pool is freed
        });
        ASSERT_TRUE(wait_for_waiting(p, 1));
        race([&] { rel = respool_release(p, held); }, [&] { respool_free(p); });
        waiter.join();
        EXPECT_EQ(rel, RESPOOL_OK);
        EXPECT_TRUE(waited == RESPOOL_OK || waited == RESPOOL_E_CLOSED) << waited;
        if (waited == RESPOOL_OK) {
            EXPECT_EQ(released, RESPOOL_OK);
        }
        EXPECT_EQ(c.created.load(), c.destroyed.load());
    }
    std::printf("%d rounds\n", b.done());
}

// The same with respool_acquire_async: its callback runs on the pool's own thread, which then
// frees the handle if it is the last one out.
TEST(c_free_race, free_races_the_last_release_and_a_pending_async_acquire) {
    struct async_result {
        respool_pool* p = nullptr;
        std::atomic<int> status{1};
        std::atomic<int> released{1};
        std::atomic<bool> done{false};
    };
    budget b;
    std::deque<counters> all;          // outlive the rounds: a pool's own thread may still be finishing
    std::deque<async_result> results;  // the callback still touches its own after `done`
    while (b.next()) {
        counters& c = all.emplace_back();
        respool_pool* p = make_pool(c, 1, 1);
        ASSERT_NE(p, nullptr);
        void* held = nullptr;
        ASSERT_EQ(respool_try_acquire(p, &held), RESPOOL_OK);
        async_result& a = results.emplace_back();
        a.p = p;
        ASSERT_EQ(respool_acquire_async(
                      p, 0,
                      [](void* user, int status, void* r) {
                          auto* x = static_cast<async_result*>(user);
                          x->status = status;
                          if (status == RESPOOL_OK) x->released = respool_release(x->p, r);
                          x->done = true;
                          x->done.notify_one();
                      },
                      &a),
                  RESPOOL_OK);
        ASSERT_TRUE(wait_for_waiting(p, 1));
        int rel = 1;
        race([&] { rel = respool_release(p, held); }, [&] { respool_free(p); });
        a.done.wait(false);
        EXPECT_EQ(rel, RESPOOL_OK);
        const int st = a.status.load();
        EXPECT_TRUE(st == RESPOOL_OK || st == RESPOOL_E_CLOSED) << st;
        if (st == RESPOOL_OK) {
            EXPECT_EQ(a.released.load(), RESPOOL_OK);
        }
        EXPECT_EQ(c.created.load(), c.destroyed.load());
    }
    std::printf("%d rounds\n", b.done());
}
