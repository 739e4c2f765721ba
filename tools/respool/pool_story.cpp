#include "pool_story.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <string>

namespace respool_cli {
namespace {

// One sample line: name, the label text between the braces (quotes respected), the value.
struct sample_line {
    std::string_view name, labels;
    double value = 0;
};

std::optional<sample_line> parse_line(std::string_view line) {
    if (line.empty() || line.front() == '#') return std::nullopt;
    sample_line s;
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
        const std::size_t open = i + 1;
        bool quoted = false;
        for (++i; i < line.size(); ++i) {
            if (quoted && line[i] == '\\') {
                ++i;
                continue;
            }
            if (line[i] == '"') quoted = !quoted;
            if (!quoted && line[i] == '}') break;
        }
        if (i >= line.size()) return std::nullopt;
        s.labels = line.substr(open, i - open);
        ++i;
    }
    while (i < line.size() && line[i] == ' ') ++i;
    std::string_view rest = line.substr(i);
    rest = rest.substr(0, rest.find(' '));  // a timestamp may follow
    if (rest == "+Inf")
        s.value = std::numeric_limits<double>::infinity();
    else {
        const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), s.value);
        if (ec != std::errc() || end != rest.data() + rest.size()) return std::nullopt;
    }
    return s;
}

// The value of label `le` ("+Inf" or a number), none when absent.
std::optional<double> le_of(std::string_view labels) {
    const auto at = labels.find("le=\"");
    if (at == std::string_view::npos) return std::nullopt;
    std::string_view v = labels.substr(at + 4);
    v = v.substr(0, v.find('"'));
    if (v == "+Inf") return std::numeric_limits<double>::infinity();
    double d = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
    if (ec != std::errc() || end != v.data() + v.size()) return std::nullopt;
    return d;
}

}  // namespace

std::optional<double> bucket_quantile(const std::vector<std::pair<double, double>>& cumulative, double q) {
    if (cumulative.empty() || !(cumulative.back().second > 0)) return std::nullopt;
    const double rank = q * cumulative.back().second;
    double lower = 0, below = 0;
    for (const auto& [bound, count] : cumulative) {
        if (count >= rank && count > below) {
            if (std::isinf(bound)) return lower;
            return lower + (bound - lower) * (rank - below) / (count - below);
        }
        if (!std::isinf(bound)) lower = bound;
        below = count;
    }
    return lower;
}

pool_story read_pool_story(std::string_view text) {
    pool_story story;
    std::map<double, double> buckets;  // le -> cumulative count, summed over the pools
    while (!text.empty()) {
        const auto nl = text.find('\n');
        const std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        const auto s = parse_line(line);
        if (!s) continue;
        if (s->name == "respool_pool_acquires_total") {
            story.acquires += s->value;
            story.found = true;
        } else if (s->name == "respool_pool_timeouts_total")
            story.timeouts += s->value;
        else if (s->name == "respool_pool_creations_total")
            story.creations += s->value;
        else if (s->name == "respool_pool_acquire_wait_seconds_bucket") {
            if (const auto le = le_of(s->labels)) buckets[*le] += s->value;
        }
    }
    const std::vector<std::pair<double, double>> cumulative(buckets.begin(), buckets.end());
    if (const auto p50 = bucket_quantile(cumulative, 0.50)) story.wait_p50_ms = *p50 * 1000;
    if (const auto p99 = bucket_quantile(cumulative, 0.99)) story.wait_p99_ms = *p99 * 1000;
    return story;
}

}  // namespace respool_cli
