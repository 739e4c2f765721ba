// respool::http::prometheus_collector in a prometheus-cpp registry: the families and values a
// TextSerializer writes for two pools, the pool label, buckets, build_info, promtool's verdict, and the
// inputs the collector refuses.
#include <respool/version.h>
#include <respool/http/prometheus_collector.hpp>

#include "promtool_check.hpp"
#include "text_lines.hpp"

#include <prometheus/counter.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

namespace {

namespace http = respool::http;
using namespace std::chrono_literals;

// What prometheus::Exposer serves for a registry and the collector registered side by side
// (RegisterCollectable of each): both collections, serialized by TextSerializer.
std::string scrape(const prometheus::Registry& registry, const http::prometheus_collector& collector) {
    auto families = registry.Collect();
    for (auto& f : collector.Collect()) families.push_back(std::move(f));
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, families);
    return out.str();
}

respool::pool_stats writer_stats() {
    respool::pool_stats s;
    s.idle = 3;
    s.total = 5;
    s.active = 2;
    s.max = 8;
    s.min = 2;
    s.acquires = 120;
    s.circuit = respool::circuit_state::half_open;
    s.wait_time.record(0ns);
    s.wait_time.record(3us);
    s.wait_time.record(20s);
    s.create_time.record(3ms);
    return s;
}

TEST(prometheus_collector, a_registry_serializes_every_family_once_with_each_pools_values) {
    auto registry = std::make_shared<prometheus::Registry>();
    auto collector = std::make_shared<http::prometheus_collector>();
    int scrapes = 0;
    collector->add("writer", [&] {
        ++scrapes;
        return writer_stats();
    });
    collector->add("reader", [] { return respool::pool_stats{}; }, {{"shard", "0"}});
    prometheus::BuildCounter()
        .Name("app_orders_total")
        .Help("The application's own.")
        .Register(*registry)
        .Add({})
        .Increment();

    const std::string out = scrape(*registry, *collector);
    EXPECT_EQ(scrapes, 1) << "one snapshot per scrape";
    for (const char* line : {
             "# TYPE respool_pool_resources_idle gauge",
             R"(respool_pool_resources_idle{pool="writer"} 3)",
             R"(respool_pool_resources_idle{pool="reader",shard="0"} 0)",
             R"(respool_pool_resources_min{pool="writer"} 2)",
             R"(respool_pool_circuit_state{pool="writer",state="half_open"} 1)",
             "# TYPE respool_pool_acquires_total counter",
             R"(respool_pool_acquires_total{pool="writer"} 120)",
             "# TYPE respool_pool_create_seconds histogram",
             R"(respool_pool_create_seconds_count{pool="writer"} 1)",
             R"(respool_pool_acquire_wait_seconds_count{pool="writer"} 3)",
             R"(respool_pool_acquire_wait_seconds_bucket{pool="writer",le="+Inf"} 3)",
             R"(respool_build_info{version=")" RESPOOL_VERSION_STRING R"("} 1)",
             "app_orders_total 1",
         })
        EXPECT_TRUE(has_line(out, line)) << line << "\n--- in:\n" << out;
    // Default buckets: 13 bounds and +Inf, +Inf once.
    std::size_t buckets = 0, inf = 0;
    std::istringstream in(out);
    for (std::string l; std::getline(in, l);) {
        if (l.starts_with(R"(respool_pool_acquire_wait_seconds_bucket{pool="writer")")) ++buckets;
        if (l.starts_with(R"(respool_pool_acquire_wait_seconds_bucket{pool="writer",le="+Inf")")) ++inf;
    }
    EXPECT_EQ(buckets, 14u) << out;
    EXPECT_EQ(inf, 1u) << out;

    const auto r = promtool_check(out);
    EXPECT_EQ(r.exit_code, 0) << r.output << "\n--- for:\n" << out;
    EXPECT_EQ(r.output, "") << "promtool's lint found problems";
}

TEST(prometheus_collector, pool_label_and_buckets_are_the_users_choice) {
    prometheus::Registry registry;
    auto collector = std::make_shared<http::prometheus_collector>(
        http::metrics_options{.buckets = {1us, 4096us}, .pool_label = "db_pool"});
    collector->add("orders", writer_stats);
    const std::string out = scrape(registry, *collector);
    EXPECT_TRUE(has_line(out, R"(respool_pool_resources_idle{db_pool="orders"} 3)")) << out;
    std::size_t buckets = 0;
    std::istringstream in(out);
    for (std::string l; std::getline(in, l);)
        buckets += l.starts_with(R"(respool_pool_create_seconds_bucket{db_pool="orders")") ? 1 : 0;
    EXPECT_EQ(buckets, 3u) << out;
    EXPECT_TRUE(has_line(out, R"(respool_pool_create_seconds_bucket{db_pool="orders",le="0.004096"} 1)"))
        << out;
}

TEST(prometheus_collector, bad_labels_buckets_and_functions_are_refused_by_name) {
    auto message = [](auto&& f) {
        try {
            f();
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_EQ(message([] { http::prometheus_collector c({.buckets = {}, .pool_label = "0pool"}); }),
              "respool::http: bad Prometheus label name '0pool'");
    EXPECT_EQ(
        message([] { http::prometheus_collector c({.buckets = {}, .pool_label = "state"}); }),
        "respool::http: pool_label 'state' is the pool metrics' own (respool_pool_circuit_state, buckets)");
    EXPECT_EQ(
        message([] { http::prometheus_collector c({.buckets = {5us}}); }),
        "respool::http: histogram bucket 5us is not a power of two microseconds from 1us to 16777216us");
    http::prometheus_collector c;
    EXPECT_EQ(message([&] { c.add("p", {}); }),
              "respool::http: prometheus_collector::add of pool 'p' without a stats function");
    EXPECT_EQ(message([&] {
                  c.add("p", writer_stats, {{"pool", "x"}});
              }),
              "respool::http: label 'pool' of pool 'p' is the pool metrics' own (pool name, circuit state, "
              "buckets)");
    EXPECT_EQ(
        message([&] {
            c.add("p", writer_stats, {{"le", "x"}});
        }),
        "respool::http: label 'le' of pool 'p' is the pool metrics' own (pool name, circuit state, buckets)");
    EXPECT_EQ(message([&] {
                  c.add("p", writer_stats, {{"a-b", "x"}});
              }),
              "respool::http: bad Prometheus label name 'a-b'");
    EXPECT_EQ(c.Collect().size(), 1u) << "nothing was added: build_info only";
}

}  // namespace
