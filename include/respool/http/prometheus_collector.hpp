// respool::http::prometheus_collector: the pool metrics (the families of respool/http/metrics.hpp)
// for a prometheus-cpp registry. Target respool::prometheus, built when prometheus-cpp is found; the
// other respool targets do not depend on it.
//
//   prometheus::Exposer exposer{"127.0.0.1:9464"};
//   auto pools = std::make_shared<respool::http::prometheus_collector>();
//   pools->add("writer", [&] { return writer.stats(); });
//   exposer.RegisterCollectable(pools);            // beside the application's own registry
//
// Each scrape calls every pool's stats function on the scraping thread (prometheus::Exposer's own):
// give it a pool built with pool_options::thread_safe, or a function that is safe from that thread.
// Every family (name, HELP, TYPE) appears once, one sample per pool, plus respool_build_info.
#pragma once

#include <respool/http/metrics.hpp>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace respool::http {

class prometheus_collector final : public ::prometheus::Collectable {
public:
    // `options`: the histograms' buckets and the label that names each pool (std::invalid_argument
    // naming what is wrong, here rather than at the first scrape).
    explicit prometheus_collector(metrics_options options = {});

    // Adds a pool: its samples carry <options.pool_label>="name" and then `labels` (names as
    // respool/http/metrics.hpp says; "state", "le" and the pool label itself are refused with
    // std::invalid_argument). Thread-safe, also while a scrape runs.
    void add(std::string name, std::function<pool_stats()> stats, std::vector<label> labels = {});

    // prometheus::Collectable: one snapshot of every pool, as MetricFamily values.
    std::vector<::prometheus::MetricFamily> Collect() const override;

private:
    struct source {
        std::vector<label> labels;
        std::function<pool_stats()> stats;
    };
    metrics_options options_;
    std::vector<std::uint64_t> bounds_us_;
    mutable std::mutex m_;
    std::vector<source> sources_;
};

}  // namespace respool::http
