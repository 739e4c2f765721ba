#include "serve_flags.hpp"

#include "duration.hpp"
#include "duration_flag.hpp"
#include "log.hpp"

#include <respool/pg/errors.hpp>

#include <libpq-fe.h>

#include <charconv>

namespace respool_cli {

namespace {

bool starts_with(const std::string& s, std::string_view prefix) {
    return s.rfind(prefix, 0) == 0;
}

bool is_pg_uri(const std::string& url) {
    return starts_with(url, "postgresql://") || starts_with(url, "postgres://");
}

// A libpq conninfo is keyword=value pairs; anything else without a known scheme is a typo, not a
// connection string (libpq would read "foo" as a database name on the default socket).
bool looks_like_conninfo(const std::string& url) {
    return url.find('=') != std::string::npos;
}

// More than one host in a conninfo libpq parses: a comma in host or hostaddr (libpq's lists).
bool names_several_hosts(const std::string& conninfo) {
    char* err = nullptr;
    PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
    if (err) PQfreemem(err);
    if (!opts) return false;
    bool several = false;
    for (PQconninfoOption* o = opts; o->keyword; ++o) {
        const std::string_view key = o->keyword;
        if ((key == "host" || key == "hostaddr") && o->val &&
            std::string_view(o->val).find(',') != std::string_view::npos)
            several = true;
    }
    PQconninfoFree(opts);
    return several;
}

}  // namespace

std::string db_url_error(const std::string& url) {
    if (starts_with(url, "sqlite:")) {
        if (url.size() == std::string_view("sqlite:").size()) return "'sqlite:' names no file (sqlite:PATH)";
        return {};
    }
    if (!is_pg_uri(url) && !looks_like_conninfo(url))
        return "'" + respool::pg::masked(url) +
               "' is not a database URL (sqlite:PATH, postgresql://..., or a libpq conninfo \"host=... "
               "dbname=...\")";
    // libpq's parse, then the option values it would refuse only when a connect starts (a service
    // that cannot connect should not start); the reason names the option, masked.
    if (std::string reason = respool::pg::conninfo_error(url); !reason.empty())
        return "'" + respool::pg::masked(url) + "' is not a valid PostgreSQL connection string: " + reason;
    return {};
}

db_target parse_db_url(const std::string& url) {
    if (starts_with(url, "sqlite:")) {
        auto path = url.substr(std::string_view("sqlite:").size());
        return {db_kind::sqlite, path, path};
    }
    return {db_kind::postgresql, url, respool::pg::masked(url), names_several_hosts(url)};
}

std::string read_from_error(const std::string& text) {
    if (text == "primary" || text == "standby" || text == "prefer-standby") return {};
    return "'" + text + "' is not primary, standby or prefer-standby";
}

read_from parse_read_from(const std::string& text) {
    if (text == "standby") return read_from::standby;
    if (text == "prefer-standby") return read_from::prefer_standby;
    return read_from::primary;
}

std::string_view to_string(read_from r) noexcept {
    switch (r) {
    case read_from::standby: return "standby";
    case read_from::prefer_standby: return "prefer-standby";
    case read_from::primary: break;
    }
    return "primary";
}

std::string statements_error(const std::string& text) {
    if (text == "cache" || text == "unnamed") return {};
    return "'" + text + "' is not cache or unnamed";
}

std::string listen_error(const std::string& text) {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0)
        return "'" + text + "' is not HOST:PORT (e.g. 127.0.0.1:8080, [::1]:0)";
    std::string host = text.substr(0, colon);
    if (host.front() == '[' && (host.size() < 3 || host.back() != ']'))
        return "'" + text + "': an IPv6 address goes in brackets, [::1]:8080";
    const auto port = text.substr(colon + 1);
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535)
        return "'" + text + "': the port must be a number from 0 to 65535 (0 picks a free port)";
    return {};
}

listen_address parse_listen(const std::string& text) {
    const auto colon = text.rfind(':');
    std::string host = text.substr(0, colon);
    if (host.front() == '[') host = host.substr(1, host.size() - 2);
    return {host, static_cast<std::uint16_t>(std::stoul(text.substr(colon + 1)))};
}

