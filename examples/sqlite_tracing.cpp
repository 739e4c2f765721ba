// Statements traced and the pool's events logged with spdlog (examples/spdlog_adapters.hpp) on an
// SQLite database in the folder given as the first argument.
#include "spdlog_adapters.hpp"

#include <respool/sqlite/pool.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>

namespace asio = boost::asio;
namespace sqlite = respool::sqlite;

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << "usage: sqlite_tracing FOLDER\n";
        return 2;
    }
    auto log = spdlog::stdout_logger_mt("db");
    log->set_level(spdlog::level::debug);
    log->set_pattern("%l %v");

    asio::io_context io;
    sqlite::pool_config cfg{.path = std::string(argv[1]) + "/tracing.db"};
    cfg.tracer = std::make_shared<spdlog_tracer>(log, std::chrono::milliseconds(100));
    sqlite::pool db(io.get_executor(), cfg);
    db.writer_pool().set_log_sink(std::make_shared<spdlog_sink>(log));
    db.reader_pool().set_log_sink(std::make_shared<spdlog_sink>(log));

    auto work = [&]() -> asio::awaitable<void> {
        co_await db.async_query("CREATE TABLE IF NOT EXISTS people (name TEXT, age INTEGER)",
                                asio::use_awaitable);
        co_await db.async_query("INSERT INTO people VALUES (?, ?)", sqlite::params("ada", 36),
                                asio::use_awaitable);
        co_await db.async_query("SELECT name FROM people WHERE age > ?", sqlite::params(30),
                                asio::use_awaitable);
        auto [ec, r] = co_await db.async_query("SELECT * FROM nobody", asio::as_tuple(asio::use_awaitable));
        db.close();
    };
    asio::co_spawn(io, work(), asio::detached);
    io.run();
    return 0;
}
