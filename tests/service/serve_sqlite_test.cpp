// `respool serve` on an SQLite file, as a user runs it: the real binary, a real HTTP client, every row
// of docs/09-service.md's endpoint table, the 400/404/405/413 cases, exact concurrent increments, 503 +
// Retry-After when another process holds the write lock, /metrics checked by promtool against the requests
// sent, a database that is unreachable at startup and then appears, SIGTERM with a request in flight, and
// exit status 2 for bad flags.
#include "serve_support.hpp"

#include <respool/version.h>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <csignal>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

using namespace serve_test;
using namespace std::chrono_literals;

namespace {

// A service on a fresh SQLite file; the ready line read.
struct service {
    explicit service(std::vector<std::string> extra = {}) {
        std::vector<std::string> args{"serve", "--db", "sqlite:" + dir.path + "/kv.db", "--listen",
                                      "127.0.0.1:0"};
        args.insert(args.end(), extra.begin(), extra.end());
        process.emplace(args);
        port = process->wait_listening();
    }
    temp_dir dir;
    std::optional<serve_process> process;
    std::uint16_t port = 0;
};

// A write transaction held from another SQLite handle on the service's file (another process, as far
// as SQLite's locks go).
struct write_lock {
    explicit write_lock(const std::string& path) {
        EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
        EXPECT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
    }
    void release() {
        if (db) {
            sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
            sqlite3_close(db);
            db = nullptr;
        }
    }
    ~write_lock() { release(); }
    sqlite3* db = nullptr;
};

}  // namespace

