#include "demo.hpp"

#include "duration.hpp"
#include "duration_flag.hpp"
#include "health_json.hpp"
#include "live_view.hpp"
#include "pool_story.hpp"
#include "report_format.hpp"
#include "report_html.hpp"
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
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
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
    health_reading pool_after;  // /health once the clients stopped
    pool_story story;           // /metrics once the clients stopped
    demo_series series;         // one sample per second
    live_figures live;          // what the live view shows
    check_result check;
    clock_type::time_point start = clock_type::now();
    // The clients' last request answered: the throughput's time, without the check's own requests.
    clock_type::time_point clients_stopped = clock_type::now();
    std::time_t started = std::time(nullptr);
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

long count_5xx(const std::map<unsigned, long>& statuses) {
    long n = 0;
    for (const auto& [status, count] : statuses)
        if (status >= 500) n += count;
    return n;
}

// Closes the second that ends at `now`: its rate and latencies, and the pools as /health last said.
void take_sample(demo_run& run, clock_type::time_point now, double secs) {
    load_tally& t = run.tally;
    demo_sample s;
    s.t_s = std::chrono::duration<double>(now - run.start).count();
    s.requests_per_s = static_cast<double>(t.window.size()) / secs;
    s.p50_ms = percentile(t.window, 0.5);
    s.p99_ms = percentile(t.window, 0.99);
    for (const auto& [name, c] : run.last_pool.pools) {
        s.idle += c[0];
        s.active += c[1];
        s.waiting += c[2];
    }
    run.series.push_back(s);
    run.live.sampled = true;
    run.live.requests_per_s = s.requests_per_s;
    run.live.p50_ms = s.p50_ms;
    run.live.p99_ms = s.p99_ms;
    t.window.clear();
    t.window_statuses.clear();
}

// The live view: on a terminal one line redrawn in place (\r, then ESC[K clears what a longer line
// left), otherwise a plain line per tick. Never wider than 80 columns.
void print_live(demo_run& run) {
    const std::string line = live_line(run.live);
    if (run.tty)
        std::fprintf(stderr, "\r%s\033[K", line.c_str());
    else
        std::fprintf(stderr, "%s\n", line.c_str());
}

// Until --duration has passed (or the service went away): /health every tick (250 ms on a terminal, a
// second otherwise), a sample each second, the live view redrawn each tick.
asio::awaitable<void> report_progress(demo_run& run) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    auto last_sample = clock_type::now();
    const auto end = run.start + run.cfg.duration;
    if (!run.cfg.quiet) std::fprintf(stderr, "%s\n", live_header().c_str());
    while (clock_type::now() < end && !run.service.ended()) {
        t.expires_after(run.tty ? 250ms : 1000ms);
        co_await t.async_wait(asio::use_awaitable);
        auto [status, body] = co_await http_request(run.load.service, "GET", "/health");
        run.last_pool = read_health(status, body);
        const auto now = clock_type::now();
        const double secs = std::chrono::duration<double>(now - last_sample).count();
        if (secs >= 0.95) {  // a timer never fires early, but ticks of 250 ms may add up to 0.999..
            take_sample(run, now, secs);
            last_sample = now;
        }
        run.live.elapsed_s = std::chrono::duration<double>(now - run.start).count();
        run.live.errors_5xx = count_5xx(run.tally.statuses);
        run.live.pool = run.last_pool;
        if (!run.cfg.quiet) print_live(run);
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
    run.clients_stopped = clock_type::now();
    if (run.tty && !run.cfg.quiet) std::fprintf(stderr, "\n");
    if (run.service.ended()) {  // SIGINT or SIGTERM reached the service: nobody to ask
        run.check.detail = "not run: the service was stopped";
        co_return;
    }
    // The pool's story before the check's own requests add to it.
    auto [mstatus, metrics] = co_await http_request(run.load.service, "GET", "/metrics");
    if (mstatus == 200) run.story = read_pool_story(metrics);
    auto [hstatus, health] = co_await http_request(run.load.service, "GET", "/health");
    run.pool_after = read_health(hstatus, health);
    co_await check_increments(run);
}

std::string show_wait(const std::optional<double>& ms) {
    return ms ? show_ms(*ms) : std::string("-");
}

std::string show_number(double n) {
    return std::to_string(static_cast<long long>(n));
}

// The pools' peak occupancy over the samples: the most connections lent out and waiters at once.
std::string show_peak(const demo_series& series) {
    long active = 0, waiting = 0;
    for (const demo_sample& s : series) {
        active = std::max(active, s.active);
        waiting = std::max(waiting, s.waiting);
    }
    return series.empty() ? "-" : "active " + std::to_string(active) + ", waiting " + std::to_string(waiting);
}

