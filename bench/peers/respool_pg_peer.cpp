// respool::pg::pool as a peer of bench/compare's real-database table (bench/peers/PROTOCOL.md): started
// once, it answers `run WORKLOAD CLIENTS SECONDS` lines with `result ...` lines, so that the harness can
// rotate it with HikariCP, pgxpool, asyncpg and node-postgres and read its CPU time from /proc.
//
//   respool_pg_peer --pool 8 [--variant one-thread|per-thread|shared] [--threads 2] [--pipeline 1]
//                   [--statements cache|unnamed] [--reset tracked|always|none]
//
// The server comes from libpq's environment (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE): the
// pool's conninfo is empty and libpq fills it in, as for every other peer. Variants:
//   one-thread  one pool of --pool connections on one event loop (the library's first use);
//   per-thread  --threads event loops, each with a pool of --pool / threads connections and its share of
//               the clients (a service that runs one loop per core, like `respool serve --threads`);
//   shared      one pool_config::thread_safe pool of --pool connections used by coroutines running on
//               --threads threads of one io_context.
// --pipeline: pool_config::pipeline_depth (1, the default: a lease per statement).
// --statements: pool_config::statements (cache, the default; unnamed behind PgBouncer in transaction mode).
// --reset: pool_config::reset (tracked, the default: what the session check at every return costs is
// the difference to none).
#include <respool/pg/pool.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
namespace pg = respool::pg;
using respool::error_code;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr auto tuple_awaitable = asio::as_tuple(asio::deferred);

struct settings {
    std::size_t pool = 8;
    std::string variant = "one-thread";
    std::size_t threads = 2;
    std::size_t pipeline = 1;
    bool unnamed = false;
    pg::reset_policy reset = pg::reset_policy::tracked;
};

[[noreturn]] void usage(const std::string& why) {
    std::fprintf(
        stderr,
        "respool_pg_peer: %s\nusage: respool_pg_peer --pool N [--variant one-thread|per-thread|shared] "
        "[--threads T] [--pipeline DEPTH] [--statements cache|unnamed] [--reset tracked|always|none]\n",
        why.c_str());
    std::exit(2);
}

std::size_t positive(const std::string& flag, const std::string& v) {
    char* end = nullptr;
    const unsigned long n = std::strtoul(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n == 0 || n > 4096)
        usage(flag + " wants a positive integer, got '" + v + "'");
    return n;
}

settings parse(int argc, char** argv) {
    settings s;
    for (int i = 1; i < argc; i += 2) {
        const std::string k = argv[i];
        if (i + 1 >= argc) usage(k + " wants a value");
        const std::string v = argv[i + 1];
        if (k == "--pool")
            s.pool = positive(k, v);
        else if (k == "--variant")
            s.variant = v;
        else if (k == "--threads")
            s.threads = positive(k, v);
        else if (k == "--pipeline")
            s.pipeline = positive(k, v);
        else if (k == "--statements" && (v == "cache" || v == "unnamed"))
            s.unnamed = v == "unnamed";
        else if (k == "--statements")
            usage("--statements is cache or unnamed; got '" + v + "'");
        else if (k == "--reset" && v == "tracked")
            s.reset = pg::reset_policy::tracked;
        else if (k == "--reset" && v == "always")
            s.reset = pg::reset_policy::always;
        else if (k == "--reset" && v == "none")
            s.reset = pg::reset_policy::none;
        else if (k == "--reset")
            usage("--reset is tracked, always or none; got '" + v + "'");
        else
            usage("unknown option " + k);
    }
    if (s.variant != "one-thread" && s.variant != "per-thread" && s.variant != "shared")
        usage("--variant is one of one-thread, per-thread, shared; got '" + s.variant + "'");
    if (s.variant == "one-thread") s.threads = 1;
    if (s.variant == "per-thread" && s.pool < s.threads) usage("--pool must be at least --threads");
    return s;
}

// What one run gathers from its clients (they may run on several threads).
struct tally {
    std::mutex m;
    std::vector<std::uint32_t> latencies_us;
    std::uint64_t errors = 0;
    std::size_t running = 0;
    std::promise<void> all_done;

    void add(std::vector<std::uint32_t>& mine, std::uint64_t failed) {
        std::lock_guard g(m);
        latencies_us.insert(latencies_us.end(), mine.begin(), mine.end());
        errors += failed;
        if (--running == 0) all_done.set_value();
    }
};

enum class workload { select1, lookup, txn };

// One query of the workload through the pool; false when it failed.
asio::awaitable<bool> one_query(pg::pool& db, workload w, std::int32_t id) {
    switch (w) {
    case workload::select1: {
        auto [ec, r] = co_await db.async_query("SELECT 1", pg::params(), tuple_awaitable);
        co_return !ec && r.rows() == 1 && r.get<std::int32_t>(0, 0) == 1;
    }
    case workload::lookup: {
        auto [ec, r] =
            co_await db.async_query("SELECT v FROM bench_kv WHERE id = $1", pg::params(id), tuple_awaitable);
        co_return !ec && r.rows() == 1 && !r.get<std::string>(0, 0).empty();
    }
    case workload::txn: {
        auto [ex, ok] = co_await db.transaction(
            [id](pg::connection& c) -> asio::awaitable<bool> {
                co_await c.async_query("UPDATE bench_kv SET n = n + 1 WHERE id = $1", pg::params(id),
                                       asio::deferred);
                pg::result r = co_await c.async_query("SELECT v, n FROM bench_kv WHERE id = $1",
                                                      pg::params(id), asio::deferred);
                co_return r.rows() == 1 && r.get<std::int64_t>(0, 1) > 0 && !r.get<std::string>(0, 0).empty();
            },
            {}, tuple_awaitable);
        co_return !ex && ok;
    }
    }
    co_return false;
}

