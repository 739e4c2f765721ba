// `respool simulate`: simulated resources (a connect latency, failures, outages, leaks) lent by a
// respool::pool to many concurrent clients; a live line and a summary of waits and throughput.
#include "simulate.hpp"

#include "duration.hpp"
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

struct counters {
    long ok = 0, timeouts = 0, create_failed = 0, exhausted = 0, unavailable = 0, closed = 0, other = 0;
    long errors() const { return timeouts + create_failed + exhausted + unavailable + closed + other; }
};

}  // namespace

int run_simulate(const simulate_config& cfg) {
    const auto create_latency = *parse_duration(cfg.create_latency);
    const auto hold = *parse_duration(cfg.hold);
    const auto timeout = *parse_duration(cfg.timeout);
    const auto run_for = *parse_duration(cfg.duration);
    auto d = [](const std::string& text) {
        return std::chrono::duration_cast<respool::duration>(*parse_duration(text));
    };
    std::chrono::nanoseconds outage_from{-1}, outage_len{0};
    if (!cfg.outage.empty()) {
        const auto colon = cfg.outage.find(':');
        outage_from = *parse_duration(cfg.outage.substr(0, colon));
        outage_len = *parse_duration(cfg.outage.substr(colon + 1));
    }
    const auto start = clock_type::now();
    auto in_outage = [&] {
        const auto t = clock_type::now() - start;
        return outage_from.count() >= 0 && t >= outage_from && t < outage_from + outage_len;
    };

    asio::io_context io(1);
    std::mt19937 rng(42);
    std::bernoulli_distribution fails(cfg.failure_rate);
    int next_id = 0;

    respool::hooks<sim_resource> hooks;
    hooks.factory = [&]() -> asio::awaitable<sim_resource> {
        asio::steady_timer connect(co_await asio::this_coro::executor, create_latency);
        co_await connect.async_wait(asio::use_awaitable);  // the simulated connect
        if (in_outage() || fails(rng)) throw boost::system::system_error(asio::error::connection_refused);
        co_return sim_resource{++next_id};
    };
    hooks.before_release = [&](sim_resource&) { return !in_outage(); };  // a query failed: broken
    respool::pool<sim_resource> pool(
        io.get_executor(),
        {.min = cfg.min,
         .max = cfg.max,
         .acquire_timeout = std::chrono::duration_cast<respool::duration>(timeout),
         .idle_ttl = d(cfg.idle_ttl),
         .max_lifetime = d(cfg.max_lifetime),
         .acquire_ttl = cfg.leak_rate > 0 ? d(cfg.acquire_ttl) : respool::duration{},
         .record_timings = true},
        std::move(hooks));
    const bool tty = isatty(STDERR_FILENO) != 0;
    pool.set_log_sink(std::make_shared<demo_log>(tty));
    if (cfg.breaker > 0)
        pool.set_circuit_strategy(std::make_shared<respool::failure_threshold_strategy>(
            respool::breaker_options{.failures_to_open = cfg.breaker, .cool_down = d(cfg.cool_down)}));
    const auto leak_hold = *parse_duration(cfg.leak_hold);
    std::bernoulli_distribution leaks(cfg.leak_rate);

    counters total, window;
    std::vector<double> waits_all, waits_window;  // milliseconds
    waits_all.reserve(1 << 20);
    const auto stop_at = start + run_for;
    bool stopping = false;

    auto client = [&](int n) -> asio::awaitable<void> {
        std::mt19937 local(static_cast<unsigned>(n) + 1u);
        std::uniform_real_distribution<double> jitter(0.5, 1.5);
        auto ex = co_await asio::this_coro::executor;
        asio::steady_timer t(ex);
        while (!stopping) {
            const auto t0 = clock_type::now();
            auto [ec, lease] = co_await pool.async_acquire(asio::as_tuple(asio::use_awaitable));
            const double waited = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
            auto count = [&](counters& c) {
                if (!ec)
                    ++c.ok;
                else if (ec == errc::timeout)
                    ++c.timeouts;
                else if (ec == asio::error::connection_refused || ec == errc::create_failed)
                    ++c.create_failed;
                else if (ec == errc::exhausted)
                    ++c.exhausted;
                else if (ec == errc::unavailable)
                    ++c.unavailable;
                else if (ec == errc::closed)
                    ++c.closed;
                else
                    ++c.other;
            };
            count(total);
            count(window);
            if (ec) {
                if (ec == errc::closed) break;
                t.expires_after(ec == errc::unavailable ? 10ms : 1ms);  // back off before retrying
                co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
                continue;
            }
            waits_all.push_back(waited);
            waits_window.push_back(waited);
            const bool leak = leaks(local);  // "forgets" the lease for a long while
            t.expires_after(
                std::chrono::duration_cast<clock_type::duration>(leak ? leak_hold : hold * jitter(local)));
            co_await t.async_wait(asio::as_tuple(asio::use_awaitable));  // "the query"
        }
    };

    auto reporter = [&]() -> asio::awaitable<void> {
        asio::steady_timer t(co_await asio::this_coro::executor);
        const auto period = tty ? 250ms : 1000ms;
        auto last = clock_type::now();
        while (clock_type::now() < stop_at) {
            t.expires_after(period);
            co_await t.async_wait(asio::use_awaitable);
            const auto now = clock_type::now();
            const double secs = std::chrono::duration<double>(now - last).count();
            last = now;
            const auto s = pool.stats();
            if (!cfg.quiet) {
                char line[320];
                const char* circuit = respool::to_string(s.circuit);
                std::snprintf(line, sizeof line,
                              "%5.1fs  %8.0f acq/s  wait p50 %-7s p99 %-7s  idle %3u active %3u waiting %4u  "
                              "errors %ld  circuit %s  leaks %llu",
                              std::chrono::duration<double>(now - start).count(),
                              static_cast<double>(window.ok) / secs,
                              show_ms(percentile(waits_window, 0.5)).c_str(),
                              show_ms(percentile(waits_window, 0.99)).c_str(), s.idle, s.active, s.waiting,
                              total.errors(), circuit, static_cast<unsigned long long>(s.leaks));
                if (tty)
                    std::fprintf(stderr, "\r%s\033[K", line);
                else
                    std::fprintf(stderr, "%s\n", line);
            }
            window = counters{};
            waits_window.clear();
        }
        stopping = true;
        pool.close();
    };

    std::printf(
        "respool simulate: %d clients, pool min %zu max %zu, create %s (failure rate %.0f%%), hold %s, "
        "timeout %s, for %s\n",
        cfg.clients, cfg.min, cfg.max, cfg.create_latency.c_str(), cfg.failure_rate * 100, cfg.hold.c_str(),
        cfg.timeout.c_str(), cfg.duration.c_str());
    std::fflush(stdout);  // before the live lines on stderr
    for (int n = 0; n < cfg.clients; ++n) asio::co_spawn(io, client(n), asio::detached);
    asio::co_spawn(io, reporter(), asio::detached);
    io.run();
    if (tty && !cfg.quiet) std::fprintf(stderr, "\n");

    const double elapsed = std::chrono::duration<double>(clock_type::now() - start).count();
    const auto s = pool.stats();
    std::vector<double> w = waits_all;
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
    else if (s.waits < static_cast<std::uint64_t>(total.ok / 100) && cfg.max > 1)
        std::printf("\nhint: almost nobody waited; a smaller --max would likely do.\n");
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
    auto duration_check = CLI::Validator([](std::string& s) { return duration_error(s); }, "DURATION");
    demo->add_option("--create-latency", cfg.create_latency, "time to create one resource")
        ->capture_default_str()
        ->check(duration_check);
    demo->add_option("--hold", cfg.hold, "mean time a client holds a lease (+-50%)")
        ->capture_default_str()
        ->check(duration_check);
    demo->add_option("--failure-rate", cfg.failure_rate, "probability that a creation fails")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1.0));
    demo->add_option("--timeout", cfg.timeout, "acquire timeout")
        ->capture_default_str()
        ->check(duration_check);
    demo->add_option("-d,--duration", cfg.duration, "how long to run")
        ->capture_default_str()
        ->check(duration_check);
    demo->add_flag("-q,--quiet", cfg.quiet, "no live progress line");
    auto outage_check = CLI::Validator(
        [](std::string& v) {
            const auto colon = v.find(':');
            if (colon == std::string::npos || !parse_duration(v.substr(0, colon)) ||
                !parse_duration(v.substr(colon + 1)))
                return "'" + v + "' is not START:LENGTH (e.g. 3s:2s)";
            return std::string();
        },
        "START:LENGTH");
    demo->add_option("--outage", cfg.outage, "backend down in this window: creations fail, queries break")
        ->check(outage_check);
    demo->add_option("--breaker", cfg.breaker, "consecutive failures that open the circuit (0 = no breaker)")
        ->capture_default_str();
    demo->add_option("--cool-down", cfg.cool_down, "open circuit: time before probing")
        ->capture_default_str()
        ->check(duration_check);
    demo->add_option("--leak-rate", cfg.leak_rate, "probability that a client forgets its lease")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1.0));
    demo->add_option("--leak-hold", cfg.leak_hold, "how long a forgotten lease is held")
        ->capture_default_str()
        ->check(duration_check);
    demo->add_option("--acquire-ttl", cfg.acquire_ttl, "leak detection threshold")
        ->capture_default_str()
        ->check(duration_check);
    demo->add_option("--idle-ttl", cfg.idle_ttl, "evict resources idle longer (0 = off)")
        ->capture_default_str()
        ->check(duration_check);
    demo->add_option("--max-lifetime", cfg.max_lifetime, "retire resources older (0 = off)")
        ->capture_default_str()
        ->check(duration_check);
    return demo;
}

}  // namespace respool_cli
