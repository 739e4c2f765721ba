// respool::sqlite::pool next to the limit: the same statements on one raw sqlite3* in a loop. Point
// reads (SELECT v FROM kv WHERE id = ?) and single-row upserts (INSERT ... ON CONFLICT DO UPDATE), each
// in autocommit, through the pool at 1, 8 and 64 coroutines on one event loop; and the cost of one hop
// to the pool's thread pool and back (connection::async_run of an empty function, one coroutine).
// A table of operations per second and ratios to the raw loop; docs/benchmarks.md has the figures.
//
//   respool_sqlite_bench [--seconds 3] [--readers 4] [--threads N] [--only CASE --coroutines N]
// --only runs one case (for perf stat / perf record): read or upsert through the pool at N coroutines
// (0: the raw loop); hop; raw-2 (the raw read loop on two threads at once: what parallel readers can
// give on this machine); raw-tx (raw reads, 8 to a read transaction: what batching them can give).
// The database lives in a temporary folder (WAL, synchronous=NORMAL, as the pool opens it), removed
// at the end.
#include <respool/sqlite/pool.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

namespace asio = boost::asio;
namespace sqlite = respool::sqlite;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr int rows = 10000;
const char* const read_sql = "SELECT v FROM kv WHERE id = ?";
const char* const upsert_sql =
    "INSERT INTO kv(id, v) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET v = excluded.v";

void check(int rc, sqlite3* db, const char* what) {
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW)
        throw std::runtime_error(std::string(what) + ": " + sqlite3_errmsg(db));
}

void create(const std::string& path) {
    sqlite3* db = nullptr;
    check(sqlite3_open(path.c_str(), &db), db, "open");
    check(sqlite3_exec(
              db,
              "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; CREATE TABLE kv (id INTEGER PRIMARY "
              "KEY, v TEXT NOT NULL); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
              "WHERE i < 10000) INSERT INTO kv SELECT i, hex(randomblob(16)) FROM n;",
              nullptr, nullptr, nullptr),
          db, "create");
    sqlite3_close(db);
}

// The limit: one connection, one prepared statement, a loop on this thread.
double raw_loop(const std::string& path, bool upsert, double seconds) {
    sqlite3* db = nullptr;
    check(sqlite3_open(path.c_str(), &db), db, "open");
    check(sqlite3_exec(db, "PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=5000", nullptr, nullptr, nullptr),
          db, "pragmas");
    sqlite3_stmt* st = nullptr;
    check(sqlite3_prepare_v2(db, upsert ? upsert_sql : read_sql, -1, &st, nullptr), db, "prepare");
    std::minstd_rand rng(7);
    std::uniform_int_distribution<int> id(1, rows);
    std::uint64_t n = 0;
    const auto end = clock_type::now() +
                     std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
    const auto t0 = clock_type::now();
    while ((n & 255) != 0 || clock_type::now() < end) {
        sqlite3_bind_int(st, 1, id(rng));
        if (upsert) sqlite3_bind_text(st, 2, "0123456789abcdef0123456789abcdef", 32, SQLITE_STATIC);
        const int rc = sqlite3_step(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) check(rc, db, "step");
        sqlite3_reset(st);
        ++n;
    }
    const double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    sqlite3_finalize(st);
    sqlite3_close(db);
    return static_cast<double>(n) / secs;
}

// Through the pool: `coroutines` loops of async_query on one event loop.
std::size_t threads = 0;  // --threads: the pool's thread count (0: its default)

double through_pool(const std::string& path, std::size_t readers, bool upsert, int coroutines,
                    double seconds) {
    asio::io_context io(1);
    sqlite::pool db(io.get_executor(), {.path = path, .readers = readers, .threads = threads});
    std::uint64_t n = 0, failures = 0;
    bool running = true;
    clock_type::time_point t0, t1;
    auto worker = [&](unsigned seed) -> asio::awaitable<void> {
        std::minstd_rand rng(seed);
        std::uniform_int_distribution<int> id(1, rows);
        while (running) {
            respool::error_code ec;
            sqlite::result r;
            if (upsert)
                std::tie(ec, r) = co_await db.async_query(
                    upsert_sql, sqlite::params(id(rng), "0123456789abcdef0123456789abcdef"),
                    asio::as_tuple(asio::use_awaitable));
            else
                std::tie(ec, r) = co_await db.async_query(read_sql, sqlite::params(id(rng)),
                                                          asio::as_tuple(asio::use_awaitable));
            if (!running) break;
            ++(ec ? failures : n);
        }
    };
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            // Warm up: every connection open, the routing learned.
            for (int i = 0; i < 2 * static_cast<int>(readers) + 2; ++i) {
                co_await db.async_query(read_sql, sqlite::params(1), asio::as_tuple(asio::use_awaitable));
                co_await db.async_query(upsert_sql, sqlite::params(1, "x"),
                                        asio::as_tuple(asio::use_awaitable));
            }
            t0 = clock_type::now();
            for (int i = 0; i < coroutines; ++i)
                asio::co_spawn(io, worker(static_cast<unsigned>(i) + 1), asio::detached);
            asio::steady_timer t(
                io, std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds)));
            co_await t.async_wait(asio::use_awaitable);
            running = false;
            t1 = clock_type::now();
        },
        asio::detached);
    io.run();
    if (failures)
        std::fprintf(stderr, "respool_sqlite_bench: %llu failures\n",
                     static_cast<unsigned long long>(failures));
    return static_cast<double>(n) / std::chrono::duration<double>(t1 - t0).count();
}

