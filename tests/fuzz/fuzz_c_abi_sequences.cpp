// libFuzzer: any sequence of C ABI calls, in any order, keeps the pool's promises. The input is a
// program: its first bytes set the pool up (max, min, which checks fail), the rest are operations
// (try/timed/async acquire, release, release_broken, releasing what was never lent or twice, stats,
// close, the circuit). Async acquires complete on the pool's own thread, so every run crosses threads.
// Checked: a resource is never lent twice at once and never after its destruction; stats add up and
// stay within max; a bad release is refused and changes nothing; after close and free every created
// resource was destroyed exactly once (ASan sees double frees and leaks too).
#include <respool/respool.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace {

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "invariant broken: %s\n", what);
    std::abort();
}

struct world {
    std::mutex m;
    std::set<void*> live;         // created, not destroyed
    std::set<void*> lent;         // handed to the program (by any path), not yet given back
    std::vector<void*> arrived;   // async acquires completed, not yet taken by the program
    std::atomic<int> pending{0};  // async acquires whose callback has not run
    bool fail_release_check = false;
    bool fail_acquire_check = false;
};

int create(void* ctx, void** out) {
    auto& w = *static_cast<world*>(ctx);
    auto* r = new int(0);
    std::lock_guard lock(w.m);
    w.live.insert(r);
    *out = r;
    return 0;
}
void destroy(void* ctx, void* r) {
    auto& w = *static_cast<world*>(ctx);
    {
        std::lock_guard lock(w.m);
        if (w.live.erase(r) != 1) fail("destroyed a resource twice or one never created");
        if (w.lent.count(r)) fail("destroyed a resource while it was lent");
    }
    delete static_cast<int*>(r);
}
bool before_release(void* ctx, void*) {
    return !static_cast<world*>(ctx)->fail_release_check;
}
bool before_acquire(void* ctx, void*) {
    return !static_cast<world*>(ctx)->fail_acquire_check;
}

void lend(world& w, void* r) {
    std::lock_guard lock(w.m);
    if (!w.live.count(r)) fail("lent a resource that does not exist");
    if (!w.lent.insert(r).second) fail("lent a resource twice at once");
}

void on_async(void* user, int status, void* r) {
    auto& w = *static_cast<world*>(user);
    if (status == RESPOOL_OK) {
        lend(w, r);
        std::lock_guard lock(w.m);
        w.arrived.push_back(r);
    }
    --w.pending;
}

struct reader {
    const std::uint8_t* p;
    std::size_t n;
    std::uint8_t next() {
        if (n == 0) return 0;
        --n;
        return *p++;
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    reader in{data, size};
    world w;
    respool_config cfg{};
    cfg.max = 1 + in.next() % 4;
    cfg.min = in.next() % (cfg.max + 1);
    const std::uint8_t flags = in.next();
    w.fail_release_check = flags & 1;
    w.fail_acquire_check = flags & 2;
    respool_hooks hooks{};
    hooks.ctx = &w;
    hooks.create = create;
    hooks.destroy = destroy;
    if (flags & 4) hooks.before_release = before_release;
    if (flags & 8) hooks.before_acquire = before_acquire;
    respool_pool* pool = nullptr;
    if (respool_create(&cfg, &hooks, &pool) != RESPOOL_OK) fail("create refused a valid config");
    std::vector<void*> held;  // lent to the program, in its hands
    auto take_arrived = [&] {
        std::lock_guard lock(w.m);
        held.insert(held.end(), w.arrived.begin(), w.arrived.end());
        w.arrived.clear();
    };
    auto give_back = [&](void* r, bool broken) {
        {
            std::lock_guard lock(w.m);
            w.lent.erase(r);
        }
        const int st = broken ? respool_release_broken(pool, r) : respool_release(pool, r);
        if (st != RESPOOL_OK) fail("a lent resource was refused on release");
    };
    for (int ops = 0; in.n > 0 && ops < 64; ++ops) {
        take_arrived();
        const std::uint8_t op = in.next() % 9;
        const std::uint8_t arg = in.next();
        void* r = nullptr;
        switch (op) {
        case 0:
            if (respool_try_acquire(pool, &r) == RESPOOL_OK) {
                lend(w, r);
                held.push_back(r);
            }
            break;
        case 1:
            if (respool_acquire(pool, &r, 1 + arg % 3) == RESPOOL_OK) {
                lend(w, r);
                held.push_back(r);
            }
            break;
        case 2:
        case 3:
            if (!held.empty()) {
                const std::size_t i = arg % held.size();
                void* x = held[i];
                held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
                give_back(x, op == 3);
            }
            break;
        case 4: {  // a pointer the pool has not lent: refused, nothing changes
            respool_stats before{}, after{};
            respool_get_stats(pool, &before);
            int bogus = 0;
            if (respool_release(pool, &bogus) != RESPOOL_E_INVALID) fail("a bogus release was accepted");
            respool_get_stats(pool, &after);
            if (after.idle + after.active != after.total) fail("stats do not add up after a bogus release");
            break;
        }
        case 5: {
            respool_stats s{};
            if (respool_get_stats(pool, &s) != RESPOOL_OK) fail("stats refused");
            if (s.idle + s.active != s.total) fail("idle + active != total");
            if (s.total > s.max) fail("more resources than max");
            std::lock_guard lock(w.m);
            if (s.active < held.size()) fail("fewer active than the program holds");
            break;
        }
        case 6:
            ++w.pending;
            if (respool_acquire_async(pool, 1 + arg % 4, on_async, &w) != RESPOOL_OK) --w.pending;
            break;
        case 7: respool_close(pool); break;
        case 8:
            respool_set_circuit_state(pool, arg % 2 ? RESPOOL_CIRCUIT_OPEN : RESPOOL_CIRCUIT_CLOSED);
            break;
        }
    }
    respool_close(pool);
    for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5); w.pending > 0;) {
        if (std::chrono::steady_clock::now() > end) fail("an async acquire never completed after close");
        std::this_thread::yield();
    }
    take_arrived();
    for (void* r : held) give_back(r, false);
    respool_free(pool);
    // Destruction of what was idle may finish on the pool's thread: wait for it (bounded).
    for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);;) {
        {
            std::lock_guard lock(w.m);
            if (w.live.empty()) break;
        }
        if (std::chrono::steady_clock::now() > end) fail("a created resource was never destroyed");
        std::this_thread::yield();
    }
    return 0;
}
