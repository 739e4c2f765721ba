#include "report_html.hpp"

#include "svg_plot.hpp"

namespace respool_cli {
namespace {

constexpr std::string_view style =
    R"(body{font:15px/1.45 system-ui,sans-serif;color:#222;margin:24px auto;max-width:1000px;padding:0 16px}
h1{font-size:26px;margin:0 0 4px}h2{font-size:19px;margin:28px 0 8px;border-bottom:1px solid #ddd}
table{border-collapse:collapse}td,th{text-align:left;padding:3px 14px 3px 0;vertical-align:top}
th{font-weight:600;color:#555}td.value{font-family:ui-monospace,monospace}
figure{margin:12px 0 20px}svg.plot{background:#fcfcfc;border:1px solid #e4e4e4}
.grid{stroke:#e6e6e6}.axis{stroke:#444}.tick{font-size:11px;fill:#555}.axis-label{font-size:12px;fill:#333}
.plot-title{font-size:14px;font-weight:600;fill:#222}.legend{font-size:12px;fill:#333}.empty{fill:#888}
)";

void append_table(std::string& out, const char* cls, const report_rows& rows) {
    out += "<table class=\"";
    out += cls;
    out += "\">\n";
    for (const auto& [label, value] : rows)
        out += "<tr><th scope=\"row\">" + html_escape(label) + "</th><td class=\"value\">" +
               html_escape(value) + "</td></tr>\n";
    out += "</table>\n";
}

void append_figure(std::string& out, const plot_spec& plot, std::string_view caption) {
    out +=
        "<figure>\n" + svg_plot(plot) + "<figcaption>" + html_escape(caption) + "</figcaption>\n</figure>\n";
}

}  // namespace

std::string html_escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
        }
    }
    return out;
}

std::string report_html(const report_page& page) {
    std::vector<double> t, rps, p50, p99, active, idle, waiting;
    for (const demo_sample& s : page.samples) {
        t.push_back(s.t_s);
        rps.push_back(s.requests_per_s);
        p50.push_back(s.p50_ms);
        p99.push_back(s.p99_ms);
        active.push_back(static_cast<double>(s.active));
        idle.push_back(static_cast<double>(s.idle));
        waiting.push_back(static_cast<double>(s.waiting));
    }
    std::string out;
    out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
           html_escape(page.title) + "</title>\n<style>\n";
    out += style;
    out += "</style>\n</head>\n<body>\n<h1>" + html_escape(page.title) + "</h1>\n";
    out +=
        "<p>One sample per second while the clients ran: the request rate and latency the clients "
        "measured, and the pools' occupancy as the service's health endpoint reported it.</p>\n";
    out += "<h2>Over time</h2>\n";
    append_figure(out,
                  {.id = "plot-throughput",
                   .title = "Requests per second",
                   .y_label = "requests/s",
                   .x = t,
                   .lines = {{"requests/s", "#1f77b4", rps}}},
                  "Requests answered per second (any status).");
    append_figure(out,
                  {.id = "plot-latency",
                   .title = "Latency p50 and p99",
                   .y_label = "milliseconds",
                   .x = t,
                   .lines = {{"p50", "#2ca02c", p50}, {"p99", "#d62728", p99}}},
                  "Latency of the requests answered in each second, as the clients measured it.");
    append_figure(out,
                  {.id = "plot-occupancy",
                   .title = "Pool occupancy",
                   .y_label = "connections / waiters",
                   .x = t,
                   .lines = {{"active", "#ff7f0e", active},
                             {"idle", "#17becf", idle},
                             {"waiting", "#9467bd", waiting}}},
                  "Connections lent out (active) and ready (idle), and borrowers waiting, summed over the "
                  "service's pools.");
    out += "<h2>Summary</h2>\n";
    append_table(out, "summary", page.summary);
    out += "<h2>Settings</h2>\n";
    append_table(out, "settings", page.settings);
    out += "</body>\n</html>\n";
    return out;
}

}  // namespace respool_cli
