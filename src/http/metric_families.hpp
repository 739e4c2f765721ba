// The pool, build and request metrics as data: families of samples that one text writer
// (append_families, the dependency-free path) and the prometheus-cpp collector (respool::prometheus)
// both render, so that a family's name, help, type and labels are defined once.
#pragma once

#include <respool/http/metrics.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace respool::http::detail {

enum class family_type { gauge, counter, histogram };

// A histogram's samples at the chosen bounds (metrics_options::buckets): `cumulative[i]` counts the
// durations at or below bounds_us[i]; `count` all of them (the +Inf bucket).
struct histogram_sample {
    std::vector<std::uint64_t> cumulative;
    std::uint64_t count = 0;
    std::uint64_t sum_ns = 0;
};

struct sample {
    std::vector<label> labels;
    std::uint64_t value = 0;  // gauge, counter
    histogram_sample h;       // histogram
};

struct family {
    std::string name;
    std::string help;
    family_type type;
    std::vector<sample> samples;
};

// The upper bounds in microseconds, checked (ascending powers of two, 1 us .. 2^24 us); the default
// set when `buckets` is empty. std::invalid_argument naming the bad bound otherwise.
std::vector<std::uint64_t> bounds_us(const metrics_options& options);

// `h` at `bounds` (from bounds_us).
histogram_sample at_bounds(const histogram& h, const std::vector<std::uint64_t>& bounds);

// The pool families, checked first (label names; "state" and "le" are the families' own).
std::vector<family> pool_families(std::span<const pool_sample> pools,
                                  const std::vector<std::uint64_t>& bounds);

// respool_build_info{version="..."} 1.
family build_info_family();

// The text exposition format 0.0.4 of `families` (HELP and TYPE once per family, even when it has no
// sample), histograms at `bounds`.
void append_families(std::string& out, const std::vector<family>& families,
                     const std::vector<std::uint64_t>& bounds);

}  // namespace respool::http::detail
