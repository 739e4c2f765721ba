// The Prometheus text of pool_stats (respool/http/metrics.hpp) for hand-made snapshots: exact lines,
// cumulative buckets, +Inf == _count, HELP/TYPE once per family, label escaping.
#include "text_lines.hpp"

#include <respool/version.h>
#include <respool/http/metrics.hpp>

#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace http = respool::http;
using namespace std::chrono_literals;

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}
std::size_t count_prefix(const std::string& text, const std::string& prefix) {
    std::size_t n = 0;
    for (const auto& l : lines_of(text)) n += l.starts_with(prefix) ? 1 : 0;
    return n;
}

respool::pool_stats sample_stats() {
    respool::pool_stats s;
    s.idle = 3;
    s.active = 2;
    s.total = 5;
    s.waiting = 4;
    s.max = 8;
    s.reserved = 1;
    s.creating = 1;
    s.acquires = 120;
    s.timeouts = 7;
    s.probes = 2;
    s.circuit = respool::circuit_state::half_open;
    s.closed = true;
    s.wait_time.record(0ns);  // bucket 0 (< 1 us)
    s.wait_time.record(3us);  // bucket 2: [2, 4) us
    s.wait_time.record(3us);
    s.wait_time.record(1500us);  // bucket 11: [1024, 2048) us
    s.wait_time.record(20s);     // the open bucket: only +Inf counts it
    s.hold_time.record(250ms);
    return s;
}

TEST(http_metrics, gauges_counters_and_the_circuit_have_exact_lines) {
    std::string out;
    http::write_pool_metrics(out, {{{{"pool", "writer"}}, sample_stats()}});
    for (const char* line : {
             "# HELP respool_pool_resources_idle Resources created and ready to lend.",
             "# TYPE respool_pool_resources_idle gauge",
             R"(respool_pool_resources_idle{pool="writer"} 3)",
             R"(respool_pool_resources_active{pool="writer"} 2)",
             R"(respool_pool_resources{pool="writer"} 5)",
             R"(respool_pool_resources_max{pool="writer"} 8)",
             R"(respool_pool_resources_reserved{pool="writer"} 1)",
             R"(respool_pool_resources_creating{pool="writer"} 1)",
             R"(respool_pool_waiters{pool="writer"} 4)",
             R"(respool_pool_circuit_state{pool="writer",state="closed"} 0)",
             R"(respool_pool_circuit_state{pool="writer",state="open"} 0)",
             R"(respool_pool_circuit_state{pool="writer",state="half_open"} 1)",
             R"(respool_pool_closed{pool="writer"} 1)",
             "# TYPE respool_pool_acquires_total counter",
             R"(respool_pool_acquires_total{pool="writer"} 120)",
             R"(respool_pool_timeouts_total{pool="writer"} 7)",
             R"(respool_pool_probes_total{pool="writer"} 2)",
             R"(respool_pool_leaks_total{pool="writer"} 0)",
         })
        EXPECT_TRUE(has_line(out, line)) << line << "\n--- in:\n" << out;
}

TEST(http_metrics, every_counter_is_a_counter_named_total) {
    std::string out;
    http::write_pool_metrics(out, {{{{"pool", "p"}}, {}}});
    std::size_t counters = 0;
    for (const auto& l : lines_of(out)) {
        if (!l.starts_with("# TYPE ") || !l.ends_with(" counter")) continue;
        ++counters;
        EXPECT_TRUE(l.substr(0, l.size() - 8).ends_with("_total")) << l;
    }
    EXPECT_EQ(counters * sizeof(std::uint64_t), sizeof(respool::pool_counters));  // one per field
}

std::vector<std::uint64_t> bucket_counts(const std::string& out, const std::string& family,
                                         std::string* last) {
    std::vector<std::uint64_t> counts;
    for (const auto& l : lines_of(out))
        if (l.starts_with(family + "_bucket")) {
            counts.push_back(std::stoull(l.substr(l.rfind(' ') + 1)));
            *last = l;
        }
    return counts;
}

