// respool::http: pool_stats in the Prometheus text exposition format 0.0.4, for a /metrics endpoint.
//
//   std::string out;
//   respool::http::write_pool_metrics(out, {{{"pool", "writer"}, db.writer_stats()},
//                                           {{"pool", "reader"}, db.reader_stats()}});
//   request_metrics.write(out);                       // respool/http/request_metrics.hpp
//   res.set(field::content_type, respool::http::exposition_content_type);
//
// Every metric family (name, HELP, TYPE) appears once, followed by one sample per pool. The names,
// types and meanings are in docs/08-http.md: gauges respool_pool_resources_idle ..., the circuit as a
// one-hot gauge respool_pool_circuit_state{state="closed|open|half_open"}, a counter with `_total` for
// every field of pool_counters, the floor respool_pool_resources_min, and the histograms
// respool_pool_acquire_wait_seconds, respool_pool_hold_seconds and respool_pool_create_seconds (filled
// with pool_options::record_timings). write_build_info adds respool_build_info{version="..."} 1.
//
// This writer depends on nothing but the standard library. With prometheus-cpp, register a
// respool::http::prometheus_collector (respool/http/prometheus_collector.hpp, target
// respool::prometheus) in its registry instead: same families, same labels.
#pragma once

#include <respool/stats.hpp>

#include <chrono>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace respool::http {

inline constexpr std::string_view exposition_content_type = "text/plain; version=0.0.4; charset=utf-8";

// A label of a sample. The value is escaped as the format says (\\, \", \n); the name must match
// [a-zA-Z_][a-zA-Z0-9_]* and not start with "__" (std::invalid_argument naming it otherwise).
struct label {
    std::string name;
    std::string value;
};

// One pool's snapshot and the labels that tell it apart from the others in the same output, e.g.
// {{"pool", "writer"}} or {{"pool", "writer"}, {"thread", "0"}}. Labels "state" and "le" are taken.
struct pool_sample {
    std::vector<label> labels;
    pool_stats stats;
};

struct metrics_options {
    // The histograms' bucket upper bounds (the `le` labels), ascending, each a bound of
    // respool::histogram: a power of two microseconds from 1 us to 2^24 us (16.777216 s). Empty: the
    // default, every other one (1, 4, 16, 64, 256 us, ..., 4.194304 s, 16.777216 s: 13 buckets and +Inf).
    // Anything else: std::invalid_argument naming the bound.
    std::vector<std::chrono::microseconds> buckets;
    // The collector's label naming each pool (prometheus_collector::add).
    std::string pool_label = "pool";
};

// Appends the pool metric families for `pools` to `out`. With no pool, appends nothing.
void write_pool_metrics(std::string& out, std::span<const pool_sample> pools,
                        const metrics_options& options = {});
inline void write_pool_metrics(std::string& out, std::initializer_list<pool_sample> pools,
                               const metrics_options& options = {}) {
    write_pool_metrics(out, std::span<const pool_sample>(pools.begin(), pools.size()), options);
}

// Appends respool_build_info{version="<RESPOOL_VERSION_STRING>"} 1 (a gauge): the library's version,
// to tell releases apart in dashboards.
void write_build_info(std::string& out);

}  // namespace respool::http
