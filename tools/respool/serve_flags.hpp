// `respool serve`'s settings: the flags (docs/09-service.md), the --db URL and the --listen address. Parsing
// is CLI11's; a malformed value is a CLI11 validation error naming the flag, which main() turns into
// exit status 2. Nothing here prints a connection string unmasked.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace respool_cli {

enum class db_kind { sqlite, postgresql };

// What --db names: sqlite:PATH, or a PostgreSQL URI (postgresql://, postgres://) or libpq conninfo.
struct db_target {
    db_kind kind = db_kind::sqlite;
    std::string location;  // the SQLite path, or the conninfo / URI as given
    std::string shown;     // for messages: the path, or pg::masked(conninfo)
    // PostgreSQL with more than one host (`postgresql://h1:p1,h2:p2/db`, `host=a,b`): the service is a
    // cluster client (pg::cluster) instead of using one pool (pg::pool).
    bool cluster = false;
};

// Why `url` is not a --db value (empty when it is one). For PostgreSQL, libpq parses it
// (PQconninfoParse): a typo in a keyword fails here, at startup, not at the first connect.
std::string db_url_error(const std::string& url);
db_target parse_db_url(const std::string& url);  // url must have passed db_url_error

// --read-from: where a cluster client sends GET (pg::route's three choices).
enum class read_from { primary, standby, prefer_standby };
std::string read_from_error(const std::string& text);  // empty when primary, standby or prefer-standby
read_from parse_read_from(const std::string& text);    // text must have passed read_from_error
std::string_view to_string(read_from r) noexcept;      // "primary", "standby", "prefer-standby"

// --statements: how the PostgreSQL pools run statements with parameters (pg::statement_mode):
// `cache` (named prepared statements, kept per connection) or `unnamed` (for a transaction pooler
// such as PgBouncer in transaction mode, where a named statement may be missing or taken).
std::string statements_error(const std::string& text);  // empty when cache or unnamed

struct listen_address {
    std::string host;  // numeric address or a name resolved at startup
    std::uint16_t port = 0;
};
std::string listen_error(const std::string& text);  // empty when HOST:PORT
listen_address parse_listen(const std::string& text);

struct serve_config {
    std::string db = "sqlite:respool.db";
    std::string listen = "127.0.0.1:8080";
    std::size_t threads = 1;
    // Pool flags (per thread: N threads make N pools).
    std::size_t max = 16;      // pg: connections; sqlite: reader connections (the writer is one)
    std::size_t min_idle = 2;  // pg only (sqlite opens connections on first use)
    std::size_t max_waiters = 0;
    std::chrono::nanoseconds borrow_timeout = std::chrono::seconds(5);
    std::chrono::nanoseconds statement_timeout{};                         // 0 = none
    std::chrono::nanoseconds connect_timeout = std::chrono::seconds(10);  // pg
    std::chrono::nanoseconds busy_timeout = std::chrono::seconds(5);      // sqlite
    std::chrono::nanoseconds idle_ttl = std::chrono::seconds(300);
    std::chrono::nanoseconds max_lifetime{};  // pg; 0 = off
    bool unnamed_statements = false;          // pg: --statements unnamed
    std::uint32_t breaker_failures = 5;  // pg: consecutive failed connects that open the circuit; 0 = off
    std::chrono::nanoseconds cool_down = std::chrono::seconds(1);
    // pg: idle connections checked in the background this often (the pool's default); 0 = off.
    std::chrono::nanoseconds healthcheck_interval = std::chrono::seconds(30);
    // pg: the cap of the back-off between failed connects, which bounds how long the service answers
    // 503 once the database is back (up to this plus 20 % jitter, plus a connect). Below the library's
    // 10 s: a service should come back within seconds, and one connect per pool every 2 s is no load.
    std::chrono::nanoseconds connect_retry_max = std::chrono::seconds(2);
    // HTTP.
    std::chrono::nanoseconds request_timeout = std::chrono::seconds(30);  // body read, response write
    std::chrono::nanoseconds idle_timeout = std::chrono::seconds(60);     // keep-alive wait for a header
    std::chrono::nanoseconds shutdown_timeout = std::chrono::seconds(10);
    std::size_t body_limit = 1024 * 1024;  // 1 MiB, 413 beyond
    std::string log_level = "info";        // error, warn, info, debug (log.hpp)
    // A multi-host PostgreSQL URL only (no effect otherwise): where GET goes, how stale a standby may
    // be, how long a write waits for a new primary.
    read_from read_route = read_from::primary;
    std::chrono::nanoseconds max_replica_lag = std::chrono::seconds(1);
    std::chrono::nanoseconds failover_wait = std::chrono::seconds(5);
    // PostgreSQL: the connection budget shared by every instance (--budget auto), kept in
    // <budget_schema>.respool_budget. Each loop's pool (each host's, with a multi-host URL) is a member.
    bool budget_auto = false;
    std::string budget_schema;
    std::size_t budget_reserve = 3;
    std::chrono::nanoseconds budget_heartbeat = std::chrono::seconds(1);
    std::chrono::nanoseconds budget_lease = std::chrono::seconds(3);
};

// Adds serve's flags to `cmd`, filling `cfg` (validated: durations, URL, address, ranges).
void add_serve_flags(CLI::App& cmd, serve_config& cfg);
// The pool and database flags alone (shared with `respool demo`).
void add_pool_flags(CLI::App& cmd, serve_config& cfg);
// The cluster flags alone (--read-from, --max-replica-lag, --failover-wait).
void add_cluster_flags(CLI::App& cmd, serve_config& cfg);
// The budget flags alone (--budget, --budget-schema, --budget-reserve, --budget-heartbeat,
// --budget-lease), and what they need of each other and of --db (std::invalid_argument naming them).
void add_budget_flags(CLI::App& cmd, serve_config& cfg);
void check_budget_flags(const std::string& db, const serve_config& cfg);

}  // namespace respool_cli