TEST(serve_sqlite, every_row_of_the_spec_table_answers_as_specified) {
    service s;
    client c(s.port);

    auto health = c.request("GET", "/health");
    EXPECT_EQ(health.status, 200u);
    EXPECT_EQ(health.body.rfind(R"({"status":"up")", 0), 0u) << health.body;
    EXPECT_NE(health.body.find(R"("waiting":)"), std::string::npos) << health.body;
    EXPECT_EQ(health.header("content-type"), "application/json");

    // Values are arbitrary bytes, returned exactly.
    std::string value("a\0b\xff\r\n", 6);
    EXPECT_EQ(c.request("PUT", "/kv/bin.key_1-x", value).status, 204u);
    auto got = c.request("GET", "/kv/bin.key_1-x");
    EXPECT_EQ(got.status, 200u);
    EXPECT_EQ(got.body, value);
    EXPECT_EQ(c.request("PUT", "/kv/bin.key_1-x", "second").status, 204u);  // upsert
    EXPECT_EQ(c.request("GET", "/kv/bin.key_1-x").body, "second");
    EXPECT_EQ(c.request("PUT", "/kv/empty", "").status, 204u);
    got = c.request("GET", "/kv/empty");
    EXPECT_EQ(got.status, 200u);
    EXPECT_EQ(got.body, "");

    EXPECT_EQ(c.request("DELETE", "/kv/bin.key_1-x").status, 204u);
    EXPECT_EQ(c.request("DELETE", "/kv/bin.key_1-x").status, 404u);
    auto missing = c.request("GET", "/kv/bin.key_1-x");
    EXPECT_EQ(missing.status, 404u);
    EXPECT_EQ(missing.header("content-type"), "application/json");
    EXPECT_NE(missing.body.find(R"("message":)"), std::string::npos);

    // incr: a missing key starts at 0; the new value without newline.
    auto one = c.request("POST", "/kv/counter/incr");
    EXPECT_EQ(one.status, 200u);
    EXPECT_EQ(one.body, "1");
    EXPECT_EQ(c.request("POST", "/kv/counter/incr").body, "2");
    EXPECT_EQ(c.request("GET", "/kv/counter").body, "2");
    c.request("PUT", "/kv/plus", "+41");
    EXPECT_EQ(c.request("POST", "/kv/plus/incr").body, "42");
    c.request("PUT", "/kv/min", "-9223372036854775808");
    EXPECT_EQ(c.request("POST", "/kv/min/incr").body, "-9223372036854775807");
    c.request("PUT", "/kv/neg", "-1");
    EXPECT_EQ(c.request("POST", "/kv/neg/incr").body, "0");
    // 409: not an integer, beyond 64 bits, an overflow; the stored value is left as it was.
    std::vector<std::string> not_integers{
        "abc", "", "1.5", " 1", "1 ", "+-1", "--1", "0x10", "99999999999999999999"};
    for (const auto& v : not_integers) {
        c.request("PUT", "/kv/bad", v);
        auto r = c.request("POST", "/kv/bad/incr");
        EXPECT_EQ(r.status, 409u) << "'" << v << "'";
        EXPECT_EQ(r.header("content-type"), "application/json");
        EXPECT_EQ(c.request("GET", "/kv/bad").body, v);
    }
    c.request("PUT", "/kv/max", "9223372036854775807");
    EXPECT_EQ(c.request("POST", "/kv/max/incr").status, 409u);
    EXPECT_EQ(c.request("GET", "/kv/max").body, "9223372036854775807");

    auto metrics = c.request("GET", "/metrics");
    EXPECT_EQ(metrics.status, 200u);
    EXPECT_EQ(metrics.header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
    // The version, the pool's floor and its creation times beside the other families; promtool accepts it
    // all.
    EXPECT_EQ(promtool_problems(metrics.body), "") << metrics.body;
    for (const std::string line :
         {"\nrespool_build_info{version=\"" RESPOOL_VERSION_STRING "\"} 1\n",
          "\n# TYPE respool_pool_resources_min gauge\n", "\n# TYPE respool_pool_create_seconds histogram\n"})
        EXPECT_NE(metrics.body.find(line), std::string::npos) << line << "--- in:\n" << metrics.body;
    EXPECT_TRUE(sample(metrics.body, R"(respool_pool_resources_min{pool="writer",thread="0"})"))
        << metrics.body;
    // Every bound of the pools' and requests' histograms, as /metrics always wrote them (dashboards
    // select buckets by their le), not the library's shorter default.
    EXPECT_TRUE(sample(
        metrics.body, R"(respool_pool_acquire_wait_seconds_bucket{pool="writer",thread="0",le="0.000002"})"));
    EXPECT_TRUE(sample(
        metrics.body,
        R"(respool_http_request_duration_seconds_bucket{route="/kv/{key}",method="GET",le="0.000512"})"));

    // Everything above went over one keep-alive connection.
    EXPECT_EQ(c.connects(), 1);
}

TEST(serve_sqlite, bad_keys_paths_methods_and_bodies_get_400_404_405_413) {
    service s;
    client c(s.port);
    EXPECT_EQ(c.request("GET", "/kv/" + std::string(200, 'k')).status, 404u);  // valid, absent
    EXPECT_EQ(c.request("GET", "/kv/" + std::string(201, 'k')).status, 400u);
    EXPECT_EQ(c.request("GET", "/kv/").status, 400u);
    EXPECT_EQ(c.request("GET", "/kv/a%20b").status, 400u);  // not percent-decoded
    EXPECT_EQ(c.request("GET", "/kv/%41").status, 400u);
    EXPECT_EQ(c.request("PUT", "/kv/a:b", "x").status, 400u);
    EXPECT_EQ(c.request("POST", "/kv/a+b/incr").status, 400u);
    auto bad = c.request("GET", "/kv/a$b");
    EXPECT_EQ(bad.status, 400u);
    EXPECT_EQ(bad.header("content-type"), "application/json");

    EXPECT_EQ(c.request("GET", "/").status, 404u);
    EXPECT_EQ(c.request("GET", "/kv").status, 404u);
    EXPECT_EQ(c.request("GET", "/kv/a/b").status, 404u);
    EXPECT_EQ(c.request("GET", "/healthz").status, 404u);

    auto wrong = c.request("POST", "/kv/a");
    EXPECT_EQ(wrong.status, 405u);
    EXPECT_FALSE(wrong.header("allow").empty());
    EXPECT_EQ(c.request("PATCH", "/kv/a").status, 405u);
    EXPECT_EQ(c.request("GET", "/kv/a/incr").status, 405u);
    EXPECT_EQ(c.request("PUT", "/kv/a/incr").status, 405u);
    EXPECT_EQ(c.request("DELETE", "/health").status, 405u);
    EXPECT_EQ(c.request("POST", "/metrics").status, 405u);

    const std::string mib(1024 * 1024, 'v');
    EXPECT_EQ(c.request("PUT", "/kv/big", mib).status, 204u);
    EXPECT_EQ(c.request("GET", "/kv/big").body, mib);
    auto too_big = c.request("PUT", "/kv/big", mib + "!");
    EXPECT_EQ(too_big.status, 413u);
    EXPECT_EQ(too_big.header("content-type"), "application/json");
    EXPECT_EQ(c.request("GET", "/kv/big").body.size(), mib.size());  // a new connection, the old value

    // A chunked body that grows past the limit.
    std::string chunked = "PUT /kv/chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 17; ++i) chunked += "10000\r\n" + std::string(0x10000, 'c') + "\r\n";
    chunked += "0\r\n\r\n";
    EXPECT_EQ(c.raw(chunked).status, 413u);
    EXPECT_EQ(c.raw("NOT HTTP AT ALL\r\n\r\n").status, 400u);
    // Lines ending in a bare LF (or holding a bare CR) are refused at once, also when the header is not
    // complete yet (each is sent whole and never completed): Beast's parser alone waits for a "\r\n\r\n" that
    // such a header never sends, and the session closed without an answer at its idle timeout (60 s):
    // the read of the response failed.
    EXPECT_EQ(c.raw("GET /health HTTP/1.1\nHost: x\n\n").status, 400u);
    EXPECT_EQ(c.raw("GET /health HTTP/1.1\n").status, 400u);
    EXPECT_EQ(c.raw("GET /health HTTP/1.1\r\nHost: x\n").status, 400u);
    EXPECT_EQ(c.raw("GET /health HTTP/1.1\r\nHost: x\r\n\n").status, 400u);
    EXPECT_EQ(c.raw("GET /health HTTP/1.1\r\nHost: x\rY").status, 400u);  // a bare CR, the same way
    EXPECT_EQ(c.request("GET", "/health").status, 200u);                  // CRLF, as ever
}

TEST(serve_sqlite, concurrent_increments_on_two_loops_are_exact) {
    service s({"--threads", "2"});
    std::vector<std::thread> clients;
    std::atomic<int> ok{0};
    for (int i = 0; i < 8; ++i)
        clients.emplace_back([&] {
            client c(s.port);
            for (int k = 0; k < 50; ++k)
                if (c.request("POST", "/kv/hits/incr").status == 200) ++ok;
        });
    for (auto& t : clients) t.join();
    EXPECT_EQ(ok.load(), 400);
    client c(s.port);
    EXPECT_EQ(c.request("GET", "/kv/hits").body, "400");
}

TEST(serve_sqlite, a_write_lock_held_elsewhere_gives_503_with_retry_after_and_health_stays_up) {
    service s({"--busy-timeout", "200ms", "--borrow-timeout", "300ms"});
    client c(s.port);
    ASSERT_EQ(c.request("PUT", "/kv/k", "1").status, 204u);  // the table exists
    write_lock lock(s.dir.path + "/kv.db");

    const auto t0 = std::chrono::steady_clock::now();
    auto r = c.request("POST", "/kv/k/incr");
    EXPECT_EQ(r.status, 503u) << r.body;
    EXPECT_EQ(r.header("retry-after"), "1");
    EXPECT_EQ(r.header("content-type"), "application/json");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);  // bounded by the busy timeout, never a hang
    EXPECT_EQ(c.request("PUT", "/kv/k", "5").status, 503u);
    EXPECT_EQ(c.request("GET", "/kv/k").body, "1");       // readers are not blocked by a writer (WAL)
    EXPECT_EQ(c.request("GET", "/health").status, 200u);  // a busy database is still up

    lock.release();
    r = c.request("POST", "/kv/k/incr");
    EXPECT_EQ(r.status, 200u);
    EXPECT_EQ(r.body, "2");
}

