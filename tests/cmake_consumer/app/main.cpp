// A program that uses respool the way a user's does, with its own Asio: 8 coroutines share a pool of
// 2 connections, each borrowing 25 times. Built three ways by tests/cmake_consumer/run.sh: through
// find_package on the installed tree, through FetchContent from a local path (with Asio compiled
// separately, asio_impl.cpp), and through pkg-config. Exits 0 when every borrow was served, and a
// basic_pool (the low-level pool under the C ABI) lent and took back its one node.
#include <respool/basic_pool.hpp>
#include <respool/pool.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <memory>

namespace asio = boost::asio;

struct connection {
    int id;
};

struct raw_node final : respool::basic_node {};
class raw_hooks final : public respool::basic_hooks {
public:
    explicit raw_hooks(int& destroyed) : destroyed_(destroyed) {}
    bool has(respool::basic_check) const noexcept override { return false; }
    respool::basic_node* create(respool::error_code&) noexcept override { return new raw_node; }
    bool check(respool::basic_check, respool::basic_node&) noexcept override { return true; }
    bool destroy(respool::basic_node* n) noexcept override {
        delete static_cast<raw_node*>(n);
        ++destroyed_;
        return true;
    }

private:
    int& destroyed_;
};

// One node lent and returned; true when it was destroyed once, with the pool.
bool basic_pool_round_trip(asio::io_context& io) {
    int destroyed = 0;
    {
        respool::basic_pool pool(io.get_executor(), {.min = 1, .max = 1},
                                 std::make_unique<raw_hooks>(destroyed));
        respool::error_code ec;
        respool::basic_node* n = pool.try_acquire(ec);
        if (!n) return false;
        pool.release(n, false);
    }
    return destroyed == 1;
}

int main() {
    asio::io_context io;
    int made = 0, served = 0, in_use = 0, most_in_use = 0;
    respool::hooks<connection> hooks;
    hooks.factory = [&]() -> asio::awaitable<connection> {  // a coroutine connect
        asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(1));
        co_await t.async_wait(asio::use_awaitable);
        co_return connection{++made};
    };
    respool::pool<connection> pool(io.get_executor(), {.min = 1, .max = 2}, std::move(hooks));
    for (int client = 0; client < 8; ++client)
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                for (int i = 0; i < 25; ++i) {
                    auto lease = co_await pool.async_acquire(std::chrono::seconds(5), asio::use_awaitable);
                    if (++in_use > most_in_use) most_in_use = in_use;
                    asio::steady_timer work(co_await asio::this_coro::executor,
                                            std::chrono::microseconds(100));
                    co_await work.async_wait(asio::use_awaitable);
                    --in_use;
                    ++served;
                }
            },
            asio::detached);
    io.run();
    std::printf("respool %s: %d borrows served by %d connections (at most %d at once)\n",
                RESPOOL_VERSION_STRING, served, made, most_in_use);
    const bool basic = basic_pool_round_trip(io);
    return served == 200 && made <= 2 && most_in_use <= 2 && basic ? 0 : 1;
}
