// Three `respool serve --budget auto` processes under load against a server with max_connections 40
// (the pg_cluster_budget fixture): the budget they share is B = 40 - superuser_reserved_connections 3
// - reserve 3 = 34. Every client increments one key, so every request holds its connection while it
// waits for the row lock: each process's demand (12 clients + 1) is more than a third of B, and the
// shares are tight.
//
// A sampler thread reads the table and pg_stat_activity every 50 ms: the granted shares never sum
// past B, no process holds more pooled connections than its share allows, and the role's backends
// never pass what the server accepts. Processes start, stop (SIGTERM) and are killed (SIGKILL); the
// shares, read from each process's /health, settle within 2 s of a start or stop and 6 s of a kill.
// No request meets 53300 (the server's log has no "too many clients" line), no live process answers
// a 5xx, and no acknowledged increment is lost.
#include "pg_server.hpp"
#include "serve_support.hpp"

#include <boost/json/parse.hpp>

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <atomic>
#include <csignal>
#include <map>
#include <mutex>
#include <thread>

using namespace serve_test;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

const std::string role = "serve_budget";
constexpr std::int64_t B = 34;
constexpr std::int64_t server_accepts = 37;  // max_connections - superuser_reserved_connections
constexpr int clients_per_process = 12;

// The fixture's conninfo with the test role, and an application_name of its own per process.
std::string conninfo_for(const std::string& base, const std::string& app) {
    std::string c = base;
    auto replace = [&](const std::string& key, const std::string& value) {
        const auto at = c.find(key + "=");
        if (at == std::string::npos) throw std::runtime_error("no " + key + " in the fixture's conninfo");
        const auto end = c.find(' ', at);
        c.replace(at, (end == std::string::npos ? c.size() : end) - at, key + "=" + value);
    };
    replace("user", role);
    replace("password", "serve-budget-secret");
    return c + " application_name=" + app;
}

// One `respool serve` process and its clients.
struct instance {
    std::string app;  // serve_budget_<name>: its pooled connections in pg_stat_activity
    std::unique_ptr<serve_process> proc{};
    std::uint16_t port = 0;
    std::vector<std::thread> clients{};
    std::atomic<bool> stop{false};
    std::atomic<bool> killed{false};  // failures after a SIGKILL are the kill's, not the service's
    std::atomic<std::uint64_t> acked{0};
    std::atomic<std::uint64_t> failed{0};
    std::mutex m{};
    std::string last_failure{};

    void start(const std::string& base, std::map<std::string, pid_t>& pids, std::mutex& pids_m) {
        proc = std::make_unique<serve_process>(std::vector<std::string>{
            "serve", "--db", conninfo_for(base, app), "--listen", "127.0.0.1:0", "--max", "20", "--budget",
            "auto", "--budget-schema", "fleet", "--borrow-timeout", "5s"});
        {
            std::lock_guard lock(pids_m);
            pids[app] = proc->pid();
        }
        port = proc->wait_listening();
        for (int i = 0; i < clients_per_process; ++i)
            clients.emplace_back([this] {
                try {
                    client c(port);
                    while (!stop) {
                        const response r = c.request("POST", "/kv/hits/incr");
                        if (r.status == 200) {
                            ++acked;
                        } else {
                            ++failed;
                            std::lock_guard lock(m);
                            last_failure = std::to_string(r.status) + " " + r.body;
                        }
                    }
                } catch (const std::exception& e) {
                    if (killed) return;
                    ++failed;
                    std::lock_guard lock(m);
                    last_failure = e.what();
                }
            });
    }
    ~instance() {  // a test that failed half-way: the process goes first, so that no client hangs
        if (clients.empty()) return;
        killed = true;
        proc.reset();
        stop_clients();
    }
    void stop_clients() {
        stop = true;
        for (auto& t : clients) t.join();
        clients.clear();
    }
};

// What one process's /health says of its pool's share.
struct share {
    bool read = false;
    std::int64_t members = 0, granted = 0, target = 0, demand = 0, connections = 0;
    bool degraded = false;
};

share share_of(std::uint16_t port) {
    share s;
    try {
        client c(port);
        const response r = c.request("GET", "/health");
        const boost::json::value health = boost::json::parse(r.body);
        const auto& pool = health.at("pools").at(0).as_object();
        const auto& b = pool.at("budget").as_object();
        s.members = b.at("members").to_number<std::int64_t>();
        s.granted = b.at("granted").to_number<std::int64_t>();
        s.target = b.at("target").to_number<std::int64_t>();
        s.demand = b.at("demand").to_number<std::int64_t>();
        s.connections = b.at("connections").to_number<std::int64_t>();
        s.degraded = !b.at("degraded").is_null();
        s.read = true;
    } catch (const std::exception&) {
    }
    return s;
}