TEST(serve_sqlite, metrics_pass_promtool_and_count_the_requests_sent) {
    service s({"--threads", "2"});
    // Two clients: the shared acceptor gives them to different loops, whose counters are merged.
    client a(s.port), b(s.port);
    for (int i = 0; i < 3; ++i) a.request("PUT", "/kv/m" + std::to_string(i), "v");
    for (int i = 0; i < 5; ++i) b.request("GET", "/kv/m" + std::to_string(i));  // 3 x 200, 2 x 404
    b.request("POST", "/kv/c/incr");
    a.request("GET", "/nowhere");
    a.request("GET", "/kv/bad%key");
    a.request("DELETE", "/health");
    auto m = b.request("GET", "/metrics");
    ASSERT_EQ(m.status, 200u);
    EXPECT_EQ(promtool_problems(m.body), "");
    auto count = [&](const std::string& labels) {
        return sample(m.body, "respool_http_requests_total{" + labels + "}").value_or(-1);
    };
    EXPECT_EQ(count(R"(route="/kv/{key}",method="PUT",status="204")"), 3);
    EXPECT_EQ(count(R"(route="/kv/{key}",method="GET",status="200")"), 3);
    EXPECT_EQ(count(R"(route="/kv/{key}",method="GET",status="404")"), 2);
    EXPECT_EQ(count(R"(route="/kv/{key}/incr",method="POST",status="200")"), 1);
    EXPECT_EQ(count(R"(route="unmatched",method="GET",status="404")"), 1);
    EXPECT_EQ(count(R"(route="/kv/{key}",method="GET",status="400")"), 1);
    EXPECT_EQ(count(R"(route="/health",method="DELETE",status="405")"), 1);
    EXPECT_EQ(
        sample(m.body, R"(respool_http_request_duration_seconds_count{route="/kv/{key}",method="GET"})"),
        6);  // with the 400
    // The pools' wait and hold histograms count the borrows: 3 PUTs and an incr on the writers.
    auto both_loops = [&](const std::string& family) {
        return sample(m.body, family + R"({pool="writer",thread="0"})").value_or(0) +
               sample(m.body, family + R"({pool="writer",thread="1"})").value_or(0);
    };
    EXPECT_GE(both_loops("respool_pool_acquire_wait_seconds_count"), 4);
    EXPECT_GE(both_loops("respool_pool_hold_seconds_count"), 4);
    // Pool families for every loop's writer and readers.
    EXPECT_TRUE(sample(m.body, R"(respool_pool_resources_max{pool="writer",thread="1"})"));
    EXPECT_TRUE(sample(m.body, R"(respool_pool_acquires_total{pool="reader",thread="0"})"));
}

