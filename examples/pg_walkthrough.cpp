// The README's longer walk-through (docs/06-postgresql.md, "COPY"): a table, 10,000 structs COPYed in,
// rows read back into structs with a query, the table COPYed out, every statement traced. Built by the
// tests and run against their throwaway server:  pg_walkthrough "host=127.0.0.1 dbname=app user=app ..."
#include <respool/pg/pool.hpp>
#include <respool/trace.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/describe/class.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace asio = boost::asio;
namespace pg = respool::pg;

// A row type: described members are matched to columns by name, in COPY and in queries alike.
struct measurement {
    std::int64_t id;
    std::string station;
    double celsius;
    std::optional<std::string> note;  // NULL when empty
};
BOOST_DESCRIBE_STRUCT(measurement, (), (id, station, celsius, note))

// Every statement the pool's connections run, as it ends: its text, rows, time, and error if any.
struct print_tracer : respool::statement_tracer {
    void on_statement(const respool::statement_trace& t) noexcept override {
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.duration).count();
        if (t.error)
            std::printf("trace: %.*s failed after %lld us: %.*s\n", static_cast<int>(t.sql.size()),
                        t.sql.data(), static_cast<long long>(us), static_cast<int>(t.message.size()),
                        t.message.data());
        else
            std::printf("trace: %.*s: %llu rows in %lld us%s\n", static_cast<int>(t.sql.size()), t.sql.data(),
                        static_cast<unsigned long long>(t.rows), static_cast<long long>(us),
                        t.pool_statement ? " (the pool's reset on return)" : "");
    }
};

// (A plain function: GCC 12 mishandles some temporaries inside coroutines; see the README.)
std::vector<measurement> make_measurements(std::int64_t n) {
    std::vector<measurement> rows;
    for (std::int64_t i = 1; i <= n; ++i) {
        measurement m{i, i % 2 ? "north" : "south", 15.0 + static_cast<double>(i % 100) / 10, std::nullopt};
        if (i % 1000 == 0) m.note = "calibrated\tby hand";  // a tab: COPY escapes it
        rows.push_back(std::move(m));
    }
    return rows;
}

asio::awaitable<void> walk(pg::pool& db) {
    co_await db.async_query("DROP TABLE IF EXISTS measurements", asio::use_awaitable);
    co_await db.async_query(
        "CREATE TABLE measurements (id int8 PRIMARY KEY, station text NOT NULL, celsius float8, note text)",
        asio::use_awaitable);

    // 10,000 structs COPYed in: streamed in chunks of about 64 KiB, the columns named by the members.
    const std::vector<measurement> rows = make_measurements(10'000);
    const std::uint64_t stored = co_await db.async_copy_in("measurements", rows, {}, asio::use_awaitable);
    std::printf("copied in: %llu rows\n", static_cast<unsigned long long>(stored));

    // Rows back into structs with a query (bound parameters, columns matched by name).
    const pg::result noted = co_await db.async_query(
        "SELECT id, station, celsius, note FROM measurements WHERE station = $1 AND note IS NOT NULL ORDER "
        "BY id",
        pg::params("south"), asio::use_awaitable);
    for (const measurement& m : noted.all<measurement>())
        std::printf("%lld %s %.1f %s\n", static_cast<long long>(m.id), m.station.c_str(), m.celsius,
                    m.note.value_or("-").c_str());

    // The table COPYed out: each row handed over as it arrives (here only counted), never all at once.
    std::size_t bytes = 0;
    auto count_bytes = [&bytes](std::string_view line) { bytes += line.size(); };
    const std::uint64_t sent = co_await db.async_copy_out("SELECT * FROM measurements ORDER BY id",
                                                          count_bytes, {}, asio::use_awaitable);
    std::printf("copied out: %llu rows, %zu bytes\n", static_cast<unsigned long long>(sent), bytes);

    co_await db.async_query("DROP TABLE measurements", asio::use_awaitable);
}

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: pg_walkthrough CONNINFO\n");
        return 2;
    }
    asio::io_context io;
    pg::pool db(io.get_executor(),
                {.conninfo = argv[1], .max = 2, .min_idle = 0, .tracer = std::make_shared<print_tracer>()});
    int status = 1;
    asio::co_spawn(io, walk(db), [&](std::exception_ptr e) {
        status = 0;
        if (e) try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                std::fprintf(stderr, "pg_walkthrough: %s\n", x.what());
                status = 1;
            }
        db.close();
    });
    io.run();
    return status;
}
