// HTTP request counters and latency histograms (respool/http/request_metrics.hpp): series per route,
// method and status; invented methods in one series; several objects merged; records from several
// threads at once all counted.
#include "text_lines.hpp"

#include <respool/http/request_metrics.hpp>

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace http = respool::http;
using namespace std::chrono_literals;

TEST(http_request_metrics, counts_by_route_method_and_status) {
    http::request_metrics m;
    m.record("/kv/{key}", "GET", 200, 300us);
    m.record("/kv/{key}", "GET", 200, 5ms);
    m.record("/kv/{key}", "GET", 404, 100us);
    m.record("/kv/{key}", "PUT", 204, 2ms);
    std::string out;
    m.write(out);
    for (
        const char* line : {
            "# TYPE respool_http_requests_total counter",
            R"(respool_http_requests_total{route="/kv/{key}",method="GET",status="200"} 2)",
            R"(respool_http_requests_total{route="/kv/{key}",method="GET",status="404"} 1)",
            R"(respool_http_requests_total{route="/kv/{key}",method="PUT",status="204"} 1)",
            "# TYPE respool_http_request_duration_seconds histogram",
            R"(respool_http_request_duration_seconds_bucket{route="/kv/{key}",method="GET",le="0.000256"} 1)",
            R"(respool_http_request_duration_seconds_bucket{route="/kv/{key}",method="GET",le="0.001024"} 2)",
            R"(respool_http_request_duration_seconds_bucket{route="/kv/{key}",method="GET",le="+Inf"} 3)",
            R"(respool_http_request_duration_seconds_sum{route="/kv/{key}",method="GET"} 0.0054)",
            R"(respool_http_request_duration_seconds_count{route="/kv/{key}",method="GET"} 3)",
            R"(respool_http_request_duration_seconds_count{route="/kv/{key}",method="PUT"} 1)",
        })
        EXPECT_TRUE(has_line(out, line)) << line << "\n--- in:\n" << out;
}

TEST(http_request_metrics, buckets_are_the_options_ones) {
    http::request_metrics m;
    m.record("/kv/{key}", "GET", 200, 300us);
    m.record("/kv/{key}", "GET", 200, 5ms);
    std::string out;
    m.write(out, {.buckets = {512us}, .pool_label = "pool"});
    const std::string b = "respool_http_request_duration_seconds_bucket";
    EXPECT_TRUE(has_line(out, b + R"({route="/kv/{key}",method="GET",le="0.000512"} 1)")) << out;
    EXPECT_TRUE(has_line(out, b + R"({route="/kv/{key}",method="GET",le="+Inf"} 2)")) << out;
    EXPECT_EQ(out.find("le=\"0.001024\""), std::string::npos) << out;
}

TEST(http_request_metrics, shards_merge_into_one_series_each) {
    http::request_metrics a, b;
    a.record("/health", "GET", 200, 1ms);
    b.record("/health", "GET", 200, 1ms);
    b.record("/health", "GET", 503, 1ms);
    std::string out;
    http::write_request_metrics(out, {&a, &b});
    EXPECT_TRUE(has_line(out, R"(respool_http_requests_total{route="/health",method="GET",status="200"} 2)"));
    EXPECT_TRUE(has_line(out, R"(respool_http_requests_total{route="/health",method="GET",status="503"} 1)"));
    EXPECT_TRUE(
        has_line(out, R"(respool_http_request_duration_seconds_count{route="/health",method="GET"} 3)"));
    EXPECT_EQ(out.find("# TYPE respool_http_requests_total"),
              out.rfind("# TYPE respool_http_requests_total"));
}

TEST(http_request_metrics, label_values_are_escaped) {
    http::request_metrics m;
    m.record("/a\"b\\c", "GET", 200, 1ms);
    std::string out;
    m.write(out);
    EXPECT_TRUE(has_line(out, R"(respool_http_requests_total{route="/a\"b\\c",method="GET",status="200"} 1)"))
        << out;
}

// Found by fuzz_http_requests: every new method a client invented was a new time series (unbounded
// memory, an ever slower /metrics).
TEST(http_request_metrics, methods_a_client_invents_share_one_series) {
    http::request_metrics m;
    for (int i = 0; i < 100; ++i) m.record("unmatched", "X" + std::to_string(i), 405, 1ms);
    m.record("unmatched", "PATCH", 405, 1ms);
    std::string out;
    m.write(out);
    EXPECT_TRUE(
        has_line(out, R"(respool_http_requests_total{route="unmatched",method="other",status="405"} 100)"))
        << out;
    EXPECT_TRUE(
        has_line(out, R"(respool_http_requests_total{route="unmatched",method="PATCH",status="405"} 1)"));
    EXPECT_EQ(out.find("X1"), std::string::npos);
}

TEST(http_request_metrics, records_from_several_threads_and_a_scrape_meanwhile_are_all_counted) {
    http::request_metrics m;
    constexpr int threads = 4, each = 2000;
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
        ts.emplace_back([&m, t] {
            for (int i = 0; i < each; ++i) m.record(t % 2 ? "/kv/{key}" : "/health", "GET", 200, 10us);
        });
    std::string scrape;
    m.write(scrape);  // concurrent with the records (ThreadSanitizer checks the locking)
    for (auto& t : ts) t.join();
    std::string out;
    m.write(out);
    EXPECT_TRUE(
        has_line(out, R"(respool_http_requests_total{route="/kv/{key}",method="GET",status="200"} 4000)"));
    EXPECT_TRUE(
        has_line(out, R"(respool_http_requests_total{route="/health",method="GET",status="200"} 4000)"));
}

}  // namespace