TEST(http_metrics, default_buckets_are_every_other_bound_cumulative_in_seconds_and_inf_equals_count) {
    std::string out;
    http::write_pool_metrics(out, {{{{"pool", "writer"}}, sample_stats()}});
    const std::string w = "respool_pool_acquire_wait_seconds";
    for (const std::string& line : {
             w + R"(_bucket{pool="writer",le="0.000001"} 1)",
             w + R"(_bucket{pool="writer",le="0.000004"} 3)",
             w + R"(_bucket{pool="writer",le="0.001024"} 3)",
             w + R"(_bucket{pool="writer",le="0.004096"} 4)",
             w + R"(_bucket{pool="writer",le="16.777216"} 4)",
             w + R"(_bucket{pool="writer",le="+Inf"} 5)",
             w + R"(_sum{pool="writer"} 20.001506)",
             w + R"(_count{pool="writer"} 5)",
             std::string(R"(respool_pool_hold_seconds_bucket{pool="writer",le="0.065536"} 0)"),
             std::string(R"(respool_pool_hold_seconds_bucket{pool="writer",le="0.262144"} 1)"),
             std::string(R"(respool_pool_hold_seconds_sum{pool="writer"} 0.25)"),
             std::string(R"(respool_pool_hold_seconds_count{pool="writer"} 1)"),
         })
        EXPECT_TRUE(has_line(out, line)) << line << "\n--- in:\n" << out;
    EXPECT_FALSE(has_line(out, w + R"(_bucket{pool="writer",le="0.000002"} 1)")) << "not a default bound";
    // 13 bounded buckets (1 us, 4 us, ..., 16.777216 s) and +Inf, each count at least the one before.
    std::string last;
    const auto counts = bucket_counts(out, w, &last);
    ASSERT_EQ(counts.size(), 14u);
    for (std::size_t i = 1; i < counts.size(); ++i) EXPECT_GE(counts[i], counts[i - 1]) << i;
    EXPECT_NE(last.find(R"(le="+Inf")"), std::string::npos);
}

TEST(http_metrics, buckets_are_configurable_down_to_every_bound_of_the_histogram) {
    http::metrics_options every;
    for (std::size_t k = 0; k + 1 < respool::histogram::size; ++k)
        every.buckets.emplace_back(respool::histogram::upper_us(k));
    std::string out;
    http::write_pool_metrics(out, {{{{"pool", "writer"}}, sample_stats()}}, every);
    const std::string w = "respool_pool_acquire_wait_seconds";
    for (const std::string& line : {
             w + R"(_bucket{pool="writer",le="0.000002"} 1)",
             w + R"(_bucket{pool="writer",le="0.000004"} 3)",
             w + R"(_bucket{pool="writer",le="0.002048"} 4)",
         })
        EXPECT_TRUE(has_line(out, line)) << line;
    std::string last;
    EXPECT_EQ(bucket_counts(out, w, &last).size(), 26u);

    std::string three;
    http::write_pool_metrics(three, {{{{"pool", "writer"}}, sample_stats()}},
                             {.buckets = {1us, 1024us, 1048576us}});
    EXPECT_EQ(bucket_counts(three, w, &last).size(), 4u);
    EXPECT_TRUE(has_line(three, w + R"(_bucket{pool="writer",le="0.001024"} 3)")) << three;
    EXPECT_TRUE(has_line(three, w + R"(_bucket{pool="writer",le="1.048576"} 4)")) << three;
}

