// `respool serve` on the test PostgreSQL cluster (pg_cluster fixture): the spec's rows against a real
// server, exact concurrent increments, 503 + Retry-After when the pool's one connection is stuck
// behind a LOCK TABLE taken from outside the service, 504 at the statement deadline, promtool on
// /metrics, SIGTERM leaving no backend of the service on the server, and the password never in any
// output or response.
#include "pg_server.hpp"
#include "serve_support.hpp"

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <csignal>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

using namespace serve_test;
using namespace std::chrono_literals;

namespace {

constexpr const char* password = "respool-test-secret";  // pg_cluster.sh's

class serve_pg : public ::testing::Test {
protected:
    void SetUp() override {
        if (!test::pg_server::available()) GTEST_SKIP() << "run through ctest -L integration";
        server.emplace();
        server->query("DROP TABLE IF EXISTS respool_kv");  // each test starts with the service creating it
    }
    // Starts the service with application_name=`app` (to find its backends) and `extra` flags.
    std::uint16_t start(const std::string& app, std::vector<std::string> extra = {}) {
        std::vector<std::string> args{"serve", "--db", server->conninfo() + " application_name=" + app,
                                      "--listen", "127.0.0.1:0"};
        args.insert(args.end(), extra.begin(), extra.end());
        // Behind PgBouncer in transaction mode (serve_pg_pooler_tests) the service runs as
        // docs/09-service.md says it should there.
        if (const char* p = std::getenv("RESPOOL_PG_BEHIND_POOLER"); p && std::string(p) == "1")
            args.insert(args.end(), {"--statements", "unnamed"});
        process.emplace(args);
        return process->wait_listening();
    }
    // The pool's label on /metrics: "postgresql"; with a multi-host conninfo (these tests run on a
    // replicated cluster too: serve_pg_cluster_tests) each host's pool is labelled host:port.
    std::string first_pool_label() const {
        if (server->conninfo().find(',') == std::string::npos) return "postgresql";
        return "127.0.0.1:" + std::to_string(server->port());
    }
    std::optional<test::pg_server> server;
    std::optional<serve_process> process;
};

// A transaction of an operator's session holding LOCK TABLE on the service's table.
struct table_lock {
    explicit table_lock(const std::string& conninfo) {
        conn = PQconnectdb(conninfo.c_str());
        EXPECT_EQ(PQstatus(conn), CONNECTION_OK) << PQerrorMessage(conn);
        exec("BEGIN");
        exec("LOCK TABLE respool_kv IN ACCESS EXCLUSIVE MODE");
    }
    void exec(const char* sql) {
        PGresult* r = PQexec(conn, sql);
        EXPECT_EQ(PQresultStatus(r), PGRES_COMMAND_OK) << PQerrorMessage(conn);
        PQclear(r);
    }
    void release() {
        if (conn) {
            exec("COMMIT");
            PQfinish(conn);
            conn = nullptr;
        }
    }
    ~table_lock() { release(); }
    PGconn* conn = nullptr;
};

}  // namespace

TEST_F(serve_pg, the_spec_rows_answer_as_specified) {
    client c(start("serve_rows"));
    auto h = c.request("GET", "/health");
    EXPECT_EQ(h.status, 200u) << h.body;
    EXPECT_NE(h.body.find(R"("database":"postgresql")"), std::string::npos);
    std::string value("\0\x01\xfe\xff binary\n", 12);
    EXPECT_EQ(c.request("PUT", "/kv/b", value).status, 204u);
    EXPECT_EQ(c.request("GET", "/kv/b").body, value);
    EXPECT_EQ(c.request("PUT", "/kv/b", "7").status, 204u);
    EXPECT_EQ(c.request("POST", "/kv/b/incr").body, "8");
    EXPECT_EQ(c.request("POST", "/kv/new/incr").body, "1");
    EXPECT_EQ(c.request("DELETE", "/kv/b").status, 204u);
    EXPECT_EQ(c.request("DELETE", "/kv/b").status, 404u);
    EXPECT_EQ(c.request("GET", "/kv/b").status, 404u);
    c.request("PUT", "/kv/text", "seven");
    EXPECT_EQ(c.request("POST", "/kv/text/incr").status, 409u);
    EXPECT_EQ(c.request("GET", "/kv/text").body, "seven");  // rolled back
    c.request("PUT", "/kv/max", "9223372036854775807");
    EXPECT_EQ(c.request("POST", "/kv/max/incr").status, 409u);
    // A 409 on a key that did not exist would have inserted "0": it never happens, and nothing is left.
    EXPECT_EQ(c.request("GET", "/kv/none").status, 404u);
    EXPECT_EQ(c.request("GET", "/kv/bad%20").status, 400u);
    EXPECT_EQ(c.request("GET", "/other").status, 404u);
    EXPECT_EQ(c.request("POST", "/kv/x").status, 405u);
    EXPECT_EQ(c.request("PUT", "/kv/big", std::string(1024 * 1024 + 1, 'x')).status, 413u);
    auto m = c.request("GET", "/metrics");
    EXPECT_EQ(m.status, 200u);
    EXPECT_EQ(promtool_problems(m.body), "");
    EXPECT_EQ(
        sample(m.body, R"(respool_http_requests_total{route="/kv/{key}/incr",method="POST",status="409"})"),
        2);
    EXPECT_TRUE(
        sample(m.body, "respool_pool_resources_max{pool=\"" + first_pool_label() + "\",thread=\"0\"}"));
}