TEST(serve_sqlite, an_unreachable_database_at_startup_is_served_once_it_appears) {
    temp_dir dir;
    const std::string folder = dir.path + "/later";
    serve_process p({"serve", "--db", "sqlite:" + folder + "/kv.db", "--listen", "127.0.0.1:0",
                     "--borrow-timeout", "500ms"});
    client c(p.wait_listening());
    auto h = c.request("GET", "/health");
    EXPECT_EQ(h.status, 503u);
    // Why: the file cannot be opened (SQLite's words, the path), since the first check.
    EXPECT_TRUE(h.body.starts_with(R"({"status":"down","reason":"database file cannot be opened: )"))
        << h.body;
    EXPECT_NE(h.body.find(folder + "/kv.db"), std::string::npos) << h.body;
    EXPECT_NE(h.body.find(R"(","since":")"), std::string::npos) << h.body;
    const auto t0 = std::chrono::steady_clock::now();
    auto r = c.request("GET", "/kv/a");
    EXPECT_EQ(r.status, 503u) << r.body;
    EXPECT_EQ(r.header("retry-after"), "1");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);

    std::filesystem::create_directory(folder);
    wait_until([&] { return c.request("GET", "/health").status == 200; }, 20s, "/health up");
    EXPECT_EQ(c.request("PUT", "/kv/a", "x").status, 204u);
    EXPECT_EQ(c.request("GET", "/kv/a").body, "x");
    p.signal(SIGTERM);
    EXPECT_EQ(p.wait_exit(), 0);
    const std::string err = p.stderr_text();
    EXPECT_NE(err.find("database unreachable: database file cannot be opened: "), std::string::npos) << err;
    EXPECT_NE(err.find("database reachable again after "), std::string::npos) << err;
}

