// `respool demo --report FILE.html`: one self-contained page (inline CSS and SVG, no script, nothing
// fetched from the network) with the run's settings, its summary table and a plot over time of
// requests/s, latency p50/p99 and pool occupancy. Every text from outside (the --db shown masked,
// status texts) is escaped.
#pragma once

#include "demo_series.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace respool_cli {

using report_rows = std::vector<std::pair<std::string, std::string>>;  // label, value

struct report_page {
    std::string title = "respool demo";
    report_rows settings;
    report_rows summary;
    demo_series samples;
};

std::string report_html(const report_page& page);
// Text for HTML content or a quoted attribute: & < > " ' escaped.
std::string html_escape(std::string_view text);

}  // namespace respool_cli
