// HTTP request counters and latency histograms (respool/http/request_metrics.hpp).
#include <respool/http/request_metrics.hpp>
#include <respool/stats.hpp>

#include "http/metric_families.hpp"

#include <map>
#include <mutex>
#include <tuple>

namespace respool::http {
namespace {

// Series keys. The maps are ordered so that a scrape lists series in a stable order; std::less<> lets
// record() look a key up by string_view without building strings (they are built once, on insertion).
struct count_key {
    std::string route;
    std::string method;
    unsigned status;
};
struct count_view {
    std::string_view route;
    std::string_view method;
    unsigned status;
};
struct time_key {
    std::string route;
    std::string method;
};
struct time_view {
    std::string_view route;
    std::string_view method;
};
template <class A, class B>
bool before(const A& a, const B& b) {
    if constexpr (requires { a.status; })
        return std::tie(a.route, a.method, a.status) < std::tie(b.route, b.method, b.status);
    else
        return std::tie(a.route, a.method) < std::tie(b.route, b.method);
}
struct key_less {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
        return before(view(a), view(b));
    }
    static count_view view(const count_key& k) { return {k.route, k.method, k.status}; }
    static count_view view(const count_view& k) { return k; }
    static time_view view(const time_key& k) { return {k.route, k.method}; }
    static time_view view(const time_view& k) { return k; }
};

using count_map = std::map<count_key, std::uint64_t, key_less>;
using time_map = std::map<time_key, histogram, key_less>;

void add(histogram& into, const histogram& h) {
    for (std::size_t k = 0; k < histogram::size; ++k) into.counts[k] += h.counts[k];
    into.sum += h.sum;
}

}  // namespace

struct request_metrics::impl {
    mutable std::mutex m;
    count_map counts;
    time_map times;
};

request_metrics::request_metrics() : impl_(std::make_unique<impl>()) {}
request_metrics::~request_metrics() = default;

namespace {

std::string_view bounded_method(std::string_view method) noexcept {
    for (std::string_view known :
         {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"})
        if (method == known) return known;
    return "other";
}

}  // namespace

void request_metrics::record(std::string_view route, std::string_view method, unsigned status,
                             std::chrono::nanoseconds elapsed) {
    method = bounded_method(method);
    std::lock_guard lock(impl_->m);
    auto c = impl_->counts.find(count_view{route, method, status});
    if (c == impl_->counts.end())
        c = impl_->counts.emplace(count_key{std::string(route), std::string(method), status}, 0).first;
    ++c->second;
    auto t = impl_->times.find(time_view{route, method});
    if (t == impl_->times.end())
        t = impl_->times.emplace(time_key{std::string(route), std::string(method)}, histogram{}).first;
    t->second.record(elapsed);
}

void request_metrics::write(std::string& out, const metrics_options& options) const {
    write_request_metrics(out, {this}, options);
}

void write_request_metrics(std::string& out, std::span<const request_metrics* const> shards,
                           const metrics_options& options) {
    const auto bounds = detail::bounds_us(options);
    count_map counts;
    time_map times;
    for (const request_metrics* s : shards) {
        std::lock_guard lock(s->impl_->m);
        for (const auto& [k, n] : s->impl_->counts) counts[k] += n;
        for (const auto& [k, h] : s->impl_->times) add(times[k], h);
    }
    std::vector<detail::family> families(2);
    families[0] = {"respool_http_requests_total",
                   "HTTP requests answered, by route pattern, method and status code.",
                   detail::family_type::counter,
                   {}};
    for (const auto& [k, n] : counts)
        families[0].samples.push_back(
            {{{"route", k.route}, {"method", k.method}, {"status", std::to_string(k.status)}}, n, {}});
    families[1] = {"respool_http_request_duration_seconds",
                   "Time from reading an HTTP request to its response written, by route pattern and method.",
                   detail::family_type::histogram,
                   {}};
    for (const auto& [k, h] : times)
        families[1].samples.push_back(
            {{{"route", k.route}, {"method", k.method}}, 0, detail::at_bounds(h, bounds)});
    detail::append_families(out, families, bounds);
}

}  // namespace respool::http
