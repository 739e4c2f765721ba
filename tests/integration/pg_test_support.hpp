// What the PostgreSQL pool tests share: the test server's connection string (the pg_cluster fixture
// writes it to the file named by RESPOOL_PG_CONNINFO_FILE), a coroutine runner, and an admin
// connection for looking at the server from outside the pool (pg_stat_activity, pg_locks, ...).
#pragma once

#include <respool/pg/connection.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

namespace pg_test {

namespace asio = boost::asio;
namespace pg = respool::pg;
using namespace std::chrono_literals;

// RESPOOL_PG_BEHIND_POOLER=1: conninfo() is PgBouncer in transaction mode (the pgbouncer fixture), which
// hands each transaction a server connection of its choosing: a named prepared statement made on one
// may be missing (or taken) on the next, so the pools the tests make use unnamed statements there.
inline bool behind_pooler() {
    const char* v = std::getenv("RESPOOL_PG_BEHIND_POOLER");
    return v && std::string(v) == "1";
}
inline pg::statement_mode statements() {
    return behind_pooler() ? pg::statement_mode::unnamed : pg::statement_mode::cache;
}

inline std::string conninfo() {
    const char* file = std::getenv("RESPOOL_PG_CONNINFO_FILE");
    if (!file) return {};
    std::ifstream in(file);
    std::string s;
    std::getline(in, s);
    return s;
}

// The server's log (pg_cluster.sh starts the server with -l <cluster>/server.log).
inline std::string server_log() {
    const std::string file = std::getenv("RESPOOL_PG_CONNINFO_FILE");
    std::ifstream in(file.substr(0, file.rfind('/')) + "/cluster");
    std::string dir;
    std::getline(in, dir);
    std::ifstream log(dir + "/server.log");
    return {std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>()};
}

// Runs a test body (a coroutine) on a fresh io_context to its end; its exception fails the test.
template <class F>
void run(F body) {
    asio::io_context io;
    auto done = asio::co_spawn(io, body(), asio::use_future);
    io.run();
    done.get();
}

// Waits (polling every 5 ms, at most `limit`) until `done()` holds: for a state of the test's own, such
// as a handler that ran or a pool counter that moved. It does not fail; the test asserts afterwards.
template <class Pred>
asio::awaitable<void> poll_until(Pred done, std::chrono::milliseconds limit = 10s) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    for (auto end = std::chrono::steady_clock::now() + limit;
         !done() && std::chrono::steady_clock::now() < end;) {
        t.expires_after(5ms);
        co_await t.async_wait(asio::use_awaitable);
    }
}

// A plain connection next to the pool: it sees the server as an operator would.
class admin {
public:
    static asio::awaitable<admin> open() {
        admin a(co_await asio::this_coro::executor);
        a.c_.set_statement_mode(statements());
        auto [ec] = co_await a.c_.async_connect(conninfo(), 10s, asio::as_tuple(asio::use_awaitable));
        if (ec) throw std::runtime_error("admin connect: " + a.c_.last_error().message);
        co_return a;
    }
    asio::awaitable<pg::result> query(std::string sql) {
        auto [ec, r] = co_await c_.async_query(std::move(sql), asio::as_tuple(asio::use_awaitable));
        if (ec) throw std::runtime_error("admin query: " + ec.message() + ": " + c_.last_error().message);
        co_return r;
    }
    asio::awaitable<std::int64_t> count(std::string sql) {
        pg::result r = co_await query(std::move(sql));
        co_return r.get<std::int64_t>(0, 0);
    }
    // Client backends connected with this application_name.
    asio::awaitable<std::int64_t> backends(const std::string& app) {
        co_return co_await count(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND "
            "application_name = '" +
            app + "'");
    }
    // Waits (polling every 10 ms, at most `limit`) until `pred` holds on the server.
    template <class Pred>
    asio::awaitable<void> wait_until(Pred pred, std::chrono::milliseconds limit = 10s) {
        asio::steady_timer t(c_.get_executor());
        for (auto end = std::chrono::steady_clock::now() + limit;;) {
            if (co_await pred(*this)) co_return;
            if (std::chrono::steady_clock::now() > end)
                throw std::runtime_error("wait_until: the server never got there");
            t.expires_after(10ms);
            co_await t.async_wait(asio::use_awaitable);
        }
    }
    // pg_terminate_backend(pid), then waits until the backend is gone from pg_stat_activity.
    asio::awaitable<void> terminate(int pid) {
        co_await query("SELECT pg_terminate_backend(" + std::to_string(pid) + ")");
        co_await wait_until([pid](admin& x) -> asio::awaitable<bool> {
            co_return co_await x.count("SELECT count(*) FROM pg_stat_activity WHERE pid = " +
                                       std::to_string(pid)) == 0;
        });
    }
    pg::connection& connection() { return c_; }

private:
    explicit admin(asio::any_io_executor ex) : c_(std::move(ex)) {}
    pg::connection c_;
};

// An event loop on a thread of its own; run(f) runs the coroutine f() there and returns its result.
struct loop {
    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(io);
    std::thread thread{[this] { io.run(); }};
    ~loop() {
        work.reset();
        thread.join();
    }
    template <class F>
    auto run(F f) {
        return asio::co_spawn(io, f(), asio::use_future).get();
    }
};

// A pool connection string with an application_name of its own, so the server can count its backends.
inline std::string tagged(const std::string& app) {
    return conninfo() + " application_name=" + app;
}

}  // namespace pg_test