TEST(http_metrics, a_bucket_that_is_not_a_histogram_bound_is_refused_by_value) {
    auto message = [](std::vector<std::chrono::microseconds> buckets) {
        std::string out;
        try {
            http::write_pool_metrics(out, {{{{"pool", "p"}}, {}}}, {.buckets = std::move(buckets)});
        } catch (const std::invalid_argument& e) {
            EXPECT_TRUE(out.empty()) << "nothing is written before the options are checked";
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_EQ(
        message({3us}),
        "respool::http: histogram bucket 3us is not a power of two microseconds from 1us to 16777216us");
    EXPECT_EQ(
        message({0us}),
        "respool::http: histogram bucket 0us is not a power of two microseconds from 1us to 16777216us");
    EXPECT_EQ(message({33554432us}),
              "respool::http: histogram bucket 33554432us is not a power of two "
              "microseconds from 1us to 16777216us");
    EXPECT_EQ(message({4us, 2us}),
              "respool::http: histogram bucket 2us does not follow a smaller one "
              "(buckets go in ascending order)");
    EXPECT_EQ(message({4us, 4us}),
              "respool::http: histogram bucket 4us does not follow a smaller one "
              "(buckets go in ascending order)");
    EXPECT_EQ(message({16777216us}), "accepted");
}

TEST(http_metrics, min_gauge_creation_histogram_and_build_info) {
    auto s = sample_stats();
    s.min = 2;
    s.create_time.record(3ms);  // bucket [2048, 4096) us
    std::string out;
    http::write_pool_metrics(out, {{{{"pool", "writer"}}, s}});
    for (const char* line : {
             "# TYPE respool_pool_resources_min gauge",
             R"(respool_pool_resources_min{pool="writer"} 2)",
             "# TYPE respool_pool_create_seconds histogram",
             R"(respool_pool_create_seconds_bucket{pool="writer",le="0.001024"} 0)",
             R"(respool_pool_create_seconds_bucket{pool="writer",le="0.004096"} 1)",
             R"(respool_pool_create_seconds_sum{pool="writer"} 0.003)",
             R"(respool_pool_create_seconds_count{pool="writer"} 1)",
         })
        EXPECT_TRUE(has_line(out, line)) << line << "\n--- in:\n" << out;

    std::string info;
    http::write_build_info(info);
    EXPECT_EQ(info,
              "# HELP respool_build_info respool's version: 1, labelled with the version.\n"
              "# TYPE respool_build_info gauge\n"
              "respool_build_info{version=\"" RESPOOL_VERSION_STRING "\"} 1\n");
}

TEST(http_metrics, help_and_type_appear_once_per_family_with_several_pools) {
    auto reader = sample_stats();
    reader.idle = 9;
    std::string out;
    http::write_pool_metrics(out, {{{{"pool", "writer"}}, sample_stats()}, {{{"pool", "reader"}}, reader}});
    EXPECT_EQ(count_prefix(out, "# HELP respool_pool_resources_idle "), 1u);
    EXPECT_EQ(count_prefix(out, "# TYPE respool_pool_resources_idle "), 1u);
    EXPECT_EQ(count_prefix(out, "# TYPE respool_pool_acquire_wait_seconds "), 1u);
    EXPECT_EQ(count_prefix(out, "respool_pool_resources_idle{"), 2u);
    EXPECT_TRUE(has_line(out, R"(respool_pool_resources_idle{pool="reader"} 9)"));
    EXPECT_EQ(count_prefix(out, "respool_pool_acquire_wait_seconds_count{"), 2u);
    // A family's samples follow its TYPE line without another family in between.
    const auto lines = lines_of(out);
    std::string family;
    for (const auto& l : lines) {
        if (l.starts_with("# TYPE ")) {
            family = l.substr(7, l.find(' ', 7) - 7);
        } else if (!l.starts_with("#")) {
            EXPECT_TRUE(l.starts_with(family)) << l << " after " << family;
        }
    }
}

TEST(http_metrics, label_values_are_escaped_and_bad_names_refused) {
    std::string out;
    http::write_pool_metrics(out, {{{{"pool", "a\"b\\c\nd"}, {"thread", "0"}}, {}}});
    EXPECT_TRUE(has_line(out, R"(respool_pool_waiters{pool="a\"b\\c\nd",thread="0"} 0)")) << out;

    for (const char* bad : {"", "0pool", "po-ol", "__pool"}) {
        std::string o;
        EXPECT_THROW(http::write_pool_metrics(o, {{{{bad, "x"}}, {}}}), std::invalid_argument) << bad;
        EXPECT_TRUE(o.empty()) << "nothing is written before the labels are checked";
    }
    std::string o;
    EXPECT_THROW(http::write_pool_metrics(o, {{{{"state", "x"}}, {}}}), std::invalid_argument);
}

TEST(http_metrics, no_pool_writes_nothing) {
    std::string out;
    http::write_pool_metrics(out, std::span<const http::pool_sample>{});
    EXPECT_TRUE(out.empty());
}

}  // namespace
