// `respool demo`'s views of a run without running one (tools/respool: live_view, pool_story,
// report_html, svg_plot): the live line fits 80 columns whatever the numbers, the pool's story is
// read from a /metrics text, and the HTML report is self-contained with every outside text escaped.
#include "live_view.hpp"
#include "pool_story.hpp"
#include "report_html.hpp"
#include "svg_plot.hpp"

#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <limits>

using namespace respool_cli;

namespace {

std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
    return n;
}

health_reading two_pools(long n) {
    health_reading h;
    h.up = true;
    h.pools["writer"] = {n, n, n};
    h.pools["reader"] = {n, n, n};
    return h;
}

live_figures figures(double elapsed_s, double rps, double p50_ms, double p99_ms, long errors) {
    live_figures f;
    f.elapsed_s = elapsed_s;
    f.requests_per_s = rps;
    f.p50_ms = p50_ms;
    f.p99_ms = p99_ms;
    f.errors_5xx = errors;
    f.sampled = true;
    return f;
}

}  // namespace

TEST(demo_live_view, an_ordinary_line_shows_every_figure) {
    live_figures f = figures(12.34, 15794, 0.818, 17.2, 3);
    f.pool = two_pools(0);
    f.pool.pools["writer"] = {0, 1, 26};  // idle, active, waiting
    const std::string line = live_line(f);
    EXPECT_EQ(line, " 12.3s  15.8k  818us 17.2ms      3  reader 0/0/0 writer 1/0/26 closed");
    EXPECT_LE(live_header().size(), 80u);
    // The header's columns sit above the line's.
    EXPECT_EQ(live_header().find("req/s") + 5, line.find("15.8k") + 5);
}

TEST(demo_live_view, never_wider_than_80_columns_whatever_the_numbers) {
    const double huge[] = {0,           0.0004, 9999.4, 9999.6, 123456789,
                           1e18,        1e30,   1e300,  -5,     std::numeric_limits<double>::infinity(),
                           std::nan("")};
    for (double v : huge) {
        live_figures f = figures(v, v, v, v, LONG_MAX);
        f.pool = two_pools(LONG_MAX);
        f.pool.pools["postgresql"] = {LONG_MAX, LONG_MAX, LONG_MAX};
        f.pool.circuit = "half_open";
        const std::string line = live_line(f);
        EXPECT_LE(line.size(), 80u) << line;
        EXPECT_EQ(line.find('\n'), std::string::npos);
        EXPECT_LE(short_count(v).size(), 6u) << v;
        EXPECT_LE(short_ms(v).size(), 6u) << v;
    }
    // Many pools: cut at 80 with a marker rather than wrapped.
    live_figures f = figures(5, 0, 0, 0, 0);
    f.pool.up = true;
    for (int i = 0; i < 40; ++i) f.pool.pools["pool" + std::to_string(i)] = {1, 2, 3};
    const std::string cut = live_line(f);
    EXPECT_EQ(cut.size(), 80u);
    EXPECT_EQ(cut.substr(78), "..");
    // A narrower terminal is honoured too.
    EXPECT_LE(live_line(f, 40).size(), 40u);
}

TEST(demo_live_view, before_the_first_second_the_figures_are_dashes) {
    live_figures f;
    f.elapsed_s = 0.25;
    f.pool = two_pools(0);
    EXPECT_EQ(live_line(f), "  0.2s      -      -      -      0  reader 0/0/0 writer 0/0/0 closed");
}

TEST(demo_live_view, a_database_down_and_an_open_circuit_are_spelled_out) {
    live_figures f = figures(1, 0, 0, 0, 0);
    f.pool.up = false;
    EXPECT_NE(live_line(f).find("database DOWN"), std::string::npos);
    f.pool = two_pools(1);
    f.pool.circuit = "open";
    EXPECT_NE(live_line(f).find("OPEN"), std::string::npos);
}

