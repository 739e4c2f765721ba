// `respool simulate`: simulated resources (a connect latency, failures, outages, leaks) lent by a
// respool::pool to many concurrent clients; a live line and a summary of waits and throughput.
#include "simulate.hpp"

#include "duration.hpp"
#include "duration_flag.hpp"
#include "report_format.hpp"

#include <respool/pool.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using respool::errc;
using respool::error_code;

namespace respool_cli {

namespace {

// Writes pool log lines above the live progress line.
class demo_log final : public respool::log_sink {
public:
    explicit demo_log(bool tty) : tty_(tty) {}
    void log(respool::log_level level, std::string_view message) override {
        std::fprintf(stderr, "%s[%s] %.*s\n", tty_ ? "\r\033[K" : "", respool::to_string(level),
                     static_cast<int>(message.size()), message.data());
    }

private:
    bool tty_;
};

struct sim_resource {
    int id = 0;
};

// What the clients saw, by outcome.
struct counters {
    long ok = 0, timeouts = 0, create_failed = 0, exhausted = 0, unavailable = 0, closed = 0, other = 0;
    long errors() const { return timeouts + create_failed + exhausted + unavailable + closed + other; }
    void add(const error_code& ec) {
        if (!ec)
            ++ok;
        else if (ec == errc::timeout)
            ++timeouts;
        else if (ec == asio::error::connection_refused || ec == errc::create_failed)
            ++create_failed;
        else if (ec == errc::exhausted)
            ++exhausted;
        else if (ec == errc::unavailable)
            ++unavailable;
        else if (ec == errc::closed)
            ++closed;
        else
            ++other;
    }
};

respool::duration pool_duration(std::chrono::nanoseconds d) {
    return std::chrono::duration_cast<respool::duration>(d);
}

respool::pool_options pool_options_of(const simulate_config& cfg) {
    return {.min = cfg.min,
            .max = cfg.max,
            .acquire_timeout = pool_duration(cfg.timeout),
            .idle_ttl = pool_duration(cfg.idle_ttl),
            .max_lifetime = pool_duration(cfg.max_lifetime),
            .acquire_ttl = cfg.leak_rate > 0 ? pool_duration(cfg.acquire_ttl) : respool::duration{},
            .record_timings = true};
}

struct simulation;
respool::hooks<sim_resource> simulated_backend(simulation& sim);

// One run: the simulated backend, the pool, and what the clients and the reporter share (one event
// loop runs them all).
struct simulation {
    simulation(const simulate_config& c, asio::io_context& io)
        : cfg(c),
          fails(c.failure_rate),
          leaks(c.leak_rate),
          pool(io.get_executor(), pool_options_of(c), simulated_backend(*this)) {
        pool.set_log_sink(std::make_shared<demo_log>(tty));
        if (cfg.breaker > 0)
            pool.set_circuit_strategy(
                std::make_shared<respool::failure_threshold_strategy>(respool::breaker_options{
                    .failures_to_open = cfg.breaker, .cool_down = pool_duration(cfg.cool_down)}));
        waits_all.reserve(1 << 20);
    }
    // The backend is down: creations fail and leases come back broken.
    bool in_outage() const {
        const auto t = clock_type::now() - start;
        return cfg.outage.from.count() >= 0 && t >= cfg.outage.from &&
               t < cfg.outage.from + cfg.outage.length;
    }

