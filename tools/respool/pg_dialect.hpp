// The service's statements on PostgreSQL, shared by its one-server store (pg_store.cpp, over pg::pool)
// and its cluster store (pg_cluster_store.cpp, over pg::cluster): db_store's dialect (db_store.hpp),
// and the pool settings the flags make. Values are bytea (arbitrary bytes, returned exactly). incr's
// first statement is an upsert that locks the key's row (inserting "0" when it is missing) and returns
// the stored value: a concurrent increment of the same key waits for that lock and then reads the
// committed value, so none is lost; the new value is computed in C++, where the 409 rules (a stored
// non-integer, an overflow) are exact, and a 409 rolls the transaction back, the inserted "0" with it.
#pragma once

#include "db_store.hpp"

#include <respool/pg/errors.hpp>
#include <respool/pg/pool.hpp>

#include <string>
#include <utility>
#include <vector>

namespace respool_cli {

struct pg_dialect : dialect_types<respool::pg::pool, respool::pg::connection, respool::pg::params,
                                  respool::pg::result, respool::pg::error_with_diagnostics> {
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
        return respool::pg::sqlstate_of(ec) == "23505" || respool::pg::sqlstate_of(ec) == "42P07";
    }
    static std::vector<std::pair<const char*, respool::pool<connection>*>> pools_of(pool& db) {
        return {{"postgresql", &db.base()}};
    }
    // The pool's own async_close: the connections gone, then its row of the shared budget deleted
    // (--budget auto), so that the other instances take its share without waiting for its lease.
    static boost::asio::awaitable<void> close(pool& db, respool::duration grace) {
        co_await db.async_close(grace, boost::asio::as_tuple(boost::asio::use_awaitable));
    }
    static std::vector<pool_view> views_of(const pool& db) {
        return {{"postgresql", db.stats(), budget_view(db.budget_stats())}};
    }
    // A pool's budget for /health and /metrics: only with --budget auto.
    static std::optional<respool::pg::budget_stats> budget_view(respool::pg::budget_stats b) {
        if (!b.enabled) return std::nullopt;
        return b;
    }
};

// The service's connections carry an application_name unless the URL gives one, so that an operator
// (and the tests) can find them in pg_stat_activity.
inline std::string with_application_name(const std::string& conninfo) {
    const std::string fallback = "fallback_application_name=respool-serve";
    if (conninfo.rfind("postgresql://", 0) == 0 || conninfo.rfind("postgres://", 0) == 0)
        return conninfo + (conninfo.find('?') == std::string::npos ? "?" : "&") + fallback;
    return conninfo + " " + fallback;
}

// Each host's pool settings from the flags (one pool, or every host's pool of a cluster).
respool::pg::pool_config pg_pool_config(const db_target& target, const serve_config& cfg);

}  // namespace respool_cli
