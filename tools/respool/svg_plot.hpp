// A line chart as inline SVG (for `respool demo --report`): axes with round ticks, axis labels, a
// legend, one polyline per series. Every text is escaped; nothing refers outside the SVG.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace respool_cli {

struct plot_line {
    std::string name;   // the legend's text
    std::string color;  // a CSS color, e.g. "#1f77b4" (ours, never from outside)
    std::vector<double> y;
};

struct plot_spec {
    std::string id;       // the <svg>'s id (letters, digits, '-')
    std::string title;    // shown above the plot and as the SVG's <title>
    std::string y_label;  // e.g. "requests/s", "ms"
    std::string x_label = "seconds since the start";
    std::vector<double> x;  // shared by the lines
    std::vector<plot_line> lines;
    int width = 960, height = 260;
};

std::string svg_plot(const plot_spec& plot);

// The "nice" tick step (1, 2 or 5 times a power of ten) giving about `ticks` steps up to `max`.
double tick_step(double max, int ticks);

}  // namespace respool_cli
