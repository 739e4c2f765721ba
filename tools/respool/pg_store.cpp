// The service's store on PostgreSQL: db_store (db_store.hpp) with this dialect. Values are bytea
// (arbitrary bytes, returned exactly). incr's first statement is an upsert that locks the key's row
// (inserting "0" when it is missing) and returns the stored value: a concurrent increment of the same
// key waits for that lock and then reads the committed value, so none is lost; the new value is
// computed in C++, where the 409 rules (a stored non-integer, an overflow) are exact, and a 409 rolls
// the transaction back, the inserted "0" with it.
#include "db_store.hpp"

#include <respool/pg/errors.hpp>
#include <respool/pg/pool.hpp>

#include <algorithm>

namespace asio = boost::asio;
namespace pg = respool::pg;

namespace respool_cli {

// Outside the anonymous namespace: db_store's instantiation (a header's template) names it.
struct pg_dialect
    : dialect_types<pg::pool, pg::connection, pg::params, pg::result, pg::error_with_diagnostics> {
    static constexpr const char* create_table =
        "CREATE TABLE IF NOT EXISTS respool_kv (k text PRIMARY KEY, v bytea NOT NULL)";
    static constexpr const char* select = "SELECT v FROM respool_kv WHERE k = $1";
    static constexpr const char* upsert =
        "INSERT INTO respool_kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v";
    static constexpr const char* remove = "DELETE FROM respool_kv WHERE k = $1";
    static constexpr const char* lock_current =
        "INSERT INTO respool_kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET k = excluded.k "
        "RETURNING v";
    static constexpr const char* store_new = "UPDATE respool_kv SET v = $2 WHERE k = $1";

    static params lock_params(const std::string& key) {
        const std::string zero = "0";
        return params(key, bytes_of(zero));
    }
    static std::string value_of(const result& r) {
        const auto b = r.get<std::vector<std::byte>>(0, 0);
        return std::string(reinterpret_cast<const char*>(b.data()), b.size());
    }
    // Two loops creating the table at once: one of them meets the other's catalog row (23505) or
    // table (42P07); either way the table is there.
    static bool table_is_there(const respool::error_code& ec) {
        return pg::sqlstate_of(ec) == "23505" || pg::sqlstate_of(ec) == "42P07";
    }
    static std::vector<std::pair<const char*, respool::pool<connection>*>> pools_of(pool& db) {
        return {{"postgresql", &db.base()}};
    }
    static std::vector<pool_view> views_of(const pool& db) { return {{"postgresql", db.stats()}}; }
};

namespace {

// The service's connections carry an application_name unless the URL gives one, so that an operator
// (and the tests) can find them in pg_stat_activity.
std::string with_application_name(const std::string& conninfo) {
    const std::string fallback = "fallback_application_name=respool-serve";
    if (conninfo.rfind("postgresql://", 0) == 0 || conninfo.rfind("postgres://", 0) == 0)
        return conninfo + (conninfo.find('?') == std::string::npos ? "?" : "&") + fallback;
    return conninfo + " " + fallback;
}

}  // namespace

std::unique_ptr<kv_store> make_pg_store(asio::any_io_executor ex, const db_target& target,
                                        const serve_config& cfg) {
    auto d = [](std::chrono::nanoseconds n) { return std::chrono::duration_cast<respool::duration>(n); };
    pg::pool_config c;
    c.conninfo = with_application_name(target.location);
    c.max = cfg.max;
    c.min_idle = cfg.min_idle;
    c.borrow_timeout = d(cfg.borrow_timeout);
    c.max_waiters = cfg.max_waiters;
    c.idle_ttl = d(cfg.idle_ttl);
    c.max_lifetime = d(cfg.max_lifetime);
    c.statement_timeout = d(cfg.statement_timeout);
    c.connect_timeout = d(cfg.connect_timeout);
    c.healthcheck_interval = d(cfg.healthcheck_interval);
    c.connect_retry_max = d(cfg.connect_retry_max);
    c.connect_retry_initial = std::min(c.connect_retry_initial, c.connect_retry_max);  // a cap below 100 ms
    c.record_timings = true;  // /metrics' wait and hold histograms
    if (cfg.breaker_failures == 0)
        c.circuit.reset();
    else
        c.circuit =
            respool::breaker_options{.failures_to_open = cfg.breaker_failures, .cool_down = d(cfg.cool_down)};
    return std::make_unique<db_store<pg_dialect>>(std::move(ex), std::move(c));
}

}  // namespace respool_cli
