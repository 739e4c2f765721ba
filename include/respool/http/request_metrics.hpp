// respool::http::request_metrics: counts and latencies of the HTTP requests a service answered, for
// its /metrics endpoint (Prometheus text exposition 0.0.4):
//   respool_http_requests_total{route="/kv/{key}",method="GET",status="200"}        counter
//   respool_http_request_duration_seconds{route="/kv/{key}",method="GET"}          histogram
//
//   request_metrics metrics;                                   // one per event-loop thread, say
//   metrics.record("/kv/{key}", "GET", 200, elapsed);          // after each response
//   write_request_metrics(out, {&metrics_of_thread_0, &metrics_of_thread_1});   // on a scrape
//
// `route` is the route's pattern, never the raw path: each distinct value is a time series.
// Threads: every member is thread-safe. Each object has its own mutex, held for a map lookup and an
// increment by record() and for a copy by the writers. One object per event-loop thread keeps that
// mutex uncontended but during a scrape; write_request_metrics merges them into one set of series.
#pragma once

#include <respool/http/metrics.hpp>

#include <chrono>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace respool::http {

class request_metrics {
public:
    request_metrics();
    ~request_metrics();
    request_metrics(const request_metrics&) = delete;
    request_metrics& operator=(const request_metrics&) = delete;

    // One answered request: its route pattern, method ("GET"), status code and time from the request's
    // first byte read (or its start) to the response written. A method outside RFC 9110's (GET, HEAD,
    // POST, PUT, DELETE, CONNECT, OPTIONS, TRACE) and PATCH is counted as "other": a label value taken
    // from the request would let any client create time series without bound.
    void record(std::string_view route, std::string_view method, unsigned status,
                std::chrono::nanoseconds elapsed);

    // Appends both families for this object alone (histogram buckets as `options` say).
    void write(std::string& out, const metrics_options& options = {}) const;

private:
    friend void write_request_metrics(std::string& out, std::span<const request_metrics* const> shards,
                                      const metrics_options& options);
    struct impl;
    std::unique_ptr<impl> impl_;
};

// Appends both families (HELP and TYPE once each) with the sum of `shards`' series.
void write_request_metrics(std::string& out, std::span<const request_metrics* const> shards,
                           const metrics_options& options = {});
inline void write_request_metrics(std::string& out, std::initializer_list<const request_metrics*> shards,
                                  const metrics_options& options = {}) {
    write_request_metrics(out, std::span<const request_metrics* const>(shards.begin(), shards.size()),
                          options);
}

}  // namespace respool::http
