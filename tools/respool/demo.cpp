#include "demo.hpp"

#include "duration.hpp"
#include "load_client.hpp"
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
#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <stdexcept>
#include <thread>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace respool_cli {
namespace {

std::string show_statuses(const std::map<unsigned, long>& m) {
    std::string out;
    for (const auto& [status, n] : m)
        out += (out.empty() ? "" : " ") + std::to_string(status) + ":" + std::to_string(n);
    return out.empty() ? "-" : out;
}

// The pools' state from /health's JSON (the demo is the service's client, as a user would be): per pool
// name ("writer", "reader", "postgresql") the sums over the loops, and the worst circuit.
struct pool_line {
    bool up = false;
    std::map<std::string, std::array<long, 3>> pools;  // idle, active, waiting
    std::string circuit = "closed";
};
long field(const std::string& json, std::size_t from, const std::string& name) {
    const auto pos = json.find("\"" + name + "\":", from);
    return pos == std::string::npos ? 0 : std::strtol(json.c_str() + pos + name.size() + 3, nullptr, 10);
}
pool_line parse_health(unsigned status, const std::string& body) {
    pool_line p;
    p.up = status == 200;
    const std::string key = R"("pool":")";
    for (auto pos = body.find(key); pos != std::string::npos; pos = body.find(key, pos + 1)) {
        const auto name_end = body.find('"', pos + key.size());
        auto& counts = p.pools[body.substr(pos + key.size(), name_end - pos - key.size())];
        counts[0] += field(body, pos, "idle");
        counts[1] += field(body, pos, "active");
        counts[2] += field(body, pos, "waiting");
    }
    for (const auto worst : {respool::circuit_state::open, respool::circuit_state::half_open})
        if (body.find(std::string(R"("circuit":")") + respool::to_string(worst) + '"') != std::string::npos) {
            p.circuit = respool::to_string(worst);
            break;
        }
    return p;
}
std::string show_pool(const pool_line& p) {
    if (!p.up) return "database DOWN";
    std::string out;
    for (const auto& [name, c] : p.pools)
        out += name + " idle " + std::to_string(c[0]) + " active " + std::to_string(c[1]) + " waiting " +
               std::to_string(c[2]) + "  ";
    return out + "circuit " + p.circuit;
}

struct check_result {
    long acknowledged = 0, stored = 0;
    bool ok = false;
    std::string detail;
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
    demo->add_option_function<std::string>(
            "-d,--duration", [&cfg](const std::string& s) { cfg.duration = *parse_duration(s); },
            "how long to run")
        ->default_str(format_duration(cfg.duration))
        ->check(CLI::Validator(duration_error, "DURATION"));
    demo->add_option("--mix", cfg.mix, "GET:PUT:INCR weights")
        ->capture_default_str()
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
    serve_config scfg = cfg.serve;
    scfg.listen = "127.0.0.1:0";
    std::string temp_folder;
    if (scfg.db.empty()) {
        char tmpl[] = "/tmp/respool-demo.XXXXXX";
        if (!mkdtemp(tmpl)) throw std::runtime_error("cannot create a temporary folder");
        temp_folder = tmpl;
        scfg.db = "sqlite:" + temp_folder + "/demo.db";
    }
    struct remove_folder {
        std::string path;
        ~remove_folder() {
            std::error_code ec;
            if (!path.empty()) std::filesystem::remove_all(path, ec);
        }
    } cleanup{temp_folder};

    // The service runs on threads of its own, as `respool serve` would; the clients here.
    serve_hooks hooks;
    std::promise<std::string> listening;
    bool announced = false;  // touched on the service's thread only
    hooks.on_listening = [&](const std::string& host_port) {
        announced = true;
        listening.set_value(host_port);
    };
    std::atomic<bool> service_ended{false};
    std::thread service([&] {
        try {
            run_serve(scfg, &hooks);
        } catch (...) {
            if (!announced) listening.set_exception(std::current_exception());
            announced = true;
        }
        if (!announced)
            listening.set_exception(std::make_exception_ptr(std::runtime_error("the service did not start")));
        service_ended = true;
    });
    std::string host_port;
    try {
        host_port = listening.get_future().get();
    } catch (...) {
        service.join();
        throw;
    }

    const db_target target = parse_db_url(scfg.db);
    const auto port = static_cast<unsigned short>(std::stoul(host_port.substr(host_port.rfind(':') + 1)));
    load_settings s;
    s.service = asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port);
    s.mix = parse_mix(cfg.mix);
    s.prefix = "demo" + std::to_string(getpid()) + "-" +
               std::to_string(std::chrono::system_clock::now().time_since_epoch().count() % 1000000) + "-";
    s.keys = cfg.keys;
    s.counters = cfg.counters;
    s.value_size = cfg.value_size;
    std::printf(
        "respool demo: %s %s, service on http://%s (%zu thread(s), pool max %zu), %d clients, mix "
        "GET:PUT:INCR %s, for %s\n",
        target.kind == db_kind::sqlite ? "sqlite" : "postgresql", target.shown.c_str(), host_port.c_str(),
        scfg.threads, scfg.max, cfg.clients, cfg.mix.c_str(), format_duration(cfg.duration).c_str());
    std::fflush(stdout);

