// respool::pg::cluster as the C++ client of bench/failover (bench/peers/PROTOCOL.md, "Failover
// peers"): writers insert into the ledger table on the primary while the harness crashes, promotes or
// delays nodes, and readers ask standbys for the newest row; every request is logged with its outcome.
//
//   respool_failover_client --name NAME --hosts 127.0.0.1:P0,127.0.0.1:P1 --pool N
//
// User, password and database come from libpq's environment (PGUSER, PGPASSWORD, PGDATABASE); the
// cluster's conninfo names the hosts and ports. Settings: each host's pool holds at most N connections,
// failover_wait 5 s (a write that finds no primary waits for one), topology_interval 1 s,
// max_replica_lag 1 s; reads use route::prefer_standby (a standby within the lag bound, else the
// primary). One event loop runs every worker (coroutines); standard input is read on the main thread.
#include <respool/pg/cluster.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace asio = boost::asio;
namespace pg = respool::pg;
using namespace std::chrono_literals;

namespace {

constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);
constexpr const char* insert_sql =
    "INSERT INTO ledger (client, seq) VALUES ($1, $2) RETURNING inet_server_port()";
constexpr const char* newest_sql =
    "SELECT coalesce(max(seq), 0), inet_server_port() FROM ledger WHERE client = $1";

[[noreturn]] void usage(const std::string& why) {
    std::fprintf(stderr,
                 "respool_failover_client: %s\nusage: respool_failover_client --name NAME --hosts H:P,H:P "
                 "--pool N   (PGUSER, PGPASSWORD, PGDATABASE)\n",
                 why.c_str());
    std::exit(2);
}

std::int64_t unix_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// "127.0.0.1:5432,127.0.0.1:5433" as libpq keywords: host=127.0.0.1,127.0.0.1 port=5432,5433.
std::string conninfo_of(const std::string& hosts) {
    std::string host_list, port_list;
    std::istringstream in(hosts);
    std::string item;
    while (std::getline(in, item, ',')) {
        const auto colon = item.rfind(':');
        if (colon == std::string::npos || colon == 0 || colon + 1 == item.size())
            usage("--hosts wants host:port items, got '" + item + "'");
        host_list += (host_list.empty() ? "" : ",") + item.substr(0, colon);
        port_list += (port_list.empty() ? "" : ",") + item.substr(colon + 1);
    }
    if (host_list.empty()) usage("--hosts is empty");
    std::string c = "host=" + host_list + " port=" + port_list;
    // libpq would read these from the environment too; named here so that every host's pool has them.
    if (const char* u = std::getenv("PGUSER")) c += std::string(" user=") + u;
    if (const char* d = std::getenv("PGDATABASE")) c += std::string(" dbname=") + d;
    return c;
}

// The message of a failure on one line (diagnostics when the driver gave any, else the code's).
std::string one_line(const respool::error_code& ec, const respool::diagnostics& d) {
    std::string m = d.message.empty() ? ec.message() : ec.message() + ": " + d.message;
    for (char& ch : m)
        if (ch == '\n' || ch == '\r' || ch == '\t') ch = ' ';
    return m;
}

// Every worker and log of the client; touched only on the event loop's thread. Log lines are flushed
// one by one: the harness reads the logs while they grow.
class client {
public:
    client(asio::io_context& io, std::string name, const std::string& hosts, std::size_t pool_max)
        : io_(io), name_(std::move(name)), db_(io.get_executor(), config(hosts, pool_max)) {}

    static pg::cluster_config config(const std::string& hosts, std::size_t pool_max) {
        pg::cluster_config c;
        c.pool.conninfo = conninfo_of(hosts);
        c.pool.max = pool_max;
        c.failover_wait = 5s;
        c.topology_interval = 1s;
        c.max_replica_lag = 1s;
        return c;
    }

    pg::cluster& db() { return db_; }

    // `write|read WORKERS INTERVAL_MS LOGFILE` -> "started" (or "error ...").
    std::string start(bool writes, std::size_t workers, std::chrono::milliseconds interval,
                      const std::string& path) {
        auto log = std::make_shared<std::ofstream>(path, std::ios::trunc);
        if (!*log) return "error cannot open " + path;
        logs_.push_back(log);
        stopping_ = false;
        for (std::size_t i = 0; i < workers; ++i) {
            ++running_;
            asio::co_spawn(io_, worker(writes, interval, log), asio::detached);
        }
        return "started";
    }

