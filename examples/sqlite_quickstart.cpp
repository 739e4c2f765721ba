// The SQLite quickstart (docs/07-sqlite.md): a pool on a database file, statements with bound
// parameters (reads on a reader, writes on the writer), a transaction, and an error told apart by its
// condition. Built and run by the tests:  sqlite_quickstart /path/to/folder
#include <respool/sqlite/pool.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdio>
#include <exception>
#include <string>

namespace asio = boost::asio;
namespace sqlite = respool::sqlite;

asio::awaitable<void> demo(sqlite::pool& db) {
    // Borrow, run, return: the pool picks the writer for anything that may write.
    co_await db.async_query(
        "CREATE TABLE IF NOT EXISTS accounts (id INTEGER PRIMARY KEY, owner TEXT, balance INT)",
        asio::use_awaitable);
    co_await db.async_query("INSERT OR REPLACE INTO accounts VALUES (?, ?, ?), (?, ?, ?)",
                            sqlite::params(1, "ada", std::int64_t{100}, 2, "grace", std::int64_t{50}),
                            asio::use_awaitable);

    // A transfer: BEGIN IMMEDIATE ... COMMIT on the writer; ROLLBACK if anything in it throws.
    co_await db.transaction(
        [](sqlite::connection& c) -> asio::awaitable<void> {
            co_await c.async_query("UPDATE accounts SET balance = balance - ? WHERE id = ?",
                                   sqlite::params(std::int64_t{30}, 1), asio::use_awaitable);
            co_await c.async_query("UPDATE accounts SET balance = balance + ? WHERE id = ?",
                                   sqlite::params(std::int64_t{30}, 2), asio::use_awaitable);
        },
        {}, asio::use_awaitable);

    // A read-only statement runs on a reader, in parallel with the writer.
    sqlite::result r =
        co_await db.async_query("SELECT owner, balance FROM accounts ORDER BY id", asio::use_awaitable);
    for (std::size_t i = 0; i < r.rows(); ++i)
        std::printf("%s: %lld\n", r.get<std::string>(i, 0).c_str(),
                    static_cast<long long>(r.get<std::int64_t>(i, 1)));

    // Errors are error_codes; conditions say what they mean. An SQL error leaves the connection in the pool.
    auto [ec, dup] = co_await db.async_query("INSERT INTO accounts VALUES (?, 'again', 0)", sqlite::params(1),
                                             asio::as_tuple(asio::use_awaitable));
    if (ec == sqlite::condition::unique_violation)
        std::printf("id 1 exists already (%s)\n", ec.message().c_str());
}

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s FOLDER\n", argv[0]);
        return 2;
    }
    asio::io_context io;
    sqlite::pool db(io.get_executor(), {.path = std::string(argv[1]) + "/quickstart.db", .readers = 2});
    std::exception_ptr failure;
    asio::co_spawn(io, demo(db), [&](std::exception_ptr e) { failure = e; });
    io.run();
    if (failure) {
        try {
            std::rethrow_exception(failure);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "failed: %s\n", e.what());
            return 1;
        }
    }
    return 0;
}
