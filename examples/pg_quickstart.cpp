// The PostgreSQL quickstart (docs/06-postgresql.md): a pool, queries with bound parameters, a
// transaction, and an error told apart by its condition. Built by the tests and run against their
// throwaway server:  pg_quickstart "host=127.0.0.1 port=5432 dbname=app user=app password=..."
#include <respool/pg/pool.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdio>
#include <exception>
#include <string>

namespace asio = boost::asio;
namespace pg = respool::pg;

asio::awaitable<void> demo(pg::pool& db) {
    // Borrow, run, return: one statement straight on the pool (prepared once per connection).
    co_await db.async_query(
        "CREATE TABLE IF NOT EXISTS accounts (id int PRIMARY KEY, owner text, balance bigint)",
        asio::use_awaitable);
    co_await db.async_query(
        "INSERT INTO accounts VALUES ($1, $2, $3), ($4, $5, $6) ON CONFLICT (id) DO UPDATE SET "
        "balance = EXCLUDED.balance",
        pg::params(1, "ada", std::int64_t{100}, 2, "grace", std::int64_t{50}), asio::use_awaitable);

    // A transfer: BEGIN ... COMMIT on one connection, retried when the server says serialization_failure.
    co_await db.transaction(
        [](pg::connection& c) -> asio::awaitable<void> {
            co_await c.async_query("UPDATE accounts SET balance = balance - $1 WHERE id = $2",
                                   pg::params(std::int64_t{30}, 1), asio::use_awaitable);
            co_await c.async_query("UPDATE accounts SET balance = balance + $1 WHERE id = $2",
                                   pg::params(std::int64_t{30}, 2), asio::use_awaitable);
        },
        {.level = pg::isolation::serializable, .max_attempts = 3}, asio::use_awaitable);

    pg::result r = co_await db.async_query("SELECT owner, balance FROM accounts ORDER BY id", pg::params(),
                                           asio::use_awaitable);
    for (std::size_t i = 0; i < r.rows(); ++i)
        std::printf("%s: %lld\n", r.get<std::string>(i, 0).c_str(),
                    static_cast<long long>(r.get<std::int64_t>(i, 1)));

    // Errors are error_codes; conditions say what they mean. An SQL error leaves the connection in the pool.
    auto [ec, dup] = co_await db.async_query("INSERT INTO accounts VALUES ($1, 'again', 0)", pg::params(1),
                                             asio::as_tuple(asio::use_awaitable));
    if (ec == pg::condition::unique_violation)
        std::printf("id 1 exists already (%s)\n", ec.message().c_str());
    co_await db.async_query("DROP TABLE accounts", asio::use_awaitable);
}

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: pg_quickstart CONNINFO\n");
        return 2;
    }
    asio::io_context io;
    pg::pool db(io.get_executor(), {.conninfo = argv[1], .max = 4, .min_idle = 1});
    int status = 1;
    asio::co_spawn(io, demo(db), [&](std::exception_ptr e) {
        status = 0;
        if (e) try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                std::fprintf(stderr, "pg_quickstart: %s\n",
                             x.what());  // never the password: messages are masked
                status = 1;
            }
        db.close();
    });
    io.run();
    return status;
}