// A statement the database refuses is a 500 whose body has the database's words in "detail".
TEST(serve_sqlite, a_database_error_is_a_500_with_the_database_s_words) {
    temp_dir dir;
    const std::string file = dir.path + "/kv.db";
    serve_process p({"serve", "--db", "sqlite:" + file, "--listen", "127.0.0.1:0"});
    client c(p.wait_listening());
    ASSERT_EQ(c.request("PUT", "/kv/a", "1").status, 204u);
    {  // the table becomes a view: a write to it fails in SQLite (not a connection failure)
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
        sqlite3_busy_timeout(db, 5000);
        ASSERT_EQ(sqlite3_exec(db,
                               "ALTER TABLE respool_kv RENAME TO kv_data; "
                               "CREATE VIEW respool_kv AS SELECT * FROM kv_data",
                               nullptr, nullptr, nullptr),
                  SQLITE_OK)
            << sqlite3_errmsg(db);
        sqlite3_close(db);
    }
    auto r = c.request("PUT", "/kv/b", "2");
    EXPECT_EQ(r.status, 500u) << r.body;
    EXPECT_NE(r.body.find(R"("detail":"cannot modify respool_kv because it is a view)"), std::string::npos)
        << r.body;
    p.signal(SIGTERM);
    EXPECT_EQ(p.wait_exit(), 0);
    const std::string err = p.stderr_text();
    EXPECT_NE(err.find("error respool serve: PUT /kv/{key}: cannot modify respool_kv because it is a view"),
              std::string::npos)
        << err;
}

TEST(serve_sqlite, sigterm_lets_the_request_in_flight_finish_then_exits_zero) {
    service s({"--busy-timeout", "20s"});
    client c(s.port);
    ASSERT_EQ(c.request("PUT", "/kv/k", "1").status, 204u);
    auto lock = std::make_unique<write_lock>(s.dir.path + "/kv.db");
    response in_flight;
    std::thread t([&] { in_flight = client(s.port).request("POST", "/kv/k/incr"); });
    // The increment holds the writer, waiting for the lock: /health shows it active.
    wait_until(
        [&] {
            return c.request("GET", "/health").body.find(R"("pool":"writer","idle":0,"active":1)") !=
                   std::string::npos;
        },
        20s, "the increment to hold the writer");
    s.process->signal(SIGTERM);
    // No new connection is accepted once the signal is handled, the request in flight goes on.
    wait_until([&] { return s.process->stderr_text().find("SIGTERM") != std::string::npos; }, 20s,
               "the signal to be handled");
    lock.reset();  // the increment can finish now
    t.join();
    EXPECT_EQ(in_flight.status, 200u);
    EXPECT_EQ(in_flight.body, "2");
    EXPECT_FALSE(in_flight.keep_alive);  // the last response of a stopping server
    EXPECT_EQ(s.process->wait_exit(), 0);
    EXPECT_EQ(s.process->stdout_rest(), "");  // the ready line was the only one
}

TEST(serve_sqlite, sigint_on_an_idle_server_exits_zero_at_once) {
    service s;
    client c(s.port);
    EXPECT_EQ(c.request("GET", "/health").status, 200u);  // an idle keep-alive connection stays open
    s.process->signal(SIGINT);
    EXPECT_EQ(s.process->wait_exit(5s), 0);
}

TEST(serve_sqlite, idle_connections_and_slow_requests_are_closed_at_their_timeouts) {
    service s({"--idle-timeout", "300ms", "--request-timeout", "300ms"});
    // Nothing sent: the keep-alive wait ends at the idle timeout.
    auto idle = time_until_closed(s.port, "", 20s);
    ASSERT_TRUE(idle);
    EXPECT_GE(*idle, 250ms);
    // A header, then a body that never comes: the request timeout.
    auto slow =
        time_until_closed(s.port, "PUT /kv/slow HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc", 20s);
    ASSERT_TRUE(slow);
    EXPECT_GE(*slow, 250ms);
    // A connection that keeps asking is not cut.
    client c(s.port);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(c.request("GET", "/health").status, 200u);
    EXPECT_EQ(c.connects(), 1);
    EXPECT_EQ(client(s.port).request("GET", "/kv/slow").status, 404u);  // the partial PUT stored nothing
}

TEST(serve_sqlite, bad_flags_and_urls_exit_2_naming_them) {
    struct bad {
        std::vector<std::string> args;
        std::string named;
    };
    std::vector<bad> cases;
    cases.push_back({{"serve", "--db", "foo"}, "--db"});
    cases.push_back({{"serve", "--db", "sqlite:"}, "--db"});
    cases.push_back({{"serve", "--db", "mysql://u@h/db"}, "--db"});
    cases.push_back({{"serve", "--borrow-timeout", "5"}, "--borrow-timeout"});
    cases.push_back({{"serve", "--statement-timeout", "fast"}, "--statement-timeout"});
    cases.push_back({{"serve", "--listen", "nowhere"}, "--listen"});
    cases.push_back({{"serve", "--listen", "127.0.0.1:70000"}, "--listen"});
    cases.push_back({{"serve", "--threads", "0"}, "--threads"});
    cases.push_back({{"serve", "--max", "x"}, "--max"});
    cases.push_back({{"serve", "--bogus"}, "--bogus"});
    for (const auto& c : cases) {
        auto [status, out] = run_to_exit(c.args);
        EXPECT_EQ(status, 2) << c.args.back() << ": " << out;
        EXPECT_NE(out.find(c.named), std::string::npos) << out;
    }
}
