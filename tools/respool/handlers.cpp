#include "handlers.hpp"

#include "budget_metrics.hpp"
#include "cluster_health.hpp"
#include "cluster_metrics.hpp"
#include "health_json.hpp"
#include "log.hpp"

#include <respool/http/metrics.hpp>
#include <respool/http/request_metrics.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <cstdio>
#include <string>

namespace asio = boost::asio;
namespace bh = boost::beast::http;

namespace respool_cli {
namespace {

enum class route_kind { health, metrics, kv, incr, unmatched };

struct route {
    route_kind kind = route_kind::unmatched;
    std::string_view key;
};

// The path without its query. Keys are not percent-decoded: "%41" is a bad key, not "A".
route match(std::string_view target) {
    const auto q = target.find('?');
    const std::string_view path = target.substr(0, q);
    if (path == "/health") return {route_kind::health, {}};
    if (path == "/metrics") return {route_kind::metrics, {}};
    constexpr std::string_view kv = "/kv/";
    if (path.substr(0, kv.size()) != kv) return {};
    std::string_view rest = path.substr(kv.size());
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos) return {route_kind::kv, rest};
    if (rest.substr(slash) == "/incr") return {route_kind::incr, rest.substr(0, slash)};
    return {};
}

bool valid_key(std::string_view key) {
    if (key.empty() || key.size() > 200) return false;
    for (const char c : key)
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-'))
            return false;
    return true;
}

response make_response(bh::status status, const request& req, std::string body, std::string_view type) {
    response res(status, req.version());
    res.keep_alive(req.keep_alive());
    if (!type.empty()) res.set(bh::field::content_type, type);
    res.body() = std::move(body);
    res.prepare_payload();
    return res;
}

response method_not_allowed(const request& req, std::string_view allow) {
    auto res = json_error(405, "method_not_allowed", "this path does not take that method", req.version(),
                          req.keep_alive());
    res.set(bh::field::allow, allow);
    return res;
}

// What the worker's loop sees of every worker's pools: stats() belongs to the pool's own thread, so
// each snapshot is taken there.
asio::awaitable<std::vector<std::vector<pool_view>>> all_pools(service& svc, worker& self) {
    std::vector<std::vector<pool_view>> out;
    for (auto& w : svc.workers) {
        if (w.get() == &self) {
            out.push_back(w->store->pools());
            continue;
        }
        kv_store* store = w->store.get();
        auto views = co_await asio::co_spawn(
            w->io, [store]() -> asio::awaitable<std::vector<pool_view>> { co_return store->pools(); },
            asio::use_awaitable);
        out.push_back(std::move(views));
    }
    co_return out;
}

// Every worker's cluster view (a cluster client), each taken on its own loop as all_pools does.
asio::awaitable<std::vector<std::optional<cluster_view>>> all_clusters(service& svc, worker& self) {
    std::vector<std::optional<cluster_view>> out;
    for (auto& w : svc.workers) {
        if (w.get() == &self) {
            out.push_back(w->store->cluster());
            continue;
        }
        kv_store* store = w->store.get();
        out.push_back(co_await asio::co_spawn(
            w->io, [store]() -> asio::awaitable<std::optional<cluster_view>> { co_return store->cluster(); },
            asio::use_awaitable));
    }
    co_return out;
}

// A pool's row of /health; `name` (and the budget's reason) are viewed, not copied.
health_pool health_row(std::size_t thread, std::string_view name, const respool::pool_stats& s,
                       const std::optional<respool::pg::budget_stats>& b = std::nullopt) {
    health_pool row{.thread = thread,
                    .name = name,
                    .idle = s.idle,
                    .active = s.active,
                    .total = s.total,
                    .max = s.max,
                    .waiting = s.waiting,
                    .circuit = respool::to_string(s.circuit)};
    if (b)
        row.budget = health_budget{.connections = b->budget,
                                   .members = b->members,
                                   .granted = b->granted,
                                   .target = b->target,
                                   .demand = b->demand,
                                   .degraded = b->degraded};
    return row;
}

// A cluster client's /health: up or down as judge_cluster says (writes can be served or not), the
// hosts listed either way.
asio::awaitable<response> cluster_health(service& svc, worker& self, const request& req) {
    const auto clusters = co_await all_clusters(svc, self);
    const auto pools = co_await all_pools(svc, self);
    const cluster_verdict verdict = judge_cluster(clusters);
    health_cluster hc;
    for (std::size_t t = 0; t < clusters.size(); ++t) {
        if (!clusters[t]) continue;
        const cluster_view& c = *clusters[t];
        if (t == 0 && c.primary) hc.primary = c.hosts[*c.primary].name;
        for (const cluster_host_view& h : c.hosts) {
            std::optional<std::int64_t> lag;
            if (h.lag) lag = std::chrono::duration_cast<std::chrono::milliseconds>(*h.lag).count();
            hc.hosts.push_back({.thread = t,
                                .name = h.name,
                                .role = h.role,
                                .writable = h.writable,
                                .timeline = h.timeline,
                                .lag_ms = lag,
                                .pool = health_row(t, h.name, h.pool)});
        }
    }
    if (!verdict.up) {
        const db_health::view v = svc.health->snapshot();
        const auto since = v.down ? v.since : std::chrono::system_clock::now();
        co_return make_response(bh::status::service_unavailable, req,
                                health_down_body(log::one_line(verdict.reason), log::rfc3339(since), &hc),
                                "application/json");
    }
    std::vector<health_pool> rows;
    for (std::size_t i = 0; i < pools.size(); ++i)
        for (const auto& p : pools[i]) rows.push_back(health_row(i, p.name, p.stats, p.budget));
    co_return make_response(bh::status::ok, req, health_up_body("postgresql", svc.workers.size(), rows, &hc),
                            "application/json");
}

// `s` inside a JSON string: quotes, backslashes and control characters escaped.
std::string json_escape(std::string_view s) {
    std::string out;
    for (const char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char u[8];
            std::snprintf(u, sizeof u, "\\u%04x", static_cast<unsigned>(c));
            out += u;
        } else {
            out += c;
        }
    }
    return out;
}

