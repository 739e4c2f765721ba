// A program that uses respool the way a user's does, with its own Asio: 8 coroutines share a pool of
// 2 connections, each borrowing 25 times. Built three ways by tests/cmake_consumer/run.sh: through
// find_package on the installed tree, through FetchContent from a local path (with Asio compiled
// separately, asio_impl.cpp), and through pkg-config. Exits 0 when every borrow was served.
#include <respool/pool.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>

namespace asio = boost::asio;

struct connection {
    int id;
};

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
    return served == 200 && made <= 2 && most_in_use <= 2 ? 0 : 1;
}
