// respool::http as a user gets it from the installed package: a request-scoped borrow from a pool, the
// error response of an exhausted pool, and the pool's metrics text. Exits 0 when all three are right.
#include <respool/http/metrics.hpp>
#include <respool/http/request_lease.hpp>
#include <respool/pool.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdio>
#include <string>

namespace asio = boost::asio;

int main() {
    asio::io_context io;
    respool::pool_options o;
    o.max = 1;
    respool::hooks<int> h;
    h.factory = [] { return 1; };
    respool::pool<int> p(io.get_executor(), o, std::move(h));
    unsigned first = 0, second = 0;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
            auto held = co_await respool::http::borrow(p, deadline);
            first = held ? 200 : 0;
            auto none = co_await respool::http::borrow(p, deadline);
            second = none ? 200 : none.error_response(11, true).result_int();
        },
        asio::detached);
    io.run();
    std::string text;
    respool::http::write_pool_metrics(text, {{{{"pool", "app"}}, p.stats()}});
    const bool metrics_ok = text.find("respool_pool_acquires_total{pool=\"app\"} 1\n") != std::string::npos;
    std::printf("http_app: %u %u %s\n", first, second, metrics_ok ? "metrics" : "no metrics");
    return first == 200 && second == 503 && metrics_ok ? 0 : 1;
}