// One hop to the thread pool and back: async_run of an empty function on a leased writer.
double hop_us(const std::string& path, double seconds) {
    asio::io_context io(1);
    sqlite::pool db(io.get_executor(), {.path = path, .readers = 1});
    std::uint64_t n = 0;
    double secs = 0;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            auto l = co_await db.async_acquire(asio::use_awaitable);
            co_await l->async_run([](::sqlite3*) {}, asio::use_awaitable);
            const auto end = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                                     std::chrono::duration<double>(seconds));
            const auto t0 = clock_type::now();
            while (clock_type::now() < end) {
                co_await l->async_run([](::sqlite3*) {}, asio::use_awaitable);
                ++n;
            }
            secs = std::chrono::duration<double>(clock_type::now() - t0).count();
        },
        asio::detached);
    io.run();
    return secs * 1e6 / static_cast<double>(n);
}

// Point reads as raw_loop, `per` of them to an explicit read transaction (BEGIN ... COMMIT): what the
// read transaction around each autocommit read costs (read batches pay it once per batch).
double raw_in_transactions(const std::string& path, int per, double seconds) {
    sqlite3* db = nullptr;
    check(sqlite3_open(path.c_str(), &db), db, "open");
    sqlite3_stmt *st = nullptr, *begin = nullptr, *commit = nullptr;
    check(sqlite3_prepare_v2(db, read_sql, -1, &st, nullptr), db, "prepare");
    check(sqlite3_prepare_v2(db, "BEGIN", -1, &begin, nullptr), db, "prepare");
    check(sqlite3_prepare_v2(db, "COMMIT", -1, &commit, nullptr), db, "prepare");
    std::minstd_rand rng(7);
    std::uniform_int_distribution<int> id(1, rows);
    std::uint64_t n = 0;
    const auto t0 = clock_type::now();
    const auto end =
        t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
    while (clock_type::now() < end) {
        sqlite3_step(begin);
        sqlite3_reset(begin);
        for (int k = 0; k < per; ++k, ++n) {
            sqlite3_bind_int(st, 1, id(rng));
            if (const int rc = sqlite3_step(st); rc != SQLITE_ROW) check(rc, db, "step");
            sqlite3_reset(st);
        }
        check(sqlite3_step(commit) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR, db, "commit");
        sqlite3_reset(commit);
    }
    const double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    sqlite3_finalize(st);
    sqlite3_finalize(begin);
    sqlite3_finalize(commit);
    sqlite3_close(db);
    return static_cast<double>(n) / secs;
}

}  // namespace

int main(int argc, char** argv) {
    double seconds = 3;
    std::size_t readers = 4;
    std::string only;
    int coroutines = 8;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i];
        if (k == "--seconds")
            seconds = std::stod(argv[i + 1]);
        else if (k == "--readers")
            readers = static_cast<std::size_t>(std::stoul(argv[i + 1]));
        else if (k == "--threads")
            threads = static_cast<std::size_t>(std::stoul(argv[i + 1]));
        else if (k == "--only")
            only = argv[i + 1];
        else if (k == "--coroutines")
            coroutines = std::stoi(argv[i + 1]);
        else {
            std::fprintf(stderr,
                         "usage: respool_sqlite_bench [--seconds S] [--readers N] [--threads N] [--only "
                         "read|upsert|hop|raw-2|raw-tx] [--coroutines N]\n");
            return 2;
        }
    }
    char tmpl[] = "/tmp/respool-sqlite-bench.XXXXXX";
    if (!mkdtemp(tmpl)) return 1;
    const std::string dir = tmpl, path = dir + "/bench.db";
    try {
        create(path);
        if (!only.empty()) {
            const bool upsert = only == "upsert";
            if (only == "raw-tx") {
                std::printf("raw reads, 8 to a read transaction: %.0f/s\n",
                            raw_in_transactions(path, 8, seconds));
            } else if (only == "raw-2") {
                double a = 0, b = 0;
                std::thread t([&] { a = raw_loop(path, false, seconds); });
                b = raw_loop(path, false, seconds);
                t.join();
                std::printf("raw reads on 2 threads at once: %.0f/s (%.0f + %.0f)\n", a + b, a, b);
            } else if (only == "hop")
                std::printf("hop: %.2f us\n", hop_us(path, seconds));
            else if (coroutines == 0)
                std::printf("%s raw: %.0f/s\n", only.c_str(), raw_loop(path, upsert, seconds));
            else
                std::printf("%s pool, %d: %.0f/s\n", only.c_str(), coroutines,
                            through_pool(path, readers, upsert, coroutines, seconds));
            std::filesystem::remove_all(dir);
            return 0;
        }
        std::printf("| workload | raw sqlite3* loop | pool, 1 coroutine | pool, 8 | pool, 64 | 8 / raw |\n");
        std::printf("|---|---:|---:|---:|---:|---:|\n");
        for (bool upsert : {false, true}) {
            const double raw = raw_loop(path, upsert, seconds);
            const double p1 = through_pool(path, readers, upsert, 1, seconds);
            const double p8 = through_pool(path, readers, upsert, 8, seconds);
            const double p64 = through_pool(path, readers, upsert, 64, seconds);
            std::printf("| %s | %.0f/s | %.0f/s | %.0f/s | %.0f/s | %.2fx |\n",
                        upsert ? "single-row upsert" : "point read", raw, p1, p8, p64, p8 / raw);
        }
        std::printf("\none hop to the thread pool and back (async_run of an empty function): %.2f us\n",
                    hop_us(path, seconds));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "respool_sqlite_bench: %s\n", e.what());
        std::filesystem::remove_all(dir);
        return 1;
    }
    std::filesystem::remove_all(dir);
    return 0;
}