asio::awaitable<response> health(service& svc, worker& self, const request& req) {
    if (svc.target.cluster) co_return co_await cluster_health(svc, self, req);
    const auto pools = co_await all_pools(svc, self);
    bool up = true;
    for (auto& w : svc.workers) up = up && w->store->probed() && w->store->reachable();
    for (const auto& per_worker : pools)
        for (const auto& p : per_worker) up = up && p.stats.circuit != respool::circuit_state::open;
    if (!up) {
        // Why, and since when: the outage's cause (classified, the driver's words masked), or the
        // circuit, or no answer yet from the first check.
        const db_health::view v = svc.health->snapshot();
        std::string reason = v.reason;
        if (reason.empty()) {
            bool probed = true;
            for (auto& w : svc.workers) probed = probed && w->store->probed();
            reason =
                probed ? "circuit open: the pool stopped connecting for its cool-down" : "not checked yet";
        }
        co_return make_response(bh::status::service_unavailable, req,
                                health_down_body(reason, log::rfc3339(v.since)), "application/json");
    }
    std::vector<health_pool> rows;
    for (std::size_t i = 0; i < pools.size(); ++i)
        for (const auto& p : pools[i]) rows.push_back(health_row(i, p.name, p.stats, p.budget));
    const char* database = svc.target.kind == db_kind::sqlite ? "sqlite" : "postgresql";
    co_return make_response(bh::status::ok, req, health_up_body(database, svc.workers.size(), rows),
                            "application/json");
}

// Every bound of respool::histogram (1 us, 2 us, ..., 2^24 us), as /metrics has always written them: the
// `le` values users' dashboards and `respool demo`'s quantiles select stay the same (the library's
// default writes every other one).
const respool::http::metrics_options& every_bucket() {
    static const respool::http::metrics_options options = [] {
        respool::http::metrics_options o;
        for (std::size_t k = 0; k + 1 < respool::histogram::size; ++k)
            o.buckets.emplace_back(respool::histogram::upper_us(k));
        return o;
    }();
    return options;
}

asio::awaitable<response> metrics(service& svc, worker& self, const request& req) {
    const auto pools = co_await all_pools(svc, self);
    std::vector<respool::http::pool_sample> samples;
    for (std::size_t i = 0; i < pools.size(); ++i)
        for (const auto& p : pools[i]) {
            std::vector<respool::http::label> labels;
            labels.push_back({"pool", p.name});
            labels.push_back({"thread", std::to_string(i)});
            samples.push_back({std::move(labels), p.stats});
        }
    std::vector<const respool::http::request_metrics*> shards;
    for (auto& w : svc.workers) shards.push_back(&w->metrics);
    std::string out;
    respool::http::write_build_info(out);
    respool::http::write_pool_metrics(out, samples, every_bucket());
    std::vector<budget_sample> budgets;
    for (std::size_t i = 0; i < pools.size(); ++i)
        for (const auto& p : pools[i])
            if (p.budget) budgets.push_back({i, p.name, *p.budget});
    write_budget_metrics(out, budgets);
    if (svc.target.cluster) write_cluster_metrics(out, co_await all_clusters(svc, self));
    respool::http::write_request_metrics(out, shards, every_bucket());
    co_return make_response(bh::status::ok, req, std::move(out), respool::http::exposition_content_type);
}