    // Completes `done` once every worker has finished its request in flight and the logs are closed.
    void stop(std::promise<void>& done) {
        stopping_ = true;
        stopped_ = &done;
        finish_if_idle();
    }

private:
    asio::awaitable<void> worker(bool writes, std::chrono::milliseconds interval,
                                 std::shared_ptr<std::ofstream> log) {
        asio::steady_timer pause(io_);
        while (!stopping_) {
            const auto t0 = std::chrono::steady_clock::now();
            const std::int64_t start = unix_ns();
            respool::diagnostics diag;
            std::int64_t value = 0;
            respool::error_code ec;
            pg::result r;
            if (writes) {
                value = ++seq_;
                std::tie(ec, r) =
                    co_await db_.async_query(insert_sql, pg::params(name_, value), &diag, tuple_awaitable);
            } else {
                std::tie(ec, r) =
                    co_await db_.async_query(pg::read_options{.to = pg::route::prefer_standby}, newest_sql,
                                             pg::params(name_), &diag, tuple_awaitable);
            }
            const std::int64_t end = unix_ns();
            if (ec) {
                *log << "err " << start << ' ' << end << ' ' << (writes ? std::to_string(value) : "-") << ' '
                     << one_line(ec, diag) << std::endl;
            } else {
                const std::int64_t shown = writes ? value : r.get<std::int64_t>(0, 0);
                *log << "ok " << start << ' ' << end << ' ' << shown << ' '
                     << r.get<std::int32_t>(0, writes ? 0 : 1) << std::endl;
            }
            const auto rest = interval - (std::chrono::steady_clock::now() - t0);
            if (rest > 0s) {
                pause.expires_after(rest);
                co_await pause.async_wait(tuple_awaitable);
            }
        }
        --running_;
        finish_if_idle();
    }

    void finish_if_idle() {
        if (running_ != 0 || stopped_ == nullptr) return;
        for (auto& l : logs_) l->close();
        logs_.clear();
        std::exchange(stopped_, nullptr)->set_value();
    }

    asio::io_context& io_;
    std::string name_;
    pg::cluster db_;
    std::int64_t seq_ = 0;  // the last sequence number handed to a writer
    bool stopping_ = false;
    std::size_t running_ = 0;
    std::vector<std::shared_ptr<std::ofstream>> logs_;
    std::promise<void>* stopped_ = nullptr;
};

// Runs `fn` on the event loop and returns its result to the calling (main) thread.
template <class F>
auto on_loop(asio::io_context& io, F fn) {
    std::packaged_task<decltype(fn())()> task(std::move(fn));
    auto result = task.get_future();
    asio::post(io, [&task] { task(); });
    return result.get();
}

}  // namespace

int main(int argc, char** argv) {
    std::string name, hosts;
    std::size_t pool_max = 0;
    for (int i = 1; i < argc; i += 2) {
        const std::string k = argv[i];
        if (i + 1 >= argc) usage(k + " wants a value");
        const std::string v = argv[i + 1];
        if (k == "--name")
            name = v;
        else if (k == "--hosts")
            hosts = v;
        else if (k == "--pool")
            pool_max = std::strtoul(v.c_str(), nullptr, 10);
        else
            usage("unknown option " + k);
    }
    if (name.empty() || hosts.empty() || pool_max == 0 || pool_max > 1000)
        usage("--name, --hosts and --pool (1..1000) are required");

    asio::io_context io(1);
    auto guard = asio::make_work_guard(io);
    std::thread loop([&io] { io.run(); });
    int status = 0;
    try {
        auto c = on_loop(io, [&] { return std::make_unique<client>(io, name, hosts, pool_max); });
        // Roles known before the first command, as the other clients know theirs once their pools exist.
        std::promise<void> ready;
        asio::post(io, [&] { c->db().async_wait_ready([&](respool::error_code) { ready.set_value(); }); });
        ready.get_future().wait();
        std::cout << "ready" << std::endl;
        std::string line;
        while (std::getline(std::cin, line)) {
            std::istringstream in(line);
            std::string cmd, path;
            long workers = 0, interval = -1;
            if (!(in >> cmd)) continue;
            if (cmd == "quit") break;
            std::string reply;
            if (cmd == "write" || cmd == "read") {
                if (!(in >> workers >> interval >> path) || workers < 1 || interval < 0)
                    reply = "error usage: " + cmd + " WORKERS INTERVAL_MS LOGFILE";
                else
                    reply = on_loop(io, [&] {
                        return c->start(cmd == "write", static_cast<std::size_t>(workers),
                                        std::chrono::milliseconds(interval), path);
                    });
            } else if (cmd == "stop") {
                std::promise<void> done;
                asio::post(io, [&] { c->stop(done); });
                done.get_future().wait();
                reply = "stopped";
            } else {
                reply = "error unknown command " + cmd + " (write, read, stop, quit)";
            }
            std::cout << reply << std::endl;
        }
        std::promise<void> done;
        asio::post(io, [&] { c->stop(done); });
        done.get_future().wait();
        on_loop(io, [&] {
            c.reset();  // closes the cluster on its own thread
            return 0;
        });
    } catch (const std::exception& e) {
        std::cerr << "respool_failover_client: " << e.what() << "\n";
        status = 1;
    }
    guard.reset();
    io.stop();
    loop.join();
    return status;
}
