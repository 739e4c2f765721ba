// test::pg_server (the fault tests' control of their PostgreSQL server) against the pg_cluster_faults
// fixture: a cluster of its own, since stopping and restarting it would break the tests that share
// the pg_cluster one. Clients here are plain blocking libpq connections: what they see after a stop, a
// restart or a terminate is what the fault tests will build on. Waits are on server state
// (wait_until), never on a guessed time.
#include "pg_server.hpp"

#include <libpq-fe.h>

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>

using namespace std::chrono_literals;
using test::pg_server;

namespace {

// A blocking libpq client named `app` (so the server's view of it can be filtered).
struct client {
    client(const std::string& conninfo, const std::string& app)
        : conn(PQconnectdb((conninfo + " connect_timeout=10 application_name=" + app).c_str()), &PQfinish) {}
    bool ok() const { return PQstatus(conn.get()) == CONNECTION_OK; }
    std::string error() const { return PQerrorMessage(conn.get()); }
    int pid() const { return PQbackendPID(conn.get()); }
    // True when "SELECT 1" returns its row on this connection.
    bool select_1() const {
        std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(conn.get(), "SELECT 1"), &PQclear);
        return r && PQresultStatus(r.get()) == PGRES_TUPLES_OK &&
               std::string(PQgetvalue(r.get(), 0, 0)) == "1";
    }
    std::unique_ptr<PGconn, decltype(&PQfinish)> conn;
};

class pg_server_test : public ::testing::Test {
protected:
    void SetUp() override {
        if (!pg_server::available())
            GTEST_SKIP() << "RESPOOL_PG_CONNINFO_FILE not set: run through ctest -L integration";
        server.emplace();
    }
    // A test that failed between a stop and its start must not leave the next ones without a server.
    void TearDown() override {
        if (server && !client(server->conninfo(), "pg_server_test_probe").ok()) server->start();
    }
    std::optional<pg_server> server;
};

TEST_F(pg_server_test, admin_queries_return_rows_nulls_and_errors) {
    const auto rows = server->query("SELECT 1, NULL::text, 'x' UNION ALL SELECT 2, 'y', 'z' ORDER BY 1");
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0], (pg_server::row{"1", std::nullopt, "x"}));
    EXPECT_EQ(rows[1], (pg_server::row{"2", "y", "z"}));
    EXPECT_EQ(server->query("SELECT $1::int + 1", {"41"}).at(0).at(0), "42");
    try {
        server->query("SELEC 1");
        FAIL() << "a syntax error throws";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("syntax error"), std::string::npos) << e.what();
    }
    EXPECT_GT(server->port(), 0);
    EXPECT_NE(server->conninfo().find("port=" + std::to_string(server->port())), std::string::npos);
}

TEST_F(pg_server_test, count_backends_sees_the_clients_by_application_name) {
    client a1(server->conninfo(), "pg_server_test_a"), a2(server->conninfo(), "pg_server_test_a");
    client b(server->conninfo(), "pg_server_test_b");
    ASSERT_TRUE(a1.ok() && a2.ok() && b.ok()) << a1.error() << a2.error() << b.error();
    // Connected clients are listed once their connect returned; the admin connections never are.
    EXPECT_EQ(server->count_backends("pg_server_test_a"), 2);
    EXPECT_EQ(server->count_backends("pg_server_test_b"), 1);
    EXPECT_EQ(server->count_backends("respool_test_admin"), 0);
    EXPECT_GE(server->count_backends(), 3);
    EXPECT_EQ(server->backend_pids("pg_server_test_b"), std::vector<int>{b.pid()});
    a1.conn.reset();  // the backend ends after PQfinish returns
    pg_server::wait_until([&] { return server->count_backends("pg_server_test_a") == 1; }, 10s,
                          "the closed client's backend to end");
}

TEST_F(pg_server_test, the_log_counts_connection_attempts) {
    const auto before = server->count_log_lines("connection received: host=127.0.0.1");
    client c(server->conninfo(), "pg_server_test_log");
    ASSERT_TRUE(c.ok()) << c.error();
    pg_server::wait_until(
        [&] { return server->count_log_lines("connection received: host=127.0.0.1") >= before + 1; }, 10s,
        "the attempt in the server log");
}

TEST_F(pg_server_test, stop_refuses_connections_and_start_serves_the_same_conninfo) {
    client before(server->conninfo(), "pg_server_test_before");
    ASSERT_TRUE(before.ok()) << before.error();
    server->stop();
    client refused(server->conninfo(), "pg_server_test_refused");
    EXPECT_FALSE(refused.ok());
    EXPECT_NE(refused.error().find("refused"), std::string::npos) << refused.error();
    EXPECT_FALSE(before.select_1()) << "the fast stop closed the old connection";
    EXPECT_THROW(server->stop(), std::runtime_error) << "a stopped server cannot be stopped again";

    server->start();
    client again(server->conninfo(), "pg_server_test_again");
    ASSERT_TRUE(again.ok()) << again.error();
    EXPECT_TRUE(again.select_1());
    EXPECT_EQ(pg_server().port(), server->port()) << "the state folder still names the same port";
}

TEST_F(pg_server_test, restart_breaks_old_connections_and_serves_new_ones) {
    for (auto mode : {pg_server::stop_mode::fast, pg_server::stop_mode::immediate}) {
        client old(server->conninfo(), "pg_server_test_old");
        ASSERT_TRUE(old.ok()) << old.error();
        ASSERT_TRUE(old.select_1());
        server->restart(mode);
        EXPECT_FALSE(old.select_1()) << "the old backend is gone; its client's next statement fails";
        EXPECT_EQ(PQstatus(old.conn.get()), CONNECTION_BAD);
        client fresh(server->conninfo(), "pg_server_test_fresh");
        ASSERT_TRUE(fresh.ok()) << fresh.error();
        EXPECT_TRUE(fresh.select_1());
    }
}

TEST_F(pg_server_test, terminate_ends_a_backend_and_wait_until_sees_it_gone) {
    client victim(server->conninfo(), "pg_server_test_victim");
    ASSERT_TRUE(victim.ok()) << victim.error();
    ASSERT_EQ(server->backend_pids("pg_server_test_victim"), std::vector<int>{victim.pid()});
    EXPECT_TRUE(server->terminate(victim.pid()));
    pg_server::wait_until([&] { return server->count_backends("pg_server_test_victim") == 0; }, 10s,
                          "the terminated backend to end");
    EXPECT_FALSE(victim.select_1());
    EXPECT_FALSE(server->terminate(victim.pid())) << "no such backend any more";
}

TEST_F(pg_server_test, wait_until_gives_up_at_its_limit) {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_THROW(pg_server::wait_until([] { return false; }, 50ms, "nothing"), std::runtime_error);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 50ms);
    int calls = 0;
    pg_server::wait_until([&] { return ++calls == 3; }, 10s);
    EXPECT_EQ(calls, 3);
}

}  // namespace