// The summary, as rows for the terminal table and the HTML report alike.
report_rows summary_rows(demo_run& run, double elapsed) {
    long total = 0;
    for (const auto& [status, n] : run.tally.statuses) total += n;
    const long errors = count_5xx(run.tally.statuses);
    std::vector<double>& lat = run.tally.latencies;
    const check_result& check = run.check;
    const pool_story& story = run.story;
    report_rows rows;
    rows.emplace_back("requests answered", std::to_string(total));
    rows.emplace_back("throughput",
                      std::to_string(static_cast<long>(static_cast<double>(total) / elapsed)) + " req/s");
    rows.emplace_back("latency p50", show_ms(percentile(lat, 0.50)));
    rows.emplace_back("latency p90", show_ms(percentile(lat, 0.90)));
    rows.emplace_back("latency p99", show_ms(percentile(lat, 0.99)));
    rows.emplace_back("latency max", show_ms(lat.empty() ? 0 : *std::max_element(lat.begin(), lat.end())));
    rows.emplace_back("p99 of requests served (< 500)", show_ms(percentile(run.tally.answered, 0.99)));
    rows.emplace_back("status counts", show_statuses(run.tally.statuses));
    rows.emplace_back("5xx (503: pool busy or down)", std::to_string(errors));
    rows.emplace_back("no answer (connection failed)", std::to_string(run.tally.transport_errors));
    if (story.found) {
        rows.emplace_back("pool: borrows", show_number(story.acquires));
        rows.emplace_back("pool: acquire wait p50", show_wait(story.wait_p50_ms));
        rows.emplace_back("pool: acquire wait p99", show_wait(story.wait_p99_ms));
        rows.emplace_back("pool: borrow timeouts", show_number(story.timeouts));
        rows.emplace_back("pool: connections created", show_number(story.creations));
    } else {
        rows.emplace_back("pool: story", "not read (/metrics did not answer)");
    }
    rows.emplace_back("pool: peak (per-second samples)", show_peak(run.series));
    rows.emplace_back("pool after the clients stopped", show_pool(run.pool_after));
    rows.emplace_back("increments acknowledged", std::to_string(check.acknowledged));
    rows.emplace_back("increments in the database", std::to_string(check.stored));
    rows.emplace_back("increment check",
                      check.ok ? "OK: every acknowledged increment is stored" : "FAILED: " + check.detail);
    return rows;
}

void print_summary(const report_rows& rows, long total, long errors) {
    std::printf("\n%-32s %s\n", "metric", "value");
    std::printf("%-32s %s\n", "--------------------------------", "----------------------------");
    for (const auto& [k, v] : rows) std::printf("%-32s %s\n", k.c_str(), v.c_str());
    if (total > 0 && errors > total / 20)
        std::printf("\nhint: many 5xx; raise --max or --borrow-timeout, or lower --clients.\n");
    std::printf(
        "\nacquire wait percentiles are estimated from the pool's histogram buckets (powers of two).\n");
}

report_rows settings_rows(const demo_run& run) {
    const serve_config& scfg = run.service.config();
    char when[64] = "";
    std::tm utc{};
    if (gmtime_r(&run.started, &utc)) std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &utc);
    report_rows rows;
    rows.emplace_back(
        "database",
        std::string(run.target.kind == db_kind::sqlite ? "sqlite " : "postgresql ") + run.target.shown);
    rows.emplace_back("service threads (one pool each)", std::to_string(scfg.threads));
    rows.emplace_back("pool max", std::to_string(scfg.max));
    rows.emplace_back("borrow timeout", format_duration(scfg.borrow_timeout));
    rows.emplace_back("clients", std::to_string(run.cfg.clients));
    rows.emplace_back("mix GET:PUT:INCR", format_mix(run.cfg.mix));
    rows.emplace_back("keys / counters / value size", std::to_string(run.cfg.keys) + " / " +
                                                          std::to_string(run.cfg.counters) + " / " +
                                                          std::to_string(run.cfg.value_size) + " bytes");
    rows.emplace_back("duration", format_duration(run.cfg.duration));
    rows.emplace_back("started", when);
    return rows;
}

// --report's file, opened (and emptied) before the run so that a path that cannot be written is
// refused at once rather than after it; removed again when the run ends without writing it (the
// service did not start, say), so that no empty page is left behind.
struct report_file {
    std::string path;
    std::FILE* f = nullptr;
    ~report_file() {
        if (!f) return;
        std::fclose(f);
        std::remove(path.c_str());
    }
};

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
    demo->add_option("--report", cfg.report,
                     "write an HTML page of the run (settings, summary, plots over time) to this file")
        ->check(CLI::Validator(report_path_error, "FILE.html"));
    return demo;
}

std::string report_path_error(const std::string& path) {
    // CLI11 puts the flag's name in front: "--report: '/x' is a directory, not a file".
    if (path.empty()) return "needs a file name";
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return "'" + path + "' is a directory, not a file";
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
        return "'" + path + "' is in a folder that does not exist ('" + parent.string() + "')";
    return {};
}

int run_demo(const demo_config& cfg) {
    report_file report{.path = cfg.report};
    if (!cfg.report.empty()) {
        report.f = std::fopen(cfg.report.c_str(), "w");
        if (!report.f)
            throw std::invalid_argument("--report '" + cfg.report +
                                        "' cannot be written: " + std::strerror(errno));
    }
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
    const double elapsed = std::chrono::duration<double>(run.clients_stopped - run.start).count();
    service.stop();
    long total = 0;
    for (const auto& [status, n] : run.tally.statuses) total += n;
    const report_rows summary = summary_rows(run, elapsed);
    print_summary(summary, total, count_5xx(run.tally.statuses));
    if (report.f) {
        const std::string page =
            report_html({.settings = settings_rows(run), .summary = summary, .samples = run.series});
        const bool written = std::fwrite(page.data(), 1, page.size(), report.f) == page.size();
        const bool closed = std::fclose(report.f) == 0;
        report.f = nullptr;
        if (!written || !closed) {
            std::fprintf(stderr, "respool demo: --report '%s' could not be written completely\n",
                         cfg.report.c_str());
            return 1;
        }
        std::printf("report: %s\n", cfg.report.c_str());
    }
    return run.check.ok ? 0 : 1;
}

}  // namespace respool_cli
