#include "exposition.hpp"

#include <prometheus/text_serializer.h>

#include <sstream>

namespace respool_cli::exposition {

void families::family(std::string_view name, kind type, std::string_view help) {
    families_.push_back(
        {std::string(name),
         std::string(help),
         type == kind::counter ? prometheus::MetricType::Counter : prometheus::MetricType::Gauge,
         {}});
}

void families::sample(std::initializer_list<std::pair<std::string_view, std::string_view>> labels,
                      double value) {
    prometheus::MetricFamily& f = families_.back();
    prometheus::ClientMetric m;
    for (const auto& [name, text] : labels) m.label.push_back({std::string(name), std::string(text)});
    if (f.type == prometheus::MetricType::Counter)
        m.counter.value = value;
    else
        m.gauge.value = value;
    f.metric.push_back(std::move(m));
}

void families::append_to(std::string& out) const {
    std::ostringstream text;
    prometheus::TextSerializer().Serialize(text, families_);
    out += text.str();
}

}  // namespace respool_cli::exposition