void add_pool_flags(CLI::App& cmd, serve_config& cfg) {
    cmd.add_option("--db", cfg.db,
                   "sqlite:PATH (embedded SQLite file), or a PostgreSQL URI (postgresql://...) or conninfo")
        ->default_function([&cfg] { return respool::pg::masked(cfg.db); })  // --help shows it
        ->capture_default_str()
        ->check(CLI::Validator(db_url_error, "URL"));
    cmd.add_option("--max", cfg.max,
                   "connections per pool (PostgreSQL); reader connections per pool (SQLite: one writer more)")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{1}, std::size_t{10000}));
    cmd.add_option("--min-idle", cfg.min_idle, "connections kept open and ready (PostgreSQL)")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{0}, std::size_t{10000}));  // and at most --max (main.cpp)
    cmd.add_option("--max-waiters", cfg.max_waiters, "requests that may wait for a connection (0 = no bound)")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{0}, std::size_t{0x7fffffff}));  // the pool counts in 32 bits
    // A deadline that 0 would make expire at once (zero_duration::refused), where 0 means "none" for
    // --statement-timeout: a connect, a borrow of a connection not yet open, a request's header or body
    // not already in the socket's buffer would fail. --borrow-timeout 0
    // would never open a connection on demand (a borrow that may not wait cannot wait for a connect):
    // on SQLite, which opens on first use, the service answered 503 to everything.
    add_duration_flag(cmd, "--borrow-timeout", cfg.borrow_timeout,
                      "wait for a connection at most this long (then 503)", zero_duration::refused);
    add_duration_flag(cmd, "--statement-timeout", cfg.statement_timeout,
                      "statement deadline (then 504); 0 = none");
    add_duration_flag(cmd, "--connect-timeout", cfg.connect_timeout, "PostgreSQL connect deadline",
                      zero_duration::refused);
    add_duration_flag(cmd, "--busy-timeout", cfg.busy_timeout, "SQLite: wait for another process's lock");
    add_duration_flag(cmd, "--idle-ttl", cfg.idle_ttl, "close connections idle longer");
    add_duration_flag(cmd, "--max-lifetime", cfg.max_lifetime,
                      "PostgreSQL: retire connections older; 0 = off");
    cmd.add_option_function<std::string>(
           "--statements", [&cfg](const std::string& s) { cfg.unnamed_statements = s == "unnamed"; },
           "PostgreSQL: cache (named prepared statements, kept per connection) or unnamed (behind "
           "PgBouncer in transaction mode or another transaction pooler)")
        ->default_str("cache")
        ->check(CLI::Validator(statements_error, "cache|unnamed"));
    cmd.add_option("--breaker-failures", cfg.breaker_failures,
                   "PostgreSQL: failed connects in a row that open the circuit (0 = no circuit)")
        ->capture_default_str();
    add_duration_flag(cmd, "--cool-down", cfg.cool_down, "open circuit: time before a probe connect");
    add_duration_flag(cmd, "--healthcheck-interval", cfg.healthcheck_interval,
                      "PostgreSQL: check idle connections this often; 0 = off");
    // 0 would retry a refused connect at once, in a loop, for as long as the database is down.
    add_duration_flag(
        cmd, "--connect-retry-max", cfg.connect_retry_max,
        "PostgreSQL: the longest wait between failed connects (bounds recovery after an outage)",
        zero_duration::refused);
}

// Accepted with any --db (a deployment's flags need not change with its URL) and used only with a
// multi-host PostgreSQL URL; --help says so.
void add_cluster_flags(CLI::App& cmd, serve_config& cfg) {
    cmd.add_option_function<std::string>(
           "--read-from", [&cfg](const std::string& s) { cfg.read_route = parse_read_from(s); },
           "multi-host PostgreSQL only: where GET reads, primary, standby or prefer-standby (a standby "
           "within --max-replica-lag, else the primary)")
        ->default_str(std::string(to_string(cfg.read_route)))
        ->check(CLI::Validator(read_from_error, "primary|standby|prefer-standby"));
    // 0 would make no standby ever current enough: refused, as --read-from primary says that.
    add_duration_flag(cmd, "--max-replica-lag", cfg.max_replica_lag,
                      "multi-host PostgreSQL only: a standby read may be this stale at most",
                      zero_duration::refused);
    add_duration_flag(cmd, "--failover-wait", cfg.failover_wait,
                      "multi-host PostgreSQL only: a write waits this long for a new primary (then 503); "
                      "0 = fail at once");
}

