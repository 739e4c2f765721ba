// TLS against a server of its own (the pg_cluster_tls fixture: `pg_cluster.sh start-tls`, a throwaway
// CA and a certificate for the name localhost, and a pg_hba.conf that rejects unencrypted
// connections). What works: sslmode=require, verify-full with the right root. What fails, and says
// why in libpq's words (masked), on the connection and at every pool-level operation: a certificate for
// another name, a missing root certificate, an unencrypted connection the server refuses.
#include "pg_test_support.hpp"

#include <respool/pg/pool.hpp>

#include <boost/asio/as_tuple.hpp>

#include <fstream>
#include <string>

namespace {

using namespace pg_test;

// The folder with ca.crt (pg_cluster.sh writes its name beside the conninfo).
std::string tls_dir() {
    const std::string file = std::getenv("RESPOOL_PG_CONNINFO_FILE");
    std::ifstream in(file.substr(0, file.rfind('/')) + "/tls");
    std::string dir;
    std::getline(in, dir);
    return dir;
}

// The port of the test server (from its conninfo).
std::string port() {
    const std::string c = conninfo();
    const auto p = c.find("port=") + 5;
    return c.substr(p, c.find(' ', p) - p);
}

// A connection string to the TLS server: `host` and TLS options as given.
std::string to_server(const std::string& host, const std::string& tls) {
    return "host=" + host + " port=" + port() +
           " dbname=postgres user=respool password=respool-test-secret connect_timeout=5 " + tls;
}

// Connects one connection: the error and libpq's message.
std::pair<respool::error_code, std::string> connect(const std::string& info) {
    respool::error_code ec;
    std::string message;
    run([&]() -> asio::awaitable<void> {
        pg::connection c(co_await asio::this_coro::executor);
        std::tie(ec) = co_await c.async_connect(info, 10s, asio::as_tuple(asio::use_awaitable));
        message = c.last_error().message;
        if (!ec) {
            auto r = co_await c.async_query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                                            asio::use_awaitable);
            EXPECT_EQ(r.get<bool>(0, 0), true) << "the connection is encrypted";
        }
    });
    return {ec, message};
}

TEST(pg_tls, sslmode_require_connects_encrypted) {
    auto [ec, message] = connect(to_server("127.0.0.1", "sslmode=require"));
    EXPECT_FALSE(ec) << message;
}

TEST(pg_tls, verify_full_with_the_right_root_connects) {
    auto [ec, message] =
        connect(to_server("localhost", "sslmode=verify-full sslrootcert=" + tls_dir() + "/ca.crt"));
    EXPECT_FALSE(ec) << message;
}

struct refused {
    std::string info;
    std::string reason;  // in libpq's message
};

std::vector<refused> refusals() {
    return {
        // The certificate names localhost; connecting by address, libpq finds no match.
        {to_server("127.0.0.1", "sslmode=verify-full sslrootcert=" + tls_dir() + "/ca.crt"),
         "does not match host name"},
        {to_server("localhost", "sslmode=verify-full sslrootcert=" + tls_dir() + "/missing-root.crt"),
         "root certificate file"},
        {to_server("127.0.0.1", "sslmode=disable"), "no encryption"},
    };
}

TEST(pg_tls, a_refused_connect_says_libpq_s_reason) {
    for (const auto& r : refusals()) {
        auto [ec, message] = connect(r.info);
        EXPECT_EQ(ec, pg::condition::connection_broken) << r.info;
        EXPECT_NE(message.find(r.reason), std::string::npos) << message;
        EXPECT_EQ(message.find("respool-test-secret"), std::string::npos) << message;
    }
}