TEST(demo_pool_story, read_from_the_metrics_text_summed_over_the_pools) {
    // Two pools: 10 waits under 1 ms and 10 between 1 and 2 ms in one, 80 under 1 ms in the other.
    const std::string text =
        "# HELP respool_pool_acquires_total Leases handed out.\n"
        "# TYPE respool_pool_acquires_total counter\n"
        "respool_pool_acquires_total{thread=\"0\",pool=\"writer\"} 20\n"
        "respool_pool_acquires_total{thread=\"0\",pool=\"re}ader\"} 80\n"
        "respool_pool_timeouts_total{thread=\"0\",pool=\"writer\"} 2\n"
        "respool_pool_timeouts_total{thread=\"0\",pool=\"re}ader\"} 1\n"
        "respool_pool_creations_total{thread=\"0\",pool=\"writer\"} 1\n"
        "respool_pool_creations_total{thread=\"0\",pool=\"re}ader\"} 7\n"
        "respool_pool_acquire_wait_seconds_bucket{thread=\"0\",pool=\"writer\",le=\"0.001\"} 10\n"
        "respool_pool_acquire_wait_seconds_bucket{thread=\"0\",pool=\"writer\",le=\"0.002\"} 20\n"
        "respool_pool_acquire_wait_seconds_bucket{thread=\"0\",pool=\"writer\",le=\"+Inf\"} 20\n"
        "respool_pool_acquire_wait_seconds_bucket{thread=\"0\",pool=\"re}ader\",le=\"0.001\"} 80\n"
        "respool_pool_acquire_wait_seconds_bucket{thread=\"0\",pool=\"re}ader\",le=\"0.002\"} 80\n"
        "respool_pool_acquire_wait_seconds_bucket{thread=\"0\",pool=\"re}ader\",le=\"+Inf\"} 80\n"
        "respool_pool_hold_seconds_bucket{thread=\"0\",pool=\"writer\",le=\"+Inf\"} 999\n";
    const pool_story s = read_pool_story(text);
    EXPECT_TRUE(s.found);
    EXPECT_EQ(s.acquires, 100);
    EXPECT_EQ(s.timeouts, 3);
    EXPECT_EQ(s.creations, 8);
    ASSERT_TRUE(s.wait_p50_ms && s.wait_p99_ms);
    EXPECT_NEAR(*s.wait_p50_ms, 0.5556, 1e-3);  // rank 50 of 90 in [0, 1 ms]
    EXPECT_NEAR(*s.wait_p99_ms, 1.9, 1e-9);     // rank 99 of 100: 9/10 into [1, 2 ms]
}

TEST(demo_pool_story, nothing_borrowed_or_no_families) {
    EXPECT_FALSE(read_pool_story("").found);
    EXPECT_FALSE(read_pool_story("garbage{ 12\nrespool_pool_acquires_total{x=\"1\"} notanumber\n").found);
    const pool_story s = read_pool_story(
        "respool_pool_acquires_total 0\n"
        "respool_pool_acquire_wait_seconds_bucket{le=\"+Inf\"} 0\n");
    EXPECT_TRUE(s.found);
    EXPECT_FALSE(s.wait_p50_ms);
    EXPECT_FALSE(bucket_quantile({}, 0.5));
    // All in the +Inf bucket: the largest finite bound.
    EXPECT_EQ(bucket_quantile({{0.5, 0}, {std::numeric_limits<double>::infinity(), 4}}, 0.99), 0.5);
}

TEST(demo_report_html, self_contained_with_a_plot_per_series_and_outside_text_escaped) {
    report_page page;
    page.settings = {
        {"database", "postgresql postgresql://app:***@db/x?application_name=<script>alert(1)</script>"}};
    page.summary = {{"status counts", "200:5 \"404\":1 & more"}};
    for (int i = 1; i <= 5; ++i)
        page.samples.push_back({.t_s = i * 1.0,
                                .requests_per_s = 1000.0 * i,
                                .p50_ms = 1,
                                .p99_ms = 9.5,
                                .active = 3,
                                .idle = 1,
                                .waiting = i});
    const std::string html = report_html(page);
    EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
    EXPECT_EQ(count_of(html, "<svg "), 3u);
    EXPECT_EQ(count_of(html, "</svg>"), 3u);
    EXPECT_EQ(count_of(html, "<polyline "), 6u);  // requests/s; p50, p99; active, idle, waiting
    for (const char* title : {"Requests per second", "Latency p50 and p99", "Pool occupancy"})
        EXPECT_NE(html.find(std::string("<title>") + title + "</title>"), std::string::npos) << title;
    EXPECT_EQ(html.find("<script"), std::string::npos);
    EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
    EXPECT_NE(html.find("&quot;404&quot;:1 &amp; more"), std::string::npos);
    EXPECT_EQ(html.find("http://"), std::string::npos);
    EXPECT_EQ(html.find("https://"), std::string::npos);
    EXPECT_EQ(html.find("secret"), std::string::npos);
}

TEST(demo_report_html, no_samples_still_draws_the_axes_and_says_so) {
    const std::string html = report_html({});
    EXPECT_EQ(count_of(html, "<svg "), 3u);
    EXPECT_EQ(count_of(html, "no samples"), 3u);
}

TEST(demo_report_html, round_tick_steps) {
    EXPECT_EQ(tick_step(8000, 4), 2000);
    EXPECT_EQ(tick_step(3, 8), 0.5);
    EXPECT_EQ(tick_step(0, 4), 1);
    EXPECT_EQ(tick_step(std::numeric_limits<double>::infinity(), 4), 1);
    EXPECT_EQ(html_escape("a<b>&'\""), "a&lt;b&gt;&amp;&#39;&quot;");
}