asio::awaitable<void> client(pg::pool& db, workload w, clock_type::time_point deadline, unsigned seed,
                             tally& t) {
    std::minstd_rand rng(seed);
    std::uniform_int_distribution<std::int32_t> ids(1, 10000);
    std::vector<std::uint32_t> mine;
    mine.reserve(1 << 16);
    std::uint64_t failed = 0;
    while (clock_type::now() < deadline) {
        const auto start = clock_type::now();
        const bool ok = co_await one_query(db, w, ids(rng));
        const auto us =
            std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - start).count();
        if (ok)
            mine.push_back(static_cast<std::uint32_t>(us));
        else
            ++failed;
    }
    t.add(mine, failed);
}

// The event loops and pools of a variant, alive from startup to `quit`.
class peer {
public:
    explicit peer(const settings& s) : s_(s) {
        const std::size_t loops = s.variant == "shared" ? 1 : s.threads;
        for (std::size_t i = 0; i < loops; ++i) {
            auto io =
                std::make_unique<asio::io_context>(s.variant == "shared" ? static_cast<int>(s.threads) : 1);
            pg::pool_config c;  // conninfo empty: libpq reads PGHOST, PGPORT, ... itself
            c.max =
                s.variant == "per-thread" ? s.pool / s.threads + (i < s.pool % s.threads ? 1 : 0) : s.pool;
            c.pipeline_depth = s.pipeline;
            if (s.unnamed) c.statements = pg::statement_mode::unnamed;
            c.reset = s.reset;
            c.thread_safe = s.variant == "shared";
            // A thread_safe pool runs its own work on a strand; its clients run on every thread.
            asio::any_io_executor ex = io->get_executor();
            if (c.thread_safe) ex = asio::make_strand(*io);
            pools_.push_back(std::make_unique<pg::pool>(ex, c));
            guards_.emplace_back(io->get_executor());
            ios_.push_back(std::move(io));
        }
        for (auto& io : ios_) {
            const std::size_t per_loop = s.variant == "shared" ? s.threads : 1;
            for (std::size_t k = 0; k < per_loop; ++k) threads_.emplace_back([&io] { io->run(); });
        }
    }

    ~peer() {
        for (std::size_t i = 0; i < ios_.size(); ++i) {
            std::promise<void> closed;
            asio::co_spawn(
                pools_[i]->get_executor(),
                [&, i]() -> asio::awaitable<void> {
                    co_await pools_[i]->async_close(std::chrono::seconds(5), tuple_awaitable);
                    closed.set_value();
                },
                asio::detached);
            closed.get_future().wait();
        }
        guards_.clear();
        for (auto& io : ios_) io->stop();
        for (auto& th : threads_) th.join();
        pools_.clear();
    }

    // `clients` coroutines spread over the loops (per-thread: client k on loop k % loops).
    std::string run(workload w, std::size_t clients, double seconds) {
        tally t;
        t.running = clients;
        auto done = t.all_done.get_future();
        const auto start = clock_type::now();
        const auto deadline =
            start + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
        for (std::size_t k = 0; k < clients; ++k) {
            const std::size_t i = k % pools_.size();
            asio::co_spawn(*ios_[i], client(*pools_[i], w, deadline, static_cast<unsigned>(k) + 1, t),
                           asio::detached);
        }
        done.wait();
        const double elapsed = std::chrono::duration<double>(clock_type::now() - start).count();
        std::sort(t.latencies_us.begin(), t.latencies_us.end());
        auto pct = [&](double p) -> std::uint32_t {
            if (t.latencies_us.empty()) return 0;
            return t.latencies_us[std::min(
                t.latencies_us.size() - 1,
                static_cast<std::size_t>(p * static_cast<double>(t.latencies_us.size())))];
        };
        std::ostringstream out;
        out << "result queries=" << t.latencies_us.size() << " seconds=" << elapsed << " p50_us=" << pct(0.50)
            << " p99_us=" << pct(0.99) << " errors=" << t.errors;
        return out.str();
    }

private:
    settings s_;
    std::vector<std::unique_ptr<asio::io_context>> ios_;
    std::vector<std::unique_ptr<pg::pool>> pools_;
    std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
    std::vector<std::thread> threads_;
};

}  // namespace

int main(int argc, char** argv) {
    const settings s = parse(argc, argv);
    std::ios::sync_with_stdio(false);
    try {
        peer p(s);
        std::cout << "ready" << std::endl;
        std::string line;
        while (std::getline(std::cin, line)) {
            std::istringstream in(line);
            std::string cmd, name;
            std::size_t clients = 0;
            double seconds = 0;
            in >> cmd;
            if (cmd == "quit") break;
            if (cmd != "run" || !(in >> name >> clients >> seconds) || clients == 0 || seconds <= 0) {
                std::cerr << "respool_pg_peer: not a command: '" << line << "'\n";
                return 2;
            }
            workload w;
            if (name == "select1")
                w = workload::select1;
            else if (name == "lookup")
                w = workload::lookup;
            else if (name == "txn")
                w = workload::txn;
            else {
                std::cerr << "respool_pg_peer: unknown workload '" << name << "'\n";
                return 2;
            }
            std::cout << p.run(w, clients, seconds) << std::endl;
        }
    } catch (const std::exception& e) {
        std::cerr << "respool_pg_peer: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