// A failure of the store: the service's status mapping (respool::http, docs/09-service.md). A 500 is logged,
// and its body gets a "detail" with the database's words (`relation "x" does not exist (SQLSTATE 42P01)`: the
// server's message, which the connection masks; never a connection string).
response store_error(const kv_result& r, const request& req) {
    auto res = respool::http::error_response(r.ec, req.version(), req.keep_alive());
    if (res.result_int() == 500) {
        const std::string words = log::one_line(r.words.empty() ? r.ec.message() : r.words);
        log::error(std::string(req.method_string()) + " " + std::string(route_of(req.target())) + ": " +
                   words);
        std::string& body = res.body();
        if (!body.empty() && body.back() == '}') {
            body.pop_back();
            body += R"(,"detail":")" + json_escape(words) + R"("})";
            res.prepare_payload();
        }
    }
    return res;
}

asio::awaitable<response> kv(worker& w, const request& req, std::string key) {
    kv_store& store = *w.store;
    kv_result r;
    switch (req.method()) {
    case bh::verb::get: r = co_await store.get(std::move(key)); break;
    case bh::verb::put: r = co_await store.put(std::move(key), req.body()); break;
    case bh::verb::delete_: r = co_await store.erase(std::move(key)); break;
    default: co_return method_not_allowed(req, "GET, PUT, DELETE");
    }
    if (r.ec) co_return store_error(r, req);
    if (r.what == kv_result::outcome::absent)
        co_return json_error(404, "not_found", "no such key", req.version(), req.keep_alive());
    if (req.method() == bh::verb::get)
        co_return make_response(bh::status::ok, req, std::move(r.value), "application/octet-stream");
    co_return make_response(bh::status::no_content, req, {}, {});
}

asio::awaitable<response> incr(worker& w, const request& req, std::string key) {
    kv_result r = co_await w.store->incr(std::move(key));
    if (r.ec) co_return store_error(r, req);
    if (r.what == kv_result::outcome::not_integer)
        co_return json_error(409, "not_an_integer",
                             "the stored value is not an integer within signed 64 bits", req.version(),
                             req.keep_alive());
    if (r.what == kv_result::outcome::overflow)
        co_return json_error(409, "overflow", "the increment would overflow signed 64 bits", req.version(),
                             req.keep_alive());
    co_return make_response(bh::status::ok, req, std::move(r.value), "text/plain");
}

}  // namespace

std::string_view route_of(std::string_view target) {
    switch (match(target).kind) {
    case route_kind::health: return "/health";
    case route_kind::metrics: return "/metrics";
    case route_kind::kv: return "/kv/{key}";
    case route_kind::incr: return "/kv/{key}/incr";
    case route_kind::unmatched: break;
    }
    return "unmatched";
}

response json_error(unsigned status, std::string_view error, std::string_view message, unsigned version,
                    bool keep_alive) {
    response res(static_cast<bh::status>(status), version);
    res.keep_alive(keep_alive);
    res.set(bh::field::content_type, "application/json");
    res.body() = boost::json::serialize(boost::json::object{{"error", error}, {"message", message}});
    res.prepare_payload();
    return res;
}

asio::awaitable<response> handle(service& svc, worker& w, const request& req) {
    const route r = match(req.target());
    switch (r.kind) {
    case route_kind::health:
        if (req.method() != bh::verb::get) co_return method_not_allowed(req, "GET");
        co_return co_await health(svc, w, req);
    case route_kind::metrics:
        if (req.method() != bh::verb::get) co_return method_not_allowed(req, "GET");
        co_return co_await metrics(svc, w, req);
    case route_kind::kv:
    case route_kind::incr: {
        const bool is_incr = r.kind == route_kind::incr;
        const auto m = req.method();
        if (is_incr && m != bh::verb::post) co_return method_not_allowed(req, "POST");
        if (!is_incr && m != bh::verb::get && m != bh::verb::put && m != bh::verb::delete_)
            co_return method_not_allowed(req, "GET, PUT, DELETE");
        if (!valid_key(r.key))
            co_return json_error(400, "bad_key", "a key is 1 to 200 characters of A-Z a-z 0-9 . _ -",
                                 req.version(), req.keep_alive());
        if (is_incr) co_return co_await incr(w, req, std::string(r.key));
        co_return co_await kv(w, req, std::string(r.key));
    }
    case route_kind::unmatched: break;
    }
    co_return json_error(404, "not_found", "no such path", req.version(), req.keep_alive());
}

}  // namespace respool_cli
