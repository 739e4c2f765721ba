// respool::pg::pool throughput on a real server: N coroutines on one event loop, each running one
// statement after another through the pool (borrow, run, return), for a fixed time. The peer is
// pgbench -M prepared on the same server (bench/pg_compare runs both, interleaved, and reports).
//
//   respool_pg_bench --conninfo "host=... dbname=... user=... password=..." --workload lookup
//                    [--seconds 10] [--coroutines 64] [--connections 8] [--pipeline 1]
// Workloads: select1 (SELECT 1), lookup (SELECT v FROM bench_kv WHERE id = $1, ids 1..10000 at
// random; bench/pg_compare creates the table). Prints one line:
//   pg workload=lookup coroutines=64 connections=8 queries=123456 seconds=10.0 qps=12345.6
//      cpu_us_per_query=12.3 user_us_per_query=2.3 sys_us_per_query=10.0   (CPU of this process over
//      the timed window: user + system, then each)
#include "process_cpu.hpp"

#include <respool/pg/pool.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace asio = boost::asio;
namespace pg = respool::pg;
using respool::error_code;

namespace {

struct settings {
    std::string conninfo;
    std::string workload = "lookup";
    double seconds = 10;
    int coroutines = 64;
    std::size_t connections = 8;
    bool direct = false;       // one pg::connection per coroutine, no pool: the pool's share of the cost
    std::size_t pipeline = 1;  // pool_config::pipeline_depth
};

settings parse(int argc, char** argv) {
    settings s;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i], v = argv[i + 1];
        if (k == "--conninfo")
            s.conninfo = v;
        else if (k == "--workload")
            s.workload = v;
        else if (k == "--seconds")
            s.seconds = std::stod(v);
        else if (k == "--coroutines")
            s.coroutines = std::stoi(v);
        else if (k == "--pipeline")
            s.pipeline = static_cast<std::size_t>(std::stoul(v));
        else if (k == "--direct")
            s.direct = v == "1";
        else if (k == "--connections")
            s.connections = static_cast<std::size_t>(std::stoul(v));
        else {
            std::fprintf(stderr, "respool_pg_bench: unknown option %s\n", k.c_str());
            std::exit(2);
        }
    }
    if (s.conninfo.empty() || (s.workload != "select1" && s.workload != "lookup")) {
        std::fprintf(stderr,
                     "usage: respool_pg_bench --conninfo STR [--workload select1|lookup] [--seconds S] "
                     "[--coroutines N] [--connections M] [--pipeline DEPTH] [--direct 1]\n");
        std::exit(2);
    }
    return s;
}

}  // namespace

int main(int argc, char** argv) {
    const settings s = parse(argc, argv);
    asio::io_context io(1);
    pg::pool_config c;
    c.conninfo = s.conninfo;
    c.max = s.connections;
    c.min_idle = s.connections;  // all connected before the clock starts
    c.pipeline_depth = s.pipeline;
    pg::pool db(io.get_executor(), c);

    std::uint64_t queries = 0, failures = 0;
    bool running = true;
    bench::process_cpu cpu0, cpu1;
    std::chrono::steady_clock::time_point t0, t1;

    // Statements one after another on `target`: the pool (borrow, run, return) or one connection.
    auto loop = [&](auto& target, unsigned seed) -> asio::awaitable<void> {
        std::minstd_rand rng(seed);
        std::uniform_int_distribution<std::int32_t> id(1, 10000);
        while (running) {
            // (Not a conditional expression around co_await: g++ 12 destroys its temporaries twice.)
            error_code ec;
            pg::result r;
            if (s.workload == "select1")
                std::tie(ec, r) = co_await target.async_query("SELECT 1", pg::params(),
                                                              asio::as_tuple(asio::use_awaitable));
            else
                std::tie(ec, r) =
                    co_await target.async_query("SELECT v FROM bench_kv WHERE id = $1", pg::params(id(rng)),
                                                asio::as_tuple(asio::use_awaitable));
            if (!running) break;  // completions after the window do not count (close() fails the waiters)
            if (ec || r.rows() != 1)
                ++failures;
            else
                ++queries;
        }
    };
    auto worker = [&](unsigned seed) -> asio::awaitable<void> { co_await loop(db, seed); };
    // --direct 1: the same statements on `connections` plain connections, one coroutine each, connected
    // before the window opens (as the pool's are).
    std::vector<std::unique_ptr<pg::connection>> direct;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            auto [ready] = co_await db.async_wait_ready(asio::as_tuple(asio::use_awaitable));
            if (ready) {
                std::fprintf(stderr, "respool_pg_bench: %s\n", ready.message().c_str());
                std::exit(1);
            }
            for (std::size_t i = 0; s.direct && i < s.connections; ++i) {
                direct.push_back(std::make_unique<pg::connection>(io.get_executor()));
                auto [cec] = co_await direct.back()->async_connect(s.conninfo, std::chrono::seconds(10),
                                                                   asio::as_tuple(asio::use_awaitable));
                if (cec) {
                    std::fprintf(stderr, "respool_pg_bench: connect: %s\n", cec.message().c_str());
                    std::exit(1);
                }
            }
            t0 = std::chrono::steady_clock::now();
            cpu0 = bench::process_cpu::now();
            if (s.direct)
                for (std::size_t i = 0; i < s.connections; ++i)
                    asio::co_spawn(io, loop(*direct[i], static_cast<unsigned>(i) + 1), asio::detached);
            else
                for (int i = 0; i < s.coroutines; ++i)
                    asio::co_spawn(io, worker(static_cast<unsigned>(i) + 1), asio::detached);
            asio::steady_timer t(io, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::duration<double>(s.seconds)));
            co_await t.async_wait(asio::use_awaitable);
            running = false;
            t1 = std::chrono::steady_clock::now();
            cpu1 = bench::process_cpu::now();
            db.close();
        },
        asio::detached);
    io.run();
    const double secs = std::chrono::duration<double>(t1 - t0).count();
    std::printf(
        "pg workload=%s coroutines=%d connections=%zu queries=%llu failures=%llu seconds=%.2f qps=%.1f",
        s.workload.c_str(), s.coroutines, s.connections, static_cast<unsigned long long>(queries),
        static_cast<unsigned long long>(failures), secs, static_cast<double>(queries) / secs);
    bench::print_cpu_per_query(cpu0, cpu1, queries);
    std::printf("\n");
    return failures == 0 ? 0 : 1;
}