// The same failures through a pool: the error its operations complete with carries libpq's reason
// (async_query's diagnostics, the exception of with_connection, and async_acquire's diagnostics).
TEST(pg_tls, pool_operations_carry_libpq_s_reason) {
    for (const auto& r : refusals()) {
        run([&]() -> asio::awaitable<void> {
            pg::pool_config c;
            c.conninfo = r.info;
            c.min_idle = 0;
            c.borrow_timeout = 10s;
            c.circuit.reset();
            pg::pool db(co_await asio::this_coro::executor, c);

            respool::diagnostics acquire_diag;
            auto [aec, lease] =
                co_await db.async_acquire(10s, &acquire_diag, asio::as_tuple(asio::use_awaitable));
            EXPECT_EQ(aec, pg::condition::connection_broken) << r.info;
            EXPECT_NE(acquire_diag.message.find(r.reason), std::string::npos) << acquire_diag.message;

            respool::diagnostics query_diag;
            auto [qec, result] =
                co_await db.async_query("SELECT 1", &query_diag, asio::as_tuple(asio::use_awaitable));
            EXPECT_EQ(qec, pg::condition::connection_broken) << r.info;
            EXPECT_NE(query_diag.message.find(r.reason), std::string::npos) << query_diag.message;

            try {
                co_await db.with_connection([](pg::connection&) -> asio::awaitable<void> { co_return; },
                                            asio::use_awaitable);
                ADD_FAILURE() << "connected: " << r.info;
            } catch (const boost::system::system_error& e) {
                EXPECT_NE(std::string(e.what()).find(r.reason), std::string::npos) << e.what();
                EXPECT_EQ(std::string(e.what()).find("respool-test-secret"), std::string::npos) << e.what();
            }
            db.close();
        });
    }
}

// An operation that made no connect of its own (the circuit opened after the failed ones, or none was
// free in time while connects failed) still says why the connects fail.
TEST(pg_tls, an_open_circuit_says_why_the_connects_failed) {
    for (const auto& r : refusals()) {
        run([&]() -> asio::awaitable<void> {
            pg::pool_config c;
            c.conninfo = r.info;
            c.min_idle = 0;
            c.circuit = respool::breaker_options{.failures_to_open = 1, .cool_down = 60s};
            pg::pool db(co_await asio::this_coro::executor, c);
            auto [first, lease] = co_await db.async_acquire(10s, asio::as_tuple(asio::use_awaitable));
            EXPECT_EQ(first, pg::condition::connection_broken) << r.info;
            EXPECT_EQ(db.state(), respool::circuit_state::open);

            respool::diagnostics acquire_diag;
            auto [aec, l] =
                co_await db.async_acquire(10s, &acquire_diag, asio::as_tuple(asio::use_awaitable));
            EXPECT_EQ(aec, respool::errc::unavailable);
            EXPECT_NE(acquire_diag.message.find(r.reason), std::string::npos) << acquire_diag.message;
            respool::diagnostics query_diag;
            auto [qec, result] =
                co_await db.async_query("SELECT 1", &query_diag, asio::as_tuple(asio::use_awaitable));
            EXPECT_EQ(qec, respool::errc::unavailable);
            EXPECT_NE(query_diag.message.find(r.reason), std::string::npos) << query_diag.message;
            try {
                co_await db.transaction([](pg::connection&) -> asio::awaitable<void> { co_return; }, {},
                                        asio::use_awaitable);
                ADD_FAILURE() << "connected: " << r.info;
            } catch (const boost::system::system_error& e) {
                EXPECT_NE(std::string(e.what()).find(r.reason), std::string::npos) << e.what();
            }
            db.close();
        });
    }
}

}  // namespace

// Replies over TLS that span several records, of sizes around every record boundary: each comes back
// whole, well within the statement timeout, whether the statement read its reply before waiting or
// waited at once. (A read leaves no decrypted bytes inside OpenSSL where a socket wait could not see
// them as long as a record fits the 8 KB libpq keeps free for a read: the server writes at most 8 KB
// at a time.)
TEST(pg_tls, replies_across_tls_records_are_read_whole) {
    run([&]() -> asio::awaitable<void> {
        pg::connection c(co_await asio::this_coro::executor);
        auto [ec] = co_await c.async_connect(to_server("127.0.0.1", "sslmode=require"), 10s,
                                             asio::as_tuple(asio::use_awaitable));
        EXPECT_FALSE(ec) << c.last_error().message;
        if (ec) co_return;
        c.set_statement_timeout(5s);
        for (int size = 1000; size <= 70000; size += 997) {
            pg::params p;
            p.add(size);
            auto [qec, r] = co_await c.async_query("SELECT repeat('x', $1::int)", std::move(p),
                                                   asio::as_tuple(asio::use_awaitable));
            EXPECT_FALSE(qec) << "size " << size << ": " << qec.message();
            if (qec) co_return;
            EXPECT_EQ(r.text(0, 0).size(), static_cast<std::size_t>(size));
        }
    });
}
