#include "demo.hpp"

#include "duration.hpp"
#include "duration_flag.hpp"
#include "health_json.hpp"
#include "report_format.hpp"
#include "server.hpp"

#include <respool/stats.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <stdexcept>
#include <thread>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace respool_cli {
namespace {

std::string show_statuses(const std::map<unsigned, long>& m) {
    std::string out;
    for (const auto& [status, n] : m)
        out += (out.empty() ? "" : " ") + std::to_string(status) + ":" + std::to_string(n);
    return out.empty() ? "-" : out;
}

// The pools' state as /health says it (the demo is the service's client, as a user would be): per
// pool name ("writer", "reader", "postgresql") the sums over the loops, and the worst circuit.
std::string show_pool(const health_reading& p) {
    if (!p.up) return "database DOWN";
    std::string out;
    for (const auto& [name, c] : p.pools)
        out += name + " idle " + std::to_string(c[0]) + " active " + std::to_string(c[1]) + " waiting " +
               std::to_string(c[2]) + "  ";
    return out + "circuit " + std::string(p.circuit == "open" ? "OPEN" : p.circuit);
}

// A folder removed with everything in it when this goes (empty: none).
struct temp_folder {
    std::string path;
    ~temp_folder() {
        std::error_code ec;
        if (!path.empty()) std::filesystem::remove_all(path, ec);
    }
};

std::string make_temp_folder() {
    char tmpl[] = "/tmp/respool-demo.XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("cannot create a temporary folder");
    return tmpl;
}

// `respool serve` on threads of its own, as a user would run it, listening on a free loopback port;
// on a temporary SQLite file (removed at the end) unless --db names a database. The constructor
// returns once it listens, or throws why it did not start.
class demo_service {
public:
    explicit demo_service(const serve_config& flags) : cfg_(flags) {
        cfg_.listen = "127.0.0.1:0";
        if (cfg_.db.empty()) {
            folder_.path = make_temp_folder();
            cfg_.db = "sqlite:" + folder_.path + "/demo.db";
        }
        hooks_.on_listening = [this](const std::string& host_port) {
            announced_ = true;  // touched on the service's thread only
            listening_.set_value(host_port);
        };
        thread_ = std::thread([this] { serve(); });
        try {
            host_port_ = listening_.get_future().get();
        } catch (...) {
            thread_.join();
            throw;
        }
    }
    ~demo_service() { stop(); }
    demo_service(const demo_service&) = delete;
    demo_service& operator=(const demo_service&) = delete;

    const serve_config& config() const { return cfg_; }
    const std::string& host_port() const { return host_port_; }
    // SIGINT or SIGTERM reached the service: it is gone.
    bool ended() const { return ended_; }
    // Shuts the service down gracefully and waits for it.
    void stop() {
        if (!thread_.joinable()) return;
        if (hooks_.stop && !ended_) hooks_.stop();
        thread_.join();
    }

private:
    void serve() {
        try {
            run_serve(cfg_, &hooks_);
        } catch (...) {
            if (!announced_) listening_.set_exception(std::current_exception());
            announced_ = true;
        }
        if (!announced_)
            listening_.set_exception(
                std::make_exception_ptr(std::runtime_error("the service did not start")));
        ended_ = true;
    }

    serve_config cfg_;
    temp_folder folder_;
    serve_hooks hooks_;
    std::promise<std::string> listening_;
    bool announced_ = false;
    std::atomic<bool> ended_{false};
    std::thread thread_;
    std::string host_port_;
};

struct check_result {
    long acknowledged = 0, stored = 0;
    bool ok = false;
    std::string detail;
};

load_settings make_load_settings(const demo_config& cfg, const std::string& host_port) {
    const auto port = static_cast<unsigned short>(std::stoul(host_port.substr(host_port.rfind(':') + 1)));
    load_settings s;
    s.service = asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port);
    s.mix = cfg.mix;
    s.prefix = "demo" + std::to_string(getpid()) + "-" +
               std::to_string(std::chrono::system_clock::now().time_since_epoch().count() % 1000000) + "-";
    s.keys = cfg.keys;
    s.counters = cfg.counters;
    s.value_size = cfg.value_size;
    return s;
}

// What the clients, the reporter and the final check share; one event loop runs them all.
struct demo_run {
    demo_run(const demo_config& c, const demo_service& s)
        : cfg(c),
          service(s),
          target(parse_db_url(s.config().db)),
          load(make_load_settings(c, s.host_port())) {}
    const demo_config& cfg;
    const demo_service& service;
    db_target target;
    load_settings load;
    load_tally tally;
    health_reading last_pool;
    check_result check;
    clock_type::time_point start = clock_type::now();
    bool tty = isatty(STDERR_FILENO) != 0;
};

