// The pool families as prometheus-cpp MetricFamily values (respool/http/prometheus_collector.hpp), in the
// respool::prometheus target only (respool::http does not link prometheus-cpp): the
// same families the text writer renders (http/metric_families.hpp), converted field by field.
#include <respool/http/prometheus_collector.hpp>

#include "http/exposition.hpp"
#include "http/metric_families.hpp"

#include <prometheus/client_metric.h>

#include <limits>
#include <stdexcept>

namespace respool::http {
namespace {

::prometheus::MetricType type_of(detail::family_type t) noexcept {
    switch (t) {
    case detail::family_type::gauge: return ::prometheus::MetricType::Gauge;
    case detail::family_type::counter: return ::prometheus::MetricType::Counter;
    case detail::family_type::histogram: return ::prometheus::MetricType::Histogram;
    }
    return ::prometheus::MetricType::Untyped;
}

::prometheus::ClientMetric metric_of(const detail::family& f, const detail::sample& s,
                                     const std::vector<std::uint64_t>& bounds) {
    ::prometheus::ClientMetric m;
    m.label.reserve(s.labels.size());
    for (const auto& l : s.labels) m.label.push_back({l.name, l.value});
    switch (f.type) {
    case detail::family_type::gauge: m.gauge.value = static_cast<double>(s.value); break;
    case detail::family_type::counter: m.counter.value = static_cast<double>(s.value); break;
    case detail::family_type::histogram:
        m.histogram.sample_count = s.h.count;
        m.histogram.sample_sum = static_cast<double>(s.h.sum_ns) / 1e9;
        m.histogram.bucket.reserve(bounds.size() + 1);
        for (std::size_t i = 0; i < bounds.size(); ++i)
            m.histogram.bucket.push_back({s.h.cumulative[i], static_cast<double>(bounds[i]) / 1e6});
        // prometheus-cpp writes the +Inf bucket from the last one given: its bound must be infinity.
        m.histogram.bucket.push_back({s.h.count, std::numeric_limits<double>::infinity()});
        break;
    }
    return m;
}

}  // namespace

prometheus_collector::prometheus_collector(metrics_options options)
    : options_(std::move(options)), bounds_us_(detail::bounds_us(options_)) {
    (void)detail::label_text(std::vector<label>{{options_.pool_label, ""}});  // the name is checked
    if (options_.pool_label == "state" || options_.pool_label == "le")
        throw std::invalid_argument("respool::http: pool_label '" + options_.pool_label +
                                    "' is the pool metrics' own (respool_pool_circuit_state, buckets)");
}

void prometheus_collector::add(std::string name, std::function<pool_stats()> stats,
                               std::vector<label> labels) {
    if (!stats)
        throw std::invalid_argument("respool::http: prometheus_collector::add of pool '" + name +
                                    "' without a stats function");
    for (const auto& l : labels)
        if (l.name == options_.pool_label || l.name == "state" || l.name == "le")
            throw std::invalid_argument("respool::http: label '" + l.name + "' of pool '" + name +
                                        "' is the pool metrics' own (pool name, circuit state, buckets)");
    (void)detail::label_text(labels);  // names checked
    labels.insert(labels.begin(), label{options_.pool_label, std::move(name)});
    std::lock_guard lock(m_);
    sources_.push_back({std::move(labels), std::move(stats)});
}

std::vector<::prometheus::MetricFamily> prometheus_collector::Collect() const {
    std::vector<source> sources;
    {
        std::lock_guard lock(m_);  // copied: the stats functions run unlocked (one may call add)
        sources = sources_;
    }
    std::vector<pool_sample> pools;
    pools.reserve(sources.size());
    for (const auto& s : sources) pools.push_back({s.labels, s.stats()});
    auto families = detail::pool_families(pools, bounds_us_);
    families.push_back(detail::build_info_family());
    std::vector<::prometheus::MetricFamily> out;
    out.reserve(families.size());
    for (const auto& f : families) {
        ::prometheus::MetricFamily mf{f.name, f.help, type_of(f.type), {}};
        mf.metric.reserve(f.samples.size());
        for (const auto& s : f.samples) mf.metric.push_back(metric_of(f, s, bounds_us_));
        out.push_back(std::move(mf));
    }
    return out;
}

}  // namespace respool::http
