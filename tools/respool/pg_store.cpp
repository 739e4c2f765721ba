// The service's store on one PostgreSQL server: db_store (db_store.hpp) over pg::pool with the
// statements of pg_dialect.hpp.
#include "pg_dialect.hpp"

#include <algorithm>

namespace asio = boost::asio;
namespace pg = respool::pg;

namespace respool_cli {

pg::pool_config pg_pool_config(const db_target& target, const serve_config& cfg) {
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
    if (cfg.unnamed_statements) c.statements = pg::statement_mode::unnamed;
    if (cfg.budget_auto)
        c.budget = pg::budget_config{
            .schema = cfg.budget_schema,
            .reserve = cfg.budget_reserve,
            .heartbeat = std::chrono::duration_cast<std::chrono::milliseconds>(cfg.budget_heartbeat),
            .lease = std::chrono::duration_cast<std::chrono::milliseconds>(cfg.budget_lease)};
    c.record_timings = true;  // /metrics' wait and hold histograms
    if (cfg.breaker_failures == 0)
        c.circuit.reset();
    else
        c.circuit =
            respool::breaker_options{.failures_to_open = cfg.breaker_failures, .cool_down = d(cfg.cool_down)};
    return c;
}

std::unique_ptr<kv_store> make_pg_store(asio::any_io_executor ex, const db_target& target,
                                        const serve_config& cfg) {
    return std::make_unique<db_store<pg_dialect>>(std::move(ex), pg_pool_config(target, cfg));
}

}  // namespace respool_cli