void print_banner(const demo_run& run) {
    const serve_config& scfg = run.service.config();
    std::printf(
        "respool demo: %s %s, service on http://%s (%zu thread(s), pool max %zu), %d clients, mix "
        "GET:PUT:INCR %s, for %s\n",
        run.target.kind == db_kind::sqlite ? "sqlite" : "postgresql", run.target.shown.c_str(),
        run.service.host_port().c_str(), scfg.threads, scfg.max, run.cfg.clients,
        format_mix(run.cfg.mix).c_str(), format_duration(run.cfg.duration).c_str());
    std::fflush(stdout);  // before the live lines on stderr
}

// One live line: the window's rate and latencies, the statuses so far, the pools.
void print_progress(demo_run& run, clock_type::time_point now, double window_secs) {
    load_tally& t = run.tally;
    char line[512];
    std::snprintf(line, sizeof line, "%5.1fs %7.0f req/s  p50 %-7s p99 %-7s  %s  %s",
                  std::chrono::duration<double>(now - run.start).count(),
                  static_cast<double>(t.window.size()) / window_secs,
                  show_ms(percentile(t.window, 0.5)).c_str(), show_ms(percentile(t.window, 0.99)).c_str(),
                  show_statuses(t.statuses).c_str(), show_pool(run.last_pool).c_str());
    if (run.tty)
        std::fprintf(stderr, "\r%s\033[K", line);
    else
        std::fprintf(stderr, "%s\n", line);
}

// Until --duration has passed (or the service went away): /health and a live line per period.
asio::awaitable<void> report_progress(demo_run& run) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    auto last = clock_type::now();
    const auto end = run.start + run.cfg.duration;
    while (clock_type::now() < end && !run.service.ended()) {
        t.expires_after(run.tty ? 250ms : 1000ms);
        co_await t.async_wait(asio::use_awaitable);
        const auto now = clock_type::now();
        const double secs = std::chrono::duration<double>(now - last).count();
        last = now;
        auto [status, body] = co_await http_request(run.load.service, "GET", "/health");
        run.last_pool = read_health(status, body);
        if (!run.cfg.quiet) print_progress(run, now, secs);
        run.tally.window.clear();
        run.tally.window_statuses.clear();
    }
}

// The clients finish their request in flight and stop.
asio::awaitable<void> stop_clients(load_tally& tally) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    tally.stopping = true;
    while (tally.running > 0) {
        t.expires_after(10ms);
        co_await t.async_wait(asio::use_awaitable);
    }
}

// The increment check: every acknowledged increment is in the database. The demo's keys are deleted
// afterwards (a database shared with others, PostgreSQL, is left as it was).
asio::awaitable<void> check_increments(demo_run& run) {
    check_result& check = run.check;
    const auto& svc = run.load.service;
    for (unsigned c = 0; c < run.cfg.counters; ++c) {
        const std::string target = "/kv/" + run.load.prefix + "c" + std::to_string(c);
        const long acked = run.tally.acknowledged[c];
        auto [status, body] = co_await http_request(svc, "GET", target);
        long stored = 0;
        if (status == 200)
            stored = std::strtol(body.c_str(), nullptr, 10);
        else if (status != 404)
            check.detail = "GET of a counter answered " + std::to_string(status);
        check.acknowledged += acked;
        check.stored += stored;
        if (stored < acked) check.detail = "a counter holds fewer increments than were acknowledged";
        co_await http_request(svc, "DELETE", target);
    }
    if (run.target.kind == db_kind::postgresql)
        for (unsigned k = 0; k < run.cfg.keys; ++k)
            co_await http_request(svc, "DELETE", "/kv/" + run.load.prefix + "k" + std::to_string(k));
    const long extra = check.stored - check.acknowledged;
    check.ok = check.detail.empty() && extra <= run.tally.uncertain_increments;
    if (check.detail.empty() && !check.ok) check.detail = "more increments stored than were sent";
}

// The run after the clients started: progress, then the clients' stop, then the check.
asio::awaitable<void> conduct(demo_run& run) {
    co_await report_progress(run);
    co_await stop_clients(run.tally);
    if (run.tty && !run.cfg.quiet) std::fprintf(stderr, "\n");
    if (run.service.ended()) {  // SIGINT or SIGTERM reached the service: nobody to ask
        run.check.detail = "not run: the service was stopped";
        co_return;
    }
    co_await check_increments(run);
}

