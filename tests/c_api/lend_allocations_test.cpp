// The C ABI lends without allocating: respool_try_acquire / respool_acquire and respool_release on a
// warm pool make no heap allocation (lending flips a flag on a node that exists since its creation; the
// release finds that node through a map filled per creation, not per lend). Counted with a global
// operator new of this test binary, which librespool.so's own calls resolve to as well.
#include <respool/respool.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

namespace {
std::atomic<long> allocations{0};
}

void* operator new(std::size_t n) {
    allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}

TEST(c_abi, lending_and_returning_makes_no_heap_allocation) {
    respool_hooks h{};
    h.create = [](void*, void** out) -> int {
        *out = std::malloc(16);
        return *out ? 0 : 1;
    };
    h.destroy = [](void*, void* r) { std::free(r); };
    respool_config cfg{4, 4, 0, 0};
    respool_pool* p = nullptr;
    const long at_start = allocations.load();
    ASSERT_EQ(respool_create(&cfg, &h, &p), RESPOOL_OK);
    ASSERT_GT(allocations.load() - at_start, 0) << "the counter must see the library's own allocations";
    std::vector<void*> held(4);
    for (void*& r : held) ASSERT_EQ(respool_try_acquire(p, &r), RESPOOL_OK);  // warm: every node exists
    for (void* r : held) ASSERT_EQ(respool_release(p, r), RESPOOL_OK);

    const long before = allocations.load();
    for (int i = 0; i < 1000; ++i) {
        void *a = nullptr, *b = nullptr;
        ASSERT_EQ(respool_try_acquire(p, &a), RESPOOL_OK);
        ASSERT_EQ(respool_acquire(p, &b, 1000), RESPOOL_OK);  // free now: served without waiting
        ASSERT_EQ(respool_release(p, a), RESPOOL_OK);
        ASSERT_EQ(respool_release(p, b), RESPOOL_OK);
    }
    EXPECT_EQ(allocations.load() - before, 0) << "heap allocations in 2,000 lends and returns";
    respool_free(p);
}
