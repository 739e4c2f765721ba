// Text of the Prometheus exposition format 0.0.4 (the writer of metric_families.hpp uses these).
#pragma once

#include <respool/http/metrics.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace respool::http::detail {

// `name{labels}` for samples: `labels` is the text between the braces (label_text), maybe empty.
std::string label_text(std::span<const label> labels);  // name="escaped",...; checks the names
void append_label(std::string& labels, std::string_view name, std::string_view value);

// "# HELP name help\n# TYPE name type\n"
void append_family(std::string& out, std::string_view name, std::string_view type, std::string_view help);
void append_sample(std::string& out, std::string_view name, std::string_view labels, std::uint64_t value);

// Decimal seconds, exact: integer microseconds or nanoseconds, trailing zeros dropped ("0.000512").
void append_seconds_us(std::string& out, std::uint64_t us);
void append_seconds_ns(std::string& out, std::uint64_t ns);

}  // namespace respool::http::detail