TEST_F(serve_pg, concurrent_increments_on_two_loops_are_exact) {
    const auto port = start("serve_incr", {"--threads", "2", "--max", "4"});
    std::vector<std::thread> clients;
    std::atomic<int> ok{0};
    for (int i = 0; i < 8; ++i)
        clients.emplace_back([&] {
            client c(port);
            for (int k = 0; k < 50; ++k)
                if (c.request("POST", "/kv/hits/incr").status == 200) ++ok;
        });
    for (auto& t : clients) t.join();
    EXPECT_EQ(ok.load(), 400);
    EXPECT_EQ(client(port).request("GET", "/kv/hits").body, "400");
    auto rows = server->query("SELECT convert_from(v, 'UTF8') FROM respool_kv WHERE k = 'hits'");
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0][0].value_or(""), "400");
}

TEST_F(serve_pg, a_pool_held_behind_a_table_lock_gives_503_with_retry_after_within_the_borrow_timeout) {
    const auto port = start("serve_lock", {"--max", "1", "--min-idle", "1", "--borrow-timeout", "200ms"});
    client c(port);
    ASSERT_EQ(c.request("PUT", "/kv/k", "1").status, 204u);  // the table exists
    table_lock lock(server->conninfo());
    response stuck;
    std::thread t([&] { stuck = client(port).request("POST", "/kv/k/incr"); });
    test::pg_server::wait_until(
        [&] {
            auto r = server->query(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'serve_lock' AND "
                "wait_event_type = "
                "'Lock'");
            return r[0][0] == std::optional<std::string>("1");
        },
        20s, "the increment to wait for the lock");
    const auto t0 = std::chrono::steady_clock::now();
    auto r = c.request("GET", "/kv/k");
    EXPECT_EQ(r.status, 503u) << r.body;
    EXPECT_EQ(r.header("retry-after"), "1");
    EXPECT_EQ(r.header("content-type"), "application/json");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
    EXPECT_EQ(c.request("GET", "/health").status, 200u);  // busy is not down
    lock.release();
    t.join();
    EXPECT_EQ(stuck.status, 200u);
    EXPECT_EQ(stuck.body, "2");
}

TEST_F(serve_pg, a_statement_past_its_deadline_gives_504) {
    const auto port = start("serve_deadline", {"--statement-timeout", "200ms"});
    client c(port);
    ASSERT_EQ(c.request("PUT", "/kv/k", "1").status, 204u);
    table_lock lock(server->conninfo());
    auto r = c.request("POST", "/kv/k/incr");
    EXPECT_EQ(r.status, 504u) << r.body;
    EXPECT_EQ(r.header("content-type"), "application/json");
    lock.release();
    EXPECT_EQ(c.request("GET", "/kv/k").body, "1");  // rolled back
    EXPECT_EQ(c.request("POST", "/kv/k/incr").body, "2");
}

TEST_F(serve_pg, sigterm_exits_zero_and_leaves_no_backend_and_no_password_anywhere) {
    const auto port = start("serve_stop", {"--threads", "2", "--min-idle", "2"});
    client c(port);
    std::string seen;
    seen += c.request("GET", "/health").body;
    seen += c.request("PUT", "/kv/a", "x").status == 204 ? "" : "put failed";
    seen += c.request("GET", "/metrics").body;
    seen += c.request("GET", "/kv/missing").body;
    seen += c.request("GET", "/kv/bad%").body;
    EXPECT_GE(server->count_backends("serve_stop"), 1);
    process->signal(SIGTERM);
    EXPECT_EQ(process->wait_exit(), 0);
    test::pg_server::wait_until([&] { return server->count_backends("serve_stop") == 0; }, 20s,
                                "the service's backends to be gone");
    const std::string out = process->stderr_text() + process->stdout_rest();
    EXPECT_EQ(out.find(password), std::string::npos) << out;
    EXPECT_EQ(seen.find(password), std::string::npos);
    EXPECT_NE(out.find("password=***"), std::string::npos) << out;  // the banner shows it masked
}

TEST_F(serve_pg, a_bad_postgresql_url_exits_2_naming_the_flag_without_the_password) {
    auto [status, out] =
        run_to_exit({"serve", "--db",
                     std::string("postgresql://respool:") + password + "@127.0.0.1/db?no_such_option=1"});
    EXPECT_EQ(status, 2);
    EXPECT_NE(out.find("--db"), std::string::npos) << out;
    EXPECT_EQ(out.find(password), std::string::npos) << out;
    auto [status2, out2] = run_to_exit({"serve", "--db", server->conninfo() + " bogus_keyword=1"});
    EXPECT_EQ(status2, 2);
    EXPECT_NE(out2.find("bogus_keyword"), std::string::npos) << out2;
    EXPECT_EQ(out2.find(password), std::string::npos) << out2;
}