    load_tally tally;
    tally.acknowledged.assign(cfg.counters, 0);
    tally.latencies.reserve(1 << 20);
    tally.answered.reserve(1 << 20);
    const bool tty = isatty(STDERR_FILENO) != 0;
    asio::io_context io(1);
    const auto start = std::chrono::steady_clock::now();
    pool_line last_pool;
    check_result check;

    for (int n = 0; n < cfg.clients; ++n)
        asio::co_spawn(io, load_client(s, tally, static_cast<unsigned>(n) + 1u), asio::detached);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            asio::steady_timer t(io);
            auto last = std::chrono::steady_clock::now();
            const auto end = start + cfg.duration;
            while (std::chrono::steady_clock::now() < end && !service_ended) {
                t.expires_after(tty ? 250ms : 1000ms);
                co_await t.async_wait(asio::use_awaitable);
                const auto now = std::chrono::steady_clock::now();
                const double secs = std::chrono::duration<double>(now - last).count();
                last = now;
                auto [hs, hb] = co_await http_request(s.service, "GET", "/health");
                last_pool = parse_health(hs, hb);
                if (!cfg.quiet) {
                    char line[512];
                    std::snprintf(line, sizeof line, "%5.1fs %7.0f req/s  p50 %-7s p99 %-7s  %s  %s",
                                  std::chrono::duration<double>(now - start).count(),
                                  static_cast<double>(tally.window.size()) / secs,
                                  show_ms(percentile(tally.window, 0.5)).c_str(),
                                  show_ms(percentile(tally.window, 0.99)).c_str(),
                                  show_statuses(tally.statuses).c_str(), show_pool(last_pool).c_str());
                    if (tty)
                        std::fprintf(stderr, "\r%s\033[K", line);
                    else
                        std::fprintf(stderr, "%s\n", line);
                }
                tally.window.clear();
                tally.window_statuses.clear();
            }
            tally.stopping = true;
            while (tally.running > 0) {  // clients finish their request in flight
                t.expires_after(10ms);
                co_await t.async_wait(asio::use_awaitable);
            }
            if (tty && !cfg.quiet) std::fprintf(stderr, "\n");
            if (service_ended) {  // SIGINT or SIGTERM reached the service: nobody to ask
                check.detail = "not run: the service was stopped";
                co_return;
            }
            // The increment check: every acknowledged increment is in the database.
            for (unsigned c = 0; c < cfg.counters; ++c) {
                const long acked = tally.acknowledged[c];
                auto [gs, gb] =
                    co_await http_request(s.service, "GET", "/kv/" + s.prefix + "c" + std::to_string(c));
                long stored = 0;
                if (gs == 200)
                    stored = std::strtol(gb.c_str(), nullptr, 10);
                else if (gs != 404)
                    check.detail = "GET of a counter answered " + std::to_string(gs);
                check.acknowledged += acked;
                check.stored += stored;
                if (stored < acked) check.detail = "a counter holds fewer increments than were acknowledged";
                // A database shared with others (PostgreSQL): leave it as it was.
                co_await http_request(s.service, "DELETE", "/kv/" + s.prefix + "c" + std::to_string(c));
            }
            if (target.kind == db_kind::postgresql)
                for (unsigned k = 0; k < cfg.keys; ++k)
                    co_await http_request(s.service, "DELETE", "/kv/" + s.prefix + "k" + std::to_string(k));
            const long extra = check.stored - check.acknowledged;
            check.ok = check.detail.empty() && extra <= tally.uncertain_increments;
            if (check.detail.empty() && !check.ok) check.detail = "more increments stored than were sent";
        },
        asio::detached);
    io.run();
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (hooks.stop && !service_ended) hooks.stop();
    service.join();

    long total = 0, errors = 0;
    for (const auto& [status, n] : tally.statuses) {
        total += n;
        if (status >= 500) errors += n;
    }
    std::vector<double>& lat = tally.latencies;
    std::printf("\n%-32s %s\n", "metric", "value");
    std::printf("%-32s %s\n", "--------------------------------", "----------------------------");
    auto row = [](const char* k, const std::string& v) { std::printf("%-32s %s\n", k, v.c_str()); };
    row("requests answered", std::to_string(total));
    row("throughput", std::to_string(static_cast<long>(static_cast<double>(total) / elapsed)) + " req/s");
    row("latency p50", show_ms(percentile(lat, 0.50)));
    row("latency p90", show_ms(percentile(lat, 0.90)));
    row("latency p99", show_ms(percentile(lat, 0.99)));
    row("latency max", show_ms(lat.empty() ? 0 : *std::max_element(lat.begin(), lat.end())));
    row("p99 of requests served (< 500)", show_ms(percentile(tally.answered, 0.99)));
    row("status counts", show_statuses(tally.statuses));
    row("5xx (503: pool busy or down)", std::to_string(errors));
    row("no answer (connection failed)", std::to_string(tally.transport_errors));
    row("pool at the end", show_pool(last_pool));
    row("increments acknowledged", std::to_string(check.acknowledged));
    row("increments in the database", std::to_string(check.stored));
    row("increment check",
        check.ok ? "OK: every acknowledged increment is stored" : "FAILED: " + check.detail);
    if (total > 0 && errors > total / 20)
        std::printf("\nhint: many 5xx; raise --max or --borrow-timeout, or lower --clients.\n");
    return check.ok ? 0 : 1;
}

}  // namespace respool_cli