    const simulate_config& cfg;
    const clock_type::time_point start = clock_type::now();
    const clock_type::time_point stop_at = start + cfg.duration;
    const bool tty = isatty(STDERR_FILENO) != 0;
    std::mt19937 rng{42};
    std::bernoulli_distribution fails;
    std::bernoulli_distribution leaks;
    int next_id = 0;
    counters total, window;
    std::vector<double> waits_all, waits_window;  // milliseconds
    bool stopping = false;
    respool::pool<sim_resource> pool;  // last: its hooks use the members above
};

respool::hooks<sim_resource> simulated_backend(simulation& sim) {
    respool::hooks<sim_resource> hooks;
    hooks.factory = [&sim]() -> asio::awaitable<sim_resource> {
        asio::steady_timer connect(co_await asio::this_coro::executor, sim.cfg.create_latency);
        co_await connect.async_wait(asio::use_awaitable);  // the simulated connect
        if (sim.in_outage() || sim.fails(sim.rng))
            throw boost::system::system_error(asio::error::connection_refused);
        co_return sim_resource{++sim.next_id};
    };
    hooks.before_release = [&sim](sim_resource&) { return !sim.in_outage(); };  // a query failed: broken
    return hooks;
}

// One client: borrows, holds the lease for about --hold ("the query"), or forgets it for --leak-hold
// now and then; backs off after an error.
asio::awaitable<void> client(simulation& sim, int n) {
    std::mt19937 local(static_cast<unsigned>(n) + 1u);
    std::uniform_real_distribution<double> jitter(0.5, 1.5);
    asio::steady_timer t(co_await asio::this_coro::executor);
    while (!sim.stopping) {
        const auto t0 = clock_type::now();
        auto [ec, lease] = co_await sim.pool.async_acquire(asio::as_tuple(asio::use_awaitable));
        const double waited = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
        sim.total.add(ec);
        sim.window.add(ec);
        if (ec) {
            if (ec == errc::closed) break;
            t.expires_after(ec == errc::unavailable ? 10ms : 1ms);  // back off before retrying
            co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
            continue;
        }
        sim.waits_all.push_back(waited);
        sim.waits_window.push_back(waited);
        const bool leak = sim.leaks(local);  // "forgets" the lease for a long while
        t.expires_after(std::chrono::duration_cast<clock_type::duration>(
            leak ? sim.cfg.leak_hold : sim.cfg.hold * jitter(local)));
        co_await t.async_wait(asio::as_tuple(asio::use_awaitable));  // "the query"
    }
}

// One live line: the window's acquire rate and waits, the pool's gauges, errors, circuit, leaks.
void print_progress(simulation& sim, clock_type::time_point now, double window_secs) {
    const auto s = sim.pool.stats();
    char line[320];
    const char* circuit = respool::to_string(s.circuit);
    std::snprintf(line, sizeof line,
                  "%5.1fs  %8.0f acq/s  wait p50 %-7s p99 %-7s  idle %3u active %3u waiting %4u  "
                  "errors %ld  circuit %s  leaks %llu",
                  std::chrono::duration<double>(now - sim.start).count(),
                  static_cast<double>(sim.window.ok) / window_secs,
                  show_ms(percentile(sim.waits_window, 0.5)).c_str(),
                  show_ms(percentile(sim.waits_window, 0.99)).c_str(), s.idle, s.active, s.waiting,
                  sim.total.errors(), circuit, static_cast<unsigned long long>(s.leaks));
    if (sim.tty)
        std::fprintf(stderr, "\r%s\033[K", line);
    else
        std::fprintf(stderr, "%s\n", line);
}

// Until --duration has passed: a live line per period; then the clients stop and the pool closes.
asio::awaitable<void> reporter(simulation& sim) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    const auto period = sim.tty ? 250ms : 1000ms;
    auto last = clock_type::now();
    while (clock_type::now() < sim.stop_at) {
        t.expires_after(period);
        co_await t.async_wait(asio::use_awaitable);
        const auto now = clock_type::now();
        const double secs = std::chrono::duration<double>(now - last).count();
        last = now;
        if (!sim.cfg.quiet) print_progress(sim, now, secs);
        sim.window = counters{};
        sim.waits_window.clear();
    }
    sim.stopping = true;
    sim.pool.close();
}

void print_banner(const simulate_config& cfg) {
    std::printf(
        "respool simulate: %d clients, pool min %zu max %zu, create %s (failure rate %.0f%%), hold %s, "
        "timeout %s, for %s\n",
        cfg.clients, cfg.min, cfg.max, format_duration(cfg.create_latency).c_str(), cfg.failure_rate * 100,
        format_duration(cfg.hold).c_str(), format_duration(cfg.timeout).c_str(),
        format_duration(cfg.duration).c_str());
    std::fflush(stdout);  // before the live lines on stderr
}

void print_summary(simulation& sim, double elapsed) {
    const auto s = sim.pool.stats();
    const counters& total = sim.total;
    std::vector<double>& w = sim.waits_all;
    std::printf("\n%-28s %s\n", "metric", "value");
    std::printf("%-28s %s\n", "----------------------------", "------------");
    auto row = [](const char* k, const std::string& v) { std::printf("%-28s %s\n", k, v.c_str()); };
    row("leases handed out", std::to_string(total.ok));
    row("throughput",
        std::to_string(static_cast<long>(static_cast<double>(total.ok) / elapsed)) + " acquires/s");
    row("wait p50", show_ms(percentile(w, 0.50)));
    row("wait p90", show_ms(percentile(w, 0.90)));
    row("wait p99", show_ms(percentile(w, 0.99)));
    row("wait max", show_ms(w.empty() ? 0 : *std::max_element(w.begin(), w.end())));
    row("acquires that had to wait", std::to_string(s.waits));
    row("timeouts", std::to_string(total.timeouts));
    row("creation failures seen", std::to_string(total.create_failed));
    row("other errors", std::to_string(total.exhausted + total.other));
    row("unavailable (circuit open)", std::to_string(total.unavailable));
    row("circuit opened", std::to_string(s.circuit_opened));
    row("leaks reported", std::to_string(s.leaks));
    row("evicted / retired", std::to_string(s.evicted) + " / " + std::to_string(s.retired));
    row("wait p99 (histogram bucket)", "< " + std::to_string(s.wait_time.quantile_upper_us(0.99)) + "us");
    row("resources created", std::to_string(s.creations));
    row("resources destroyed", std::to_string(s.destructions));
    row("pool size at end (max)", std::to_string(s.total) + " (" + std::to_string(s.max) + ")");
    if (total.timeouts > total.ok / 20)
        std::printf("\nhint: many timeouts; raise --max or --timeout, or lower --hold / --clients.\n");
    else if (s.waits < static_cast<std::uint64_t>(total.ok / 100) && sim.cfg.max > 1)
        std::printf("\nhint: almost nobody waited; a smaller --max would likely do.\n");
}

// START:LENGTH, two durations; nullopt when not.
std::optional<outage_window> parse_outage(const std::string& text) {
    const auto colon = text.find(':');
    if (colon == std::string::npos) return std::nullopt;
    const auto from = parse_duration(text.substr(0, colon));
    const auto length = parse_duration(text.substr(colon + 1));
    if (!from || !length) return std::nullopt;
    return outage_window{*from, *length};
}

}  // namespace