void print_summary(demo_run& run, double elapsed) {
    long total = 0, errors = 0;
    for (const auto& [status, n] : run.tally.statuses) {
        total += n;
        if (status >= 500) errors += n;
    }
    std::vector<double>& lat = run.tally.latencies;
    const check_result& check = run.check;
    std::printf("\n%-32s %s\n", "metric", "value");
    std::printf("%-32s %s\n", "--------------------------------", "----------------------------");
    auto row = [](const char* k, const std::string& v) { std::printf("%-32s %s\n", k, v.c_str()); };
    row("requests answered", std::to_string(total));
    row("throughput", std::to_string(static_cast<long>(static_cast<double>(total) / elapsed)) + " req/s");
    row("latency p50", show_ms(percentile(lat, 0.50)));
    row("latency p90", show_ms(percentile(lat, 0.90)));
    row("latency p99", show_ms(percentile(lat, 0.99)));
    row("latency max", show_ms(lat.empty() ? 0 : *std::max_element(lat.begin(), lat.end())));
    row("p99 of requests served (< 500)", show_ms(percentile(run.tally.answered, 0.99)));
    row("status counts", show_statuses(run.tally.statuses));
    row("5xx (503: pool busy or down)", std::to_string(errors));
    row("no answer (connection failed)", std::to_string(run.tally.transport_errors));
    row("pool at the end", show_pool(run.last_pool));
    row("increments acknowledged", std::to_string(check.acknowledged));
    row("increments in the database", std::to_string(check.stored));
    row("increment check",
        check.ok ? "OK: every acknowledged increment is stored" : "FAILED: " + check.detail);
    if (total > 0 && errors > total / 20)
        std::printf("\nhint: many 5xx; raise --max or --borrow-timeout, or lower --clients.\n");
}

}  // namespace

CLI::App* add_demo_command(CLI::App& app, demo_config& cfg) {
    auto* demo = app.add_subcommand(
        "demo",
        "run `respool serve` on a temporary SQLite database (or --db) and drive it with HTTP clients");
    add_pool_flags(*demo, cfg.serve);
    demo->get_option("--db")->description(
        "database: a temporary SQLite file by default; sqlite:PATH, or a PostgreSQL URI / conninfo");
    demo->add_option("-c,--clients", cfg.clients, "concurrent HTTP clients (keep-alive connections)")
        ->capture_default_str()
        ->check(CLI::Range(1, 10000));
    add_duration_flag(*demo, "-d,--duration", cfg.duration, "how long to run");
    demo->add_option_function<std::string>(
            "--mix", [&cfg](const std::string& s) { cfg.mix = parse_mix(s); }, "GET:PUT:INCR weights")
        ->default_str(format_mix(cfg.mix))
        ->check(CLI::Validator(mix_error, "G:P:I"));
    demo->add_option("--keys", cfg.keys, "distinct keys read and written")
        ->capture_default_str()
        ->check(CLI::Range(1u, 1000000u));
    demo->add_option("--counters", cfg.counters, "distinct keys incremented")
        ->capture_default_str()
        ->check(CLI::Range(1u, 100000u));
    demo->add_option("--value-size", cfg.value_size, "bytes per PUT")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{0}, std::size_t{1024 * 1024}));
    demo->add_option("--threads", cfg.serve.threads, "the service's event loops, each with its own pool")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{1}, std::size_t{256}));
    demo->add_flag("-q,--quiet", cfg.quiet, "no live progress line");
    return demo;
}

int run_demo(const demo_config& cfg) {
    demo_service service(cfg.serve);
    demo_run run(cfg, service);
    print_banner(run);
    run.tally.acknowledged.assign(cfg.counters, 0);
    run.tally.latencies.reserve(1 << 20);
    run.tally.answered.reserve(1 << 20);
    asio::io_context io(1);
    run.start = clock_type::now();
    for (int n = 0; n < cfg.clients; ++n)
        asio::co_spawn(io, load_client(run.load, run.tally, static_cast<unsigned>(n) + 1u), asio::detached);
    asio::co_spawn(io, conduct(run), asio::detached);
    io.run();
    const double elapsed = std::chrono::duration<double>(clock_type::now() - run.start).count();
    service.stop();
    print_summary(run, elapsed);
    return run.check.ok ? 0 : 1;
}

}  // namespace respool_cli