void add_budget_flags(CLI::App& cmd, serve_config& cfg) {
    cmd.add_option_function<std::string>(
           "--budget", [&cfg](const std::string& s) { cfg.budget_auto = s == "auto"; },
           "PostgreSQL: off, or auto: share the server's connections with every other instance through "
           "a table in --budget-schema (each pool's max follows its share)")
        ->default_str("off")
        ->check(CLI::IsMember({"off", "auto"}));
    cmd.add_option("--budget-schema", cfg.budget_schema,
                   "with --budget auto: the schema that holds respool_budget (the role needs USAGE and "
                   "CREATE on it, or the table made by an operator)");
    cmd.add_option("--budget-reserve", cfg.budget_reserve,
                   "with --budget auto: connections left to non-members (admin sessions, migrations)")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{0}, std::size_t{10000}));
    add_duration_flag(cmd, "--budget-heartbeat", cfg.budget_heartbeat,
                      "with --budget auto: how often the share is renewed", zero_duration::refused);
    add_duration_flag(cmd, "--budget-lease", cfg.budget_lease,
                      "with --budget auto: an instance not heard of this long is gone (its share returns)",
                      zero_duration::refused);
}

void check_budget_flags(const std::string& db, const serve_config& cfg) {
    if (!cfg.budget_auto) {
        if (!cfg.budget_schema.empty())
            throw std::invalid_argument("--budget-schema is used only with --budget auto");
        return;
    }
    if (parse_db_url(db).kind != db_kind::postgresql)
        throw std::invalid_argument(
            "--budget auto is for PostgreSQL (an SQLite database has no server connections to share)");
    if (cfg.budget_schema.empty())
        throw std::invalid_argument(
            "--budget auto needs --budget-schema NAME (the schema of respool_budget)");
    if (cfg.budget_schema.size() > 63)
        throw std::invalid_argument("--budget-schema '" + cfg.budget_schema +
                                    "' is longer than 63 bytes (PostgreSQL's longest name)");
    if (cfg.budget_lease <= cfg.budget_heartbeat)
        throw std::invalid_argument("--budget-lease (" + format_duration(cfg.budget_lease) +
                                    ") must exceed --budget-heartbeat (" +
                                    format_duration(cfg.budget_heartbeat) + ")");
}

void add_serve_flags(CLI::App& cmd, serve_config& cfg) {
    add_pool_flags(cmd, cfg);
    add_cluster_flags(cmd, cfg);
    add_budget_flags(cmd, cfg);
    cmd.add_option("--listen", cfg.listen, "HOST:PORT to listen on (port 0 picks a free port)")
        ->capture_default_str()
        ->check(CLI::Validator(listen_error, "HOST:PORT"));
    cmd.add_option("--threads", cfg.threads, "event loops, each with its own pool")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{1}, std::size_t{256}));
    add_duration_flag(cmd, "--request-timeout", cfg.request_timeout,
                      "read a request's body and write its response", zero_duration::refused);
    add_duration_flag(cmd, "--idle-timeout", cfg.idle_timeout,
                      "keep-alive: wait this long for the next request", zero_duration::refused);
    add_duration_flag(cmd, "--shutdown-timeout", cfg.shutdown_timeout,
                      "SIGINT/SIGTERM: in-flight requests and pools get this long");
    cmd.add_option_function<std::string>(
           "--log-level",
           [&cfg](const std::string& s) {
               cfg.log_level = s;
               log::set_level(*log::parse_level(s));
           },
           "standard error's log: error, warn, info or debug")
        ->default_str(cfg.log_level)
        ->check(CLI::Validator(log::level_error, "LEVEL"));
}

}  // namespace respool_cli
