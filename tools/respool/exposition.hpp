// The pieces of the Prometheus text exposition format 0.0.4 that the service's own families need
// (cluster_metrics.cpp, budget_metrics.cpp): a family's HELP and TYPE lines, and one sample with its
// labels escaped as the format says. The pools' and requests' families come from respool::http.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace respool_cli::exposition {

void family(std::string& out, std::string_view name, std::string_view type, std::string_view help);

// name{label="value",...} value (labels in the order given; values escaped: \\, \", \n).
void sample(std::string& out, std::string_view name,
            std::initializer_list<std::pair<std::string_view, std::string_view>> labels, double value);

}  // namespace respool_cli::exposition
