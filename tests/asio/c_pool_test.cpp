// A pool created through the C ABI, used from C++ through respool::c_pool.
#include <respool/c_pool.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <gtest/gtest.h>

#include <atomic>

namespace asio = boost::asio;
using respool::c_lease;
using respool::errc;
using respool::error_code;

namespace {
struct counters {
    std::atomic<int> created{0}, destroyed{0};
};

respool_pool* make_c_pool(counters& c, std::uint32_t min, std::uint32_t max) {
    respool_hooks h{};
    h.ctx = &c;
    h.create = [](void* ctx, void** out) -> int {
        auto* k = static_cast<counters*>(ctx);
        *out = new int(++k->created);
        return 0;
    };
    h.destroy = [](void* ctx, void* r) {
        ++static_cast<counters*>(ctx)->destroyed;
        delete static_cast<int*>(r);
    };
    respool_config cfg{min, max, 0, 0};
    respool_pool* p = nullptr;
    EXPECT_EQ(respool_create(&cfg, &h, &p), RESPOOL_OK);
    return p;
}
}  // namespace

TEST(c_pool, coroutines_acquire_from_a_pool_created_in_c) {
    asio::io_context io;
    counters c;
    {
        respool::c_pool pool(io.get_executor(), make_c_pool(c, 1, 1), respool::c_pool::adopt);
        std::vector<int> ids;
        auto worker = [&]() -> asio::awaitable<void> {
            for (int i = 0; i < 3; ++i) {
                c_lease l = co_await pool.async_acquire(std::chrono::seconds(5), asio::use_awaitable);
                ids.push_back(*l.as<int>());
            }
        };
        asio::co_spawn(io, worker(), asio::detached);
        asio::co_spawn(io, worker(), asio::detached);
        io.run();
        EXPECT_EQ(ids, (std::vector<int>{1, 1, 1, 1, 1, 1}));
        EXPECT_EQ(pool.stats().acquires, 6u);

        error_code ec;
        c_lease held = pool.try_acquire(ec);
        ASSERT_FALSE(ec);
        error_code timed_out;
        pool.async_acquire(std::chrono::milliseconds(5), [&](error_code e, c_lease) { timed_out = e; });
        io.restart();
        io.run();
        EXPECT_EQ(timed_out, errc::timeout);
        held.poison();
        EXPECT_EQ(c.destroyed, 1);
        pool.close();
        error_code closed;
        pool.async_acquire([&](error_code e, c_lease) { closed = e; });
        io.restart();
        io.run();
        EXPECT_EQ(closed, errc::closed);
    }
    EXPECT_EQ(c.created, c.destroyed);
}