// Polls every live process's /health until each counts `live.size()` members and holds its target;
// returns how long it took (or `limit` + 1 s).
clock_type::duration settle(const std::vector<instance*>& live, clock_type::time_point since,
                            clock_type::duration limit) {
    while (clock_type::now() - since < limit) {
        bool done = true;
        std::int64_t granted = 0, demand = 0;
        for (instance* i : live) {
            const share s = share_of(i->port);
            // Its load seen (a demand above an idle pool's 2), every member counted, its target held.
            done = done && s.read && !s.degraded && s.members == static_cast<std::int64_t>(live.size()) &&
                   s.granted == s.target && s.demand > 2;
            granted += s.granted;
            demand += s.demand;
        }
        // And the division complete: all of B handed out when the demands exceed it.
        if (done && granted == std::min(B, demand)) return clock_type::now() - since;
        std::this_thread::sleep_for(20ms);  // a poll period, not a guess: the loop waits on the state
    }
    return limit + 1s;
}

long long ms(clock_type::duration d) {
    return static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

// The sampler: shares, then backends, then shares again, every 50 ms, on one connection of its own.
struct sampler {
    std::map<std::string, pid_t>& pids;
    std::mutex& pids_m;
    std::atomic<bool> running{true};
    std::atomic<std::uint64_t> samples{0};
    std::int64_t worst_backends = 0, worst_granted = 0, worst_excess = -1;
    std::string excess_detail, error;
    std::thread thread;

    sampler(const std::string& admin_conninfo, std::map<std::string, pid_t>& p, std::mutex& m)
        : pids(p), pids_m(m) {
        thread = std::thread([this, admin_conninfo] { run(admin_conninfo); });
    }
    ~sampler() {
        if (thread.joinable()) finish();
    }
    void finish() {
        running = false;
        thread.join();
    }

private:
    using rows = std::vector<std::vector<std::string>>;
    static rows query(PGconn* c, const std::string& sql) {
        PGresult* r = PQexec(c, sql.c_str());
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            const std::string e = PQerrorMessage(c);
            PQclear(r);
            throw std::runtime_error(e);
        }
        rows out;
        for (int i = 0; i < PQntuples(r); ++i) {
            out.emplace_back();
            for (int j = 0; j < PQnfields(r); ++j) out.back().emplace_back(PQgetvalue(r, i, j));
        }
        PQclear(r);
        return out;
    }
    // pid -> granted
    static std::map<pid_t, std::int64_t> shares(PGconn* c, std::int64_t& worst) {
        std::map<pid_t, std::int64_t> out;
        std::int64_t sum = 0;
        for (const auto& row : query(c, "SELECT pid, granted FROM fleet.respool_budget")) {
            out[std::stoi(row[0])] = std::stoll(row[1]);
            sum += std::stoll(row[1]);
        }
        worst = std::max(worst, sum);
        return out;
    }
    void run(const std::string& conninfo) {
        PGconn* c = PQconnectdb(conninfo.c_str());
        try {
            if (PQstatus(c) != CONNECTION_OK) throw std::runtime_error(PQerrorMessage(c));
            while (running && query(c, "SELECT to_regclass('fleet.respool_budget') IS NOT NULL")[0][0] != "t")
                std::this_thread::sleep_for(10ms);
            while (running) {
                const auto before = shares(c, worst_granted);
                const auto backends = query(c,
                                            "SELECT application_name, count(*) FROM pg_stat_activity "
                                            "WHERE usename = '" +
                                                role + "' GROUP BY 1");
                const auto after = shares(c, worst_granted);
                std::int64_t all = 0;
                for (const auto& row : backends) {
                    const std::int64_t n = std::stoll(row[1]);
                    all += n;
                    pid_t pid = 0;
                    {
                        std::lock_guard lock(pids_m);
                        if (auto it = pids.find(row[0]); it != pids.end()) pid = it->second;
                    }
                    if (pid == 0) continue;  // a member connection ("respool budget member")
                    std::int64_t g = 0;
                    if (auto it = before.find(pid); it != before.end()) g = it->second;
                    if (auto it = after.find(pid); it != after.end()) g = std::max(g, it->second);
                    // Its share counts its member connection: the pool may hold granted - 1.
                    const std::int64_t excess = n - std::max<std::int64_t>(g - 1, 0);
                    if (excess > worst_excess) {
                        worst_excess = excess;
                        excess_detail =
                            row[0] + ": " + std::to_string(n) + " connections, granted " + std::to_string(g);
                    }
                }
                worst_backends = std::max(worst_backends, all);
                ++samples;
                std::this_thread::sleep_for(50ms);  // the sampling period
            }
        } catch (const std::exception& e) {
            error = e.what();
        }
        PQfinish(c);
    }
};

class serve_budget : public ::testing::Test {
protected:
    void SetUp() override {
        if (!test::pg_server::available()) GTEST_SKIP() << "run through ctest -L integration";
        server.emplace();
        server->query(
            "DROP TABLE IF EXISTS respool_kv; DROP SCHEMA IF EXISTS fleet CASCADE;"
            "DO $$BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = '" +
            role + "') THEN EXECUTE 'DROP OWNED BY " + role + "'; END IF; END$$; DROP ROLE IF EXISTS " +
            role);
        server->query("CREATE ROLE " + role +
                      " LOGIN PASSWORD 'serve-budget-secret';"
                      "CREATE SCHEMA fleet AUTHORIZATION " +
                      role + "; GRANT CREATE, USAGE ON SCHEMA public TO " + role);
    }
    std::optional<test::pg_server> server;
};

