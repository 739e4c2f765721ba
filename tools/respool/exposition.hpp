// The service's own /metrics families (cluster_metrics.cpp, budget_metrics.cpp), built as
// prometheus-cpp MetricFamily values and written by its TextSerializer (format 0.0.4: HELP and TYPE
// lines, label values escaped). The pools' and requests' families come from respool::http.
#pragma once

#include <prometheus/metric_family.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace respool_cli::exposition {

enum class kind { gauge, counter };

class families {
public:
    // Starts a family: the samples that follow belong to it.
    void family(std::string_view name, kind type, std::string_view help);
    // name{label="value",...} value, labels in the order given, in the family started last.
    void sample(std::initializer_list<std::pair<std::string_view, std::string_view>> labels, double value);
    // Appends the text of every family.
    void append_to(std::string& out) const;

private:
    std::vector<prometheus::MetricFamily> families_;
};

}  // namespace respool_cli::exposition
