#include "svg_plot.hpp"

#include "report_html.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace respool_cli {
namespace {

std::string num(double v) {  // SVG coordinates: short, locale-free enough for %g
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
}

// Ticks are multiples of a 1-2-5 step: 4 significant digits show each exactly (0.5, 2.5, 15000).
std::string tick_text(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", std::fabs(v) < 1e-12 ? 0.0 : v);
    return buf;
}

double finite_max(const std::vector<double>& v) {
    double m = 0;
    for (double d : v)
        if (std::isfinite(d)) m = std::max(m, d);
    return m;
}

}  // namespace

double tick_step(double max, int ticks) {
    if (!(max > 0) || !std::isfinite(max) || ticks < 1) return 1;
    const double raw = max / ticks;
    const double power = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0})
        if (raw <= m * power) return m * power;
    return 10 * power;
}

std::string svg_plot(const plot_spec& p) {
    const double left = 70, right = 20, top = 40, bottom = 50;
    const double w = p.width - left - right, h = p.height - top - bottom;
    double y_max = 0;
    for (const auto& l : p.lines) y_max = std::max(y_max, finite_max(l.y));
    const double y_step = tick_step(y_max, 4);
    const double y_top = std::max(y_step, std::ceil(y_max / y_step) * y_step);
    const double x_max = std::max(1.0, finite_max(p.x));
    const double x_step = tick_step(x_max, 8);
    const double x_right = std::ceil(x_max / x_step) * x_step;
    auto px = [&](double x) { return left + w * std::clamp(x / x_right, 0.0, 1.0); };
    auto py = [&](double y) { return top + h - h * std::clamp(y / y_top, 0.0, 1.0); };

    std::string s;
    s += "<svg id=\"" + html_escape(p.id) + "\" class=\"plot\" role=\"img\" width=\"" +
         std::to_string(p.width) + "\" height=\"" + std::to_string(p.height) + "\" viewBox=\"0 0 " +
         std::to_string(p.width) + " " + std::to_string(p.height) + "\">\n";
    s += "<title>" + html_escape(p.title) + "</title>\n";
    s += "<text class=\"plot-title\" x=\"" + num(left) + "\" y=\"22\">" + html_escape(p.title) + "</text>\n";
    // Grid and y ticks.
    for (double y = 0; y <= y_top + y_step / 2; y += y_step) {
        s += "<line class=\"grid\" x1=\"" + num(left) + "\" x2=\"" + num(left + w) + "\" y1=\"" + num(py(y)) +
             "\" y2=\"" + num(py(y)) + "\"/>";
        s += "<text class=\"tick\" text-anchor=\"end\" x=\"" + num(left - 6) + "\" y=\"" + num(py(y) + 4) +
             "\">" + tick_text(y) + "</text>\n";
    }
    for (double x = 0; x <= x_right + x_step / 2; x += x_step)
        s += "<text class=\"tick\" text-anchor=\"middle\" x=\"" + num(px(x)) + "\" y=\"" + num(top + h + 16) +
             "\">" + tick_text(x) + "</text>\n";
    // Axes and their labels.
    s += "<line class=\"axis\" x1=\"" + num(left) + "\" x2=\"" + num(left) + "\" y1=\"" + num(top) +
         "\" y2=\"" + num(top + h) + "\"/>";
    s += "<line class=\"axis\" x1=\"" + num(left) + "\" x2=\"" + num(left + w) + "\" y1=\"" + num(top + h) +
         "\" y2=\"" + num(top + h) + "\"/>\n";
    s += "<text class=\"axis-label\" text-anchor=\"middle\" x=\"" + num(left + w / 2) + "\" y=\"" +
         num(top + h + 40) + "\">" + html_escape(p.x_label) + "</text>\n";
    s += "<text class=\"axis-label\" text-anchor=\"middle\" transform=\"translate(16 " + num(top + h / 2) +
         ") rotate(-90)\">" + html_escape(p.y_label) + "</text>\n";
    // The series, then the legend (top right).
    for (const auto& l : p.lines) {
        std::string points;
        const std::size_t n = std::min(p.x.size(), l.y.size());
        for (std::size_t i = 0; i < n; ++i)
            if (std::isfinite(p.x[i]) && std::isfinite(l.y[i]))
                points += (points.empty() ? "" : " ") + num(px(p.x[i])) + "," + num(py(l.y[i]));
        s += "<polyline class=\"series\" fill=\"none\" stroke-width=\"2\" stroke=\"" + html_escape(l.color) +
             "\" points=\"" + points + "\"><title>" + html_escape(l.name) + "</title></polyline>\n";
        if (n == 1)  // a single sample draws no line: a dot
            s += "<circle r=\"3\" fill=\"" + html_escape(l.color) + "\" cx=\"" + num(px(p.x[0])) +
                 "\" cy=\"" + num(py(l.y[0])) + "\"/>\n";
    }
    double lx = left + w - 150.0 * static_cast<double>(p.lines.size());
    for (const auto& l : p.lines) {
        s += "<rect x=\"" + num(lx) + "\" y=\"14\" width=\"14\" height=\"4\" fill=\"" + html_escape(l.color) +
             "\"/><text class=\"legend\" x=\"" + num(lx + 20) + "\" y=\"20\">" + html_escape(l.name) +
             "</text>\n";
        lx += 150;
    }
    if (p.x.empty())
        s += "<text class=\"empty\" text-anchor=\"middle\" x=\"" + num(left + w / 2) + "\" y=\"" +
             num(top + h / 2) + "\">no samples (the run was shorter than a second)</text>\n";
    s += "</svg>\n";
    return s;
}

}  // namespace respool_cli
