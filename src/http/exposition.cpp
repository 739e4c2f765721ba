#include "http/exposition.hpp"
#include "http/metric_families.hpp"

#include <bit>
#include <charconv>
#include <stdexcept>

namespace respool::http::detail {
namespace {

bool valid_label_name(std::string_view n) noexcept {
    if (n.empty() || n.starts_with("__")) return false;
    for (std::size_t i = 0; i < n.size(); ++i) {
        const char c = n[i];
        const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
    }
    return true;
}

void append_uint(std::string& out, std::uint64_t v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

// `whole`.`frac` with `digits` fractional digits, trailing zeros (and a bare point) dropped.
void append_fixed(std::string& out, std::uint64_t whole, std::uint64_t frac, int digits) {
    append_uint(out, whole);
    if (frac == 0) return;
    char buf[16];
    for (int i = digits - 1; i >= 0; --i, frac /= 10) buf[i] = static_cast<char>('0' + frac % 10);
    int end = digits;
    while (buf[end - 1] == '0') --end;
    out += '.';
    out.append(buf, static_cast<std::size_t>(end));
}

}  // namespace

void append_label(std::string& labels, std::string_view name, std::string_view value) {
    if (!valid_label_name(name))
        throw std::invalid_argument("respool::http: bad Prometheus label name '" + std::string(name) + "'");
    if (!labels.empty()) labels += ',';
    labels.append(name).append("=\"");
    for (const char c : value) {
        switch (c) {
        case '\\': labels.append("\\\\"); break;
        case '"': labels.append("\\\""); break;
        case '\n': labels.append("\\n"); break;
        default: labels += c;
        }
    }
    labels += '"';
}

std::string label_text(std::span<const label> labels) {
    std::string out;
    for (const auto& l : labels) append_label(out, l.name, l.value);
    return out;
}

void append_family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
    // HELP texts are the library's own: no backslash or newline to escape.
    out.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

namespace {
void append_name(std::string& out, std::string_view name, std::string_view labels) {
    out.append(name);
    if (!labels.empty()) out.append("{").append(labels).append("}");
    out += ' ';
}
}  // namespace

void append_sample(std::string& out, std::string_view name, std::string_view labels, std::uint64_t value) {
    append_name(out, name, labels);
    append_uint(out, value);
    out += '\n';
}

void append_seconds_us(std::string& out, std::uint64_t us) {
    append_fixed(out, us / 1'000'000, us % 1'000'000, 6);
}
void append_seconds_ns(std::string& out, std::uint64_t ns) {
    append_fixed(out, ns / 1'000'000'000, ns % 1'000'000'000, 9);
}

std::vector<std::uint64_t> bounds_us(const metrics_options& options) {
    std::vector<std::uint64_t> out;
    if (options.buckets.empty()) {
        for (std::size_t k = 0; k + 1 < histogram::size; k += 2) out.push_back(histogram::upper_us(k));
        return out;
    }
    for (const auto b : options.buckets) {
        const auto us = b.count();
        const bool bound = us >= 1 && std::has_single_bit(static_cast<std::uint64_t>(us)) &&
                           static_cast<std::uint64_t>(us) <= histogram::upper_us(histogram::size - 2);
        if (!bound)
            throw std::invalid_argument("respool::http: histogram bucket " + std::to_string(us) +
                                        "us is not a power of two microseconds from 1us to 16777216us");
        if (!out.empty() && static_cast<std::uint64_t>(us) <= out.back())
            throw std::invalid_argument("respool::http: histogram bucket " + std::to_string(us) +
                                        "us does not follow a smaller one (buckets go in ascending order)");
        out.push_back(static_cast<std::uint64_t>(us));
    }
    return out;
}

histogram_sample at_bounds(const histogram& h, const std::vector<std::uint64_t>& bounds) {
    // A bucket's bound is exclusive in the histogram and inclusive for Prometheus; a duration of
    // exactly 2^k us counts one bucket up, which is below the histogram's resolution. The last bucket
    // (>= 2^24 us) has no upper bound: it is counted by +Inf only.
    histogram_sample out;
    out.cumulative.reserve(bounds.size());
    std::uint64_t cumulative = 0;
    std::size_t k = 0;
    for (const std::uint64_t bound : bounds) {
        for (; k + 1 < histogram::size && histogram::upper_us(k) <= bound; ++k) cumulative += h.counts[k];
        out.cumulative.push_back(cumulative);
    }
    out.count = h.total();
    out.sum_ns = h.sum.count() > 0 ? static_cast<std::uint64_t>(h.sum.count()) : 0;
    return out;
}

namespace {

const char* type_name(family_type t) noexcept {
    switch (t) {
    case family_type::gauge: return "gauge";
    case family_type::counter: return "counter";
    case family_type::histogram: return "histogram";
    }
    return "untyped";
}

void append_histogram(std::string& out, const std::string& name, std::string_view labels,
                      const histogram_sample& h, const std::vector<std::uint64_t>& bounds) {
    const std::string bucket = name + "_bucket";
    std::string with_le(labels);
    if (!with_le.empty()) with_le += ',';
    with_le += "le=\"";
    const std::size_t le_at = with_le.size();
    for (std::size_t i = 0; i < bounds.size(); ++i) {
        with_le.resize(le_at);
        append_seconds_us(with_le, bounds[i]);
        with_le += '"';
        append_sample(out, bucket, with_le, h.cumulative[i]);
    }
    with_le.resize(le_at);
    with_le += "+Inf\"";
    append_sample(out, bucket, with_le, h.count);
    append_name(out, name + "_sum", labels);
    append_seconds_ns(out, h.sum_ns);
    out += '\n';
    append_sample(out, name + "_count", labels, h.count);
}

}  // namespace

void append_families(std::string& out, const std::vector<family>& families,
                     const std::vector<std::uint64_t>& bounds) {
    for (const auto& f : families) {
        append_family(out, f.name, type_name(f.type), f.help);
        for (const auto& s : f.samples) {
            const std::string labels = label_text(s.labels);
            if (f.type == family_type::histogram)
                append_histogram(out, f.name, labels, s.h, bounds);
            else
                append_sample(out, f.name, labels, s.value);
        }
    }
}

}  // namespace respool::http::detail
