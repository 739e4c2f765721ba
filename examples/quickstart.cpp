// The README quickstart: a pool of "connections" shared by coroutines. Built and run by the tests.
#include <respool/pool.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <string>

namespace asio = boost::asio;
using namespace std::chrono_literals;

struct connection {  // stands in for a database connection
    int id;
    std::string query(const std::string& sql) { return "conn " + std::to_string(id) + ": " + sql; }
};

int main() {
    asio::io_context io;
    int next_id = 0;

    respool::pool<connection> pool(
        io.get_executor(), {.min = 1, .max = 4, .acquire_timeout = 2s},
        {
            .factory = [&]() -> asio::awaitable<connection> {  // connecting is I/O: a coroutine
                asio::steady_timer connect(co_await asio::this_coro::executor, 5ms);
                co_await connect.async_wait(asio::use_awaitable);
                co_return connection{++next_id};
            },
            .before_release = [](connection& c) { return c.id > 0; },  // false would destroy it
        });

    int served = 0;
    auto handler = [&](int request) -> asio::awaitable<void> {
        auto conn = co_await pool.async_acquire(asio::use_awaitable);  // waits FIFO when all 4 are busy
        std::printf("%s\n", conn->query("SELECT " + std::to_string(request)).c_str());
        asio::steady_timer work(co_await asio::this_coro::executor, 10ms);
        co_await work.async_wait(asio::use_awaitable);
        ++served;
    };  // the lease returns to the pool here

    for (int r = 0; r < 10; ++r) asio::co_spawn(io, handler(r), asio::detached);
    io.run();

    auto s = pool.stats();
    std::printf("served %d requests with %u connections (%llu had to wait)\n", served, s.total,
                static_cast<unsigned long long>(s.waits));
    return served == 10 && s.total <= 4 ? 0 : 1;
}