int run_simulate(const simulate_config& cfg) {
    asio::io_context io(1);
    simulation sim(cfg, io);
    print_banner(cfg);
    for (int n = 0; n < cfg.clients; ++n) asio::co_spawn(io, client(sim, n), asio::detached);
    asio::co_spawn(io, reporter(sim), asio::detached);
    io.run();
    if (sim.tty && !cfg.quiet) std::fprintf(stderr, "\n");
    print_summary(sim, std::chrono::duration<double>(clock_type::now() - sim.start).count());
    return 0;
}

CLI::App* add_simulate_command(CLI::App& app, simulate_config& cfg) {
    auto* demo = app.add_subcommand(
        "simulate",
        "drive a pool of simulated resources with concurrent clients and report waits and throughput");
    demo->add_option("-c,--clients", cfg.clients, "concurrent clients")
        ->capture_default_str()
        ->check(CLI::Range(1, 100000));
    demo->add_option("--min", cfg.min, "pool min (pre-warmed)")->capture_default_str();
    demo->add_option("--max", cfg.max, "pool max")->capture_default_str();
    add_duration_flag(*demo, "--create-latency", cfg.create_latency, "time to create one resource");
    add_duration_flag(*demo, "--hold", cfg.hold, "mean time a client holds a lease (+-50%)");
    demo->add_option("--failure-rate", cfg.failure_rate, "probability that a creation fails")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1.0));
    add_duration_flag(*demo, "--timeout", cfg.timeout, "acquire timeout");
    add_duration_flag(*demo, "-d,--duration", cfg.duration, "how long to run");
    demo->add_flag("-q,--quiet", cfg.quiet, "no live progress line");
    auto outage_check = CLI::Validator(
        [](std::string& v) {
            return parse_outage(v) ? std::string() : "'" + v + "' is not START:LENGTH (e.g. 3s:2s)";
        },
        "START:LENGTH");
    demo->add_option_function<std::string>(
            "--outage", [&cfg](const std::string& s) { cfg.outage = *parse_outage(s); },
            "backend down in this window: creations fail, queries break")
        ->check(outage_check);
    demo->add_option("--breaker", cfg.breaker, "consecutive failures that open the circuit (0 = no breaker)")
        ->capture_default_str();
    add_duration_flag(*demo, "--cool-down", cfg.cool_down, "open circuit: time before probing");
    demo->add_option("--leak-rate", cfg.leak_rate, "probability that a client forgets its lease")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1.0));
    add_duration_flag(*demo, "--leak-hold", cfg.leak_hold, "how long a forgotten lease is held");
    add_duration_flag(*demo, "--acquire-ttl", cfg.acquire_ttl, "leak detection threshold");
    add_duration_flag(*demo, "--idle-ttl", cfg.idle_ttl, "evict resources idle longer (0 = off)");
    add_duration_flag(*demo, "--max-lifetime", cfg.max_lifetime, "retire resources older (0 = off)");
    return demo;
}

}  // namespace respool_cli
