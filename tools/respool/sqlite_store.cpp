// The service's store on SQLite: db_store (db_store.hpp) with this dialect. GET is a read-only
// statement, which the pool runs in a reader's batch; PUT and DELETE are single writes with
// parameters, which join the writer's group commit (SQLite admits one writer per file, and the pool
// queues writers in FIFO order inside the process, so they never meet SQLITE_BUSY from each other).
// incr is one transaction on the writer, BEGIN IMMEDIATE: the write lock is taken before the read, so
// no concurrent increment can be lost (--threads N gives N writers on the same file; SQLite's lock,
// waited for up to --busy-timeout, orders them).
#include "db_store.hpp"

#include <respool/sqlite/errors.hpp>
#include <respool/sqlite/pool.hpp>

namespace asio = boost::asio;
namespace sqlite = respool::sqlite;

namespace respool_cli {

// Outside the anonymous namespace: db_store's instantiation (a header's template) names it.
struct sqlite_dialect : dialect_types<sqlite::pool, sqlite::connection, sqlite::params, sqlite::result,
                                      sqlite::error_with_diagnostics> {
    static constexpr const char* create_table =
        "CREATE TABLE IF NOT EXISTS respool_kv (k TEXT PRIMARY KEY NOT NULL, v BLOB NOT NULL) WITHOUT ROWID";
    static constexpr const char* select = "SELECT v FROM respool_kv WHERE k = ?";
    static constexpr const char* upsert =
        "INSERT INTO respool_kv (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v";
    static constexpr const char* remove = "DELETE FROM respool_kv WHERE k = ?";
    static constexpr const char* lock_current = select;  // the transaction took the write lock at BEGIN
    static constexpr const char* store_new = upsert;

    static params lock_params(const std::string& key) { return params(key); }
    static std::string value_of(const result& r) { return std::string(r.text(0, 0)); }
    static bool table_is_there(const respool::error_code&) { return false; }
    static std::vector<std::pair<const char*, respool::pool<connection>*>> pools_of(pool& db) {
        return {{"writer", &db.writer_pool()}, {"reader", &db.reader_pool()}};
    }
    static std::vector<pool_view> views_of(const pool& db) {
        return {{"writer", db.writer_stats()}, {"reader", db.reader_stats()}};
    }
};

std::unique_ptr<kv_store> make_sqlite_store(asio::any_io_executor ex, const db_target& target,
                                            const serve_config& cfg) {
    auto d = [](std::chrono::nanoseconds n) { return std::chrono::duration_cast<respool::duration>(n); };
    sqlite::pool_config c;
    c.path = target.location;
    c.readers = cfg.max;
    c.borrow_timeout = d(cfg.borrow_timeout);
    c.max_waiters = cfg.max_waiters;
    c.idle_ttl = d(cfg.idle_ttl);
    c.statement_timeout = d(cfg.statement_timeout);
    c.busy_timeout = d(cfg.busy_timeout);
    c.record_timings = true;  // /metrics' wait and hold histograms
    return std::make_unique<db_store<sqlite_dialect>>(std::move(ex), std::move(c));
}

}  // namespace respool_cli