TEST_F(serve_budget, three_processes_share_the_server_through_start_stop_and_kill) {
    const std::string base = server->conninfo();
    const std::size_t too_many_before = server->count_log_lines("too many clients");
    std::map<std::string, pid_t> pids;
    std::mutex pids_m;
    sampler watch(base, pids, pids_m);

    instance a{.app = "serve_budget_a"}, b{.app = "serve_budget_b"}, c{.app = "serve_budget_c"},
        c2{.app = "serve_budget_c2"};
    auto start_at = clock_type::now();
    for (instance* i : {&a, &b, &c}) i->start(base, pids, pids_m);
    const auto first = settle({&a, &b, &c}, start_at, 10s);
    std::int64_t sum = 0, demand = 0;
    std::string shares;
    for (instance* i : {&a, &b, &c}) {
        const share s = share_of(i->port);
        sum += s.granted;
        demand += s.demand;
        shares += " " + i->app + " " + std::to_string(s.granted) + "/" + std::to_string(s.demand);
    }
    // Divided by demand: all of B when the demands exceed it, each its demand otherwise.
    EXPECT_EQ(sum, std::min(B, demand)) << "granted/demand:" << shares;
    EXPECT_EQ(share_of(a.port).connections, B);
    {
        const std::string metrics = client(a.port).request("GET", "/metrics").body;
        EXPECT_EQ(sample(metrics, R"(respool_pg_budget_connections{thread="0",pool="postgresql"})"), B);
        EXPECT_EQ(sample(metrics, R"(respool_pg_budget_members{thread="0",pool="postgresql"})"), 3);
        EXPECT_EQ(sample(metrics, R"(respool_pg_budget_degraded{thread="0",pool="postgresql"})"), 0);
        EXPECT_EQ(promtool_problems(metrics), "");
    }

    // A stop: its clients end, then SIGTERM; its row goes once its connections are closed.
    c.stop_clients();
    auto event = clock_type::now();
    c.proc->signal(SIGTERM);
    const auto stopped = settle({&a, &b}, event, 10s);
    EXPECT_EQ(c.proc->wait_exit(), 0) << c.proc->stderr_text();

    // A start (a new process: a new member).
    event = clock_type::now();
    c2.start(base, pids, pids_m);
    const auto started = settle({&a, &b, &c2}, event, 10s);

    // A kill: b's row stays until its lease (3 s) runs out, and the others then take its share.
    b.killed = true;
    event = clock_type::now();
    b.proc->signal(SIGKILL);
    b.proc->wait_exit();
    const auto killed = settle({&a, &c2}, event, 15s);
    b.stop_clients();

    a.stop_clients();
    c2.stop_clients();
    watch.finish();
    std::printf(
        "settle: first %lld ms, stop %lld ms, start %lld ms, kill %lld ms; %llu samples, role "
        "backends max %lld, granted sum max %lld, pool excess over its share %lld\n",
        ms(first), ms(stopped), ms(started), ms(killed),
        static_cast<unsigned long long>(watch.samples.load()), static_cast<long long>(watch.worst_backends),
        static_cast<long long>(watch.worst_granted), static_cast<long long>(watch.worst_excess));

    EXPECT_TRUE(watch.error.empty()) << watch.error;
    EXPECT_GT(watch.samples.load(), 50u);
    EXPECT_LE(watch.worst_granted, B);
    EXPECT_LE(watch.worst_excess, 0) << watch.excess_detail;
    EXPECT_LE(watch.worst_backends, server_accepts);
    EXPECT_LT(first, 5s);  // the first start also makes the table
    EXPECT_LT(stopped, 2s);
    EXPECT_LT(started, 2s);
    EXPECT_LT(killed, 6s);
    EXPECT_EQ(server->count_log_lines("too many clients"), too_many_before);
    std::uint64_t acked = 0;
    for (instance* i : {&a, &b, &c, &c2}) {
        acked += i->acked;
        EXPECT_GT(i->acked.load(), 0u) << i->app;
        EXPECT_EQ(i->failed.load(), 0u) << i->app << ": " << i->last_failure;
        if (!i->proc) continue;
        if (i != &b) {
            EXPECT_EQ(i->proc->stderr_text().find("53300"), std::string::npos) << i->app;
        }
        EXPECT_EQ(i->proc->stderr_text().find("serve-budget-secret"), std::string::npos) << i->app;
    }
    // Every acknowledged increment is in the table (b's in-flight ones at the kill may be there too).
    const auto rows = server->query("SELECT convert_from(v, 'UTF8') FROM respool_kv WHERE k = 'hits'");
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_GE(std::stoull(rows[0][0].value_or("0")), acked);

    for (instance* i : {&a, &c2}) {
        i->proc->signal(SIGTERM);
        EXPECT_EQ(i->proc->wait_exit(), 0) << i->proc->stderr_text();
    }
}

}  // namespace
