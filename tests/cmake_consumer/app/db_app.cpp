// The database layers as a user gets them from the installed package (respool::pg and respool::sqlite,
// which bring libpq and SQLite through find_dependency): an SQLite pool on a database in a folder given
// on the command line, one write and one read through it, and the PostgreSQL layer's masking (no server
// here). Exits 0 when both did what they should.
#include <respool/pg/pool.hpp>
#include <respool/sqlite/pool.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdio>
#include <exception>
#include <string>

namespace asio = boost::asio;

int main(int argc, char** argv) {
    if (argc < 2) return 2;
    if (respool::pg::masked("host=db password=secret").find("secret") != std::string::npos) return 1;
    asio::io_context io;
    respool::sqlite::pool db(io.get_executor(), {.path = std::string(argv[1]) + "/app.db", .readers = 1});
    int value = 0;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            co_await db.async_query("CREATE TABLE t (x INTEGER)", asio::use_awaitable);
            co_await db.async_query("INSERT INTO t VALUES (?)", respool::sqlite::params(42),
                                    asio::use_awaitable);
            auto r = co_await db.async_query("SELECT x FROM t", asio::use_awaitable);
            value = r.get<int>(0, 0);
        },
        [&](std::exception_ptr e) {
            if (e) value = -1;
            db.close();
        });
    io.run();
    std::printf("db_app: %d\n", value);
    return value == 42 ? 0 : 1;
}
