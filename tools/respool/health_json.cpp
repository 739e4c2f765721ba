#include "health_json.hpp"

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace json = boost::json;

namespace respool_cli {

namespace {

// The field's integer, 0 when absent or not a number.
long count(const json::object& o, std::string_view key) {
    const json::value* v = o.if_contains(key);
    if (!v) return 0;
    boost::system::error_code ec;
    const auto n = v->to_number<long>(ec);
    return ec ? 0 : n;
}

std::string_view text(const json::object& o, std::string_view key) {
    const json::value* v = o.if_contains(key);
    return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

json::object pool_counts(const health_pool& p) {
    return json::object{{"idle", p.idle}, {"active", p.active},   {"total", p.total},
                        {"max", p.max},   {"waiting", p.waiting}, {"circuit", p.circuit}};
}

json::object budget_json(const health_budget& b) {
    json::value degraded = nullptr;
    if (!b.degraded.empty()) degraded = b.degraded;
    return json::object{{"connections", b.connections}, {"members", b.members},
                        {"granted", b.granted},         {"target", b.target},
                        {"demand", b.demand},           {"degraded", std::move(degraded)}};
}

json::object cluster_json(const health_cluster& c) {
    json::array hosts;
    hosts.reserve(c.hosts.size());
    for (const health_host& h : c.hosts) {
        json::value lag = nullptr;
        if (h.lag_ms) lag = *h.lag_ms;
        hosts.push_back(json::object{{"thread", h.thread},
                                     {"name", h.name},
                                     {"role", h.role},
                                     {"writable", h.writable},
                                     {"timeline", h.timeline},
                                     {"lag_ms", std::move(lag)},
                                     {"pool", pool_counts(h.pool)}});
    }
    json::value primary = nullptr;
    if (!c.primary.empty()) primary = c.primary;
    return json::object{{"primary", std::move(primary)}, {"hosts", std::move(hosts)}};
}

}  // namespace

std::string health_up_body(std::string_view database, std::size_t threads,
                           const std::vector<health_pool>& pools, const health_cluster* cluster) {
    json::array list;
    list.reserve(pools.size());
    for (const health_pool& p : pools) {
        json::object entry{{"thread", p.thread},   {"pool", p.name},      {"idle", p.idle},
                           {"active", p.active},   {"total", p.total},    {"max", p.max},
                           {"waiting", p.waiting}, {"circuit", p.circuit}};
        if (p.budget) entry["budget"] = budget_json(*p.budget);
        list.push_back(std::move(entry));
    }
    // Insertion order is the order written: status first, as clients matching a prefix expect.
    json::object body{
        {"status", "up"}, {"database", database}, {"threads", threads}, {"pools", std::move(list)}};
    if (cluster) body["cluster"] = cluster_json(*cluster);
    return json::serialize(body);
}

std::string health_down_body(std::string_view reason, std::string_view since, const health_cluster* cluster) {
    json::object body{{"status", "down"}, {"reason", reason}, {"since", since}};
    if (cluster) body["cluster"] = cluster_json(*cluster);
    return json::serialize(body);
}

health_reading read_health(unsigned status, std::string_view body) {
    health_reading r;
    r.up = status == 200;
    boost::system::error_code ec;
    const json::value v = json::parse(body, ec);
    const json::object* top = ec ? nullptr : v.if_object();
    const json::value* pools = top ? top->if_contains("pools") : nullptr;
    if (!pools || !pools->is_array()) return r;
    bool open = false, half_open = false;
    for (const json::value& item : pools->get_array()) {
        const json::object* p = item.if_object();
        if (!p) continue;
        auto& sums = r.pools[std::string(text(*p, "pool"))];
        sums[0] += count(*p, "idle");
        sums[1] += count(*p, "active");
        sums[2] += count(*p, "waiting");
        open = open || text(*p, "circuit") == "open";
        half_open = half_open || text(*p, "circuit") == "half_open";
    }
    r.circuit = open ? "open" : half_open ? "half_open" : "closed";
    return r;
}

}  // namespace respool_cli
