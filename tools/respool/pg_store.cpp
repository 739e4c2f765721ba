// kv_store over respool::pg::pool. Values are bytea (arbitrary bytes, returned exactly). incr is one
// transaction whose first statement is an upsert that locks the key's row (inserting "0" when it is
// missing) and returns the stored value: a concurrent increment of the same key waits for that lock
// and then reads the committed value, so none is lost; the new value is computed here, where the 409
// rules (a stored non-integer, an overflow) are exact, and a 409 rolls the transaction back, the
// inserted "0" with it.
#include "kv_store.hpp"

#include "db_health.hpp"

#include <respool/http/request_lease.hpp>
#include <respool/pg/errors.hpp>
#include <respool/pg/pool.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <span>

namespace asio = boost::asio;
namespace pg = respool::pg;
using respool::error_code;

namespace respool_cli {
namespace {

constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

std::string string_of(const std::vector<std::byte>& b) {
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

class pg_store final : public kv_store {
public:
    pg_store(asio::any_io_executor ex, pg::pool_config c)
        : borrow_timeout_(c.borrow_timeout), db_(std::move(ex), std::move(c)) {}

    asio::awaitable<kv_result> get(std::string key) override {
        auto conn = co_await borrow();
        if (!conn) co_return fail(conn.error());
        auto [ec, r] = co_await conn->async_query("SELECT v FROM respool_kv WHERE k = $1", pg::params(key),
                                                  tuple_awaitable);
        if (ec) co_return fail(ec, conn.get());
        note({});
        if (r.rows() == 0) co_return kv_result{{}, kv_result::outcome::absent, {}};
        co_return kv_result{{}, kv_result::outcome::ok, string_of(r.get<std::vector<std::byte>>(0, 0))};
    }

    asio::awaitable<kv_result> put(std::string key, std::string value) override {
        auto conn = co_await borrow();
        if (!conn) co_return fail(conn.error());
        auto [ec, r] = co_await conn->async_query(
            "INSERT INTO respool_kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v",
            pg::params(key, bytes_of(value)), tuple_awaitable);
        if (ec) co_return fail(ec, conn.get());
        note({});
        co_return kv_result{};
    }

    asio::awaitable<kv_result> erase(std::string key) override {
        auto conn = co_await borrow();
        if (!conn) co_return fail(conn.error());
        auto [ec, r] = co_await conn->async_query("DELETE FROM respool_kv WHERE k = $1", pg::params(key),
                                                  tuple_awaitable);
        if (ec) co_return fail(ec, conn.get());
        note({});
        co_return kv_result{
            {}, r.affected_rows() == 0 ? kv_result::outcome::absent : kv_result::outcome::ok, {}};
    }

    asio::awaitable<kv_result> incr(std::string key) override {
        auto conn = co_await borrow();
        if (!conn) co_return fail(conn.error());
        // A failed statement leaves the transaction open: the pool's reset on release rolls it back.
        auto [bec, b] = co_await conn->async_query("BEGIN", tuple_awaitable);
        if (bec) co_return fail(bec, conn.get());
        const std::string zero = "0";
        auto [lec, locked] = co_await conn->async_query(
            "INSERT INTO respool_kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET k = excluded.k "
            "RETURNING v",
            pg::params(key, bytes_of(zero)), tuple_awaitable);
        if (lec) co_return fail(lec, conn.get());
        const std::string stored = string_of(locked.get<std::vector<std::byte>>(0, 0));
        kv_result next = increment(&stored);
        if (next.what != kv_result::outcome::ok) {
            auto [rec, rb] = co_await conn->async_query("ROLLBACK", tuple_awaitable);
            if (rec) co_return fail(rec, conn.get());
            note({});
            co_return next;
        }
        auto [uec, u] = co_await conn->async_query("UPDATE respool_kv SET v = $2 WHERE k = $1",
                                                   pg::params(key, bytes_of(next.value)), tuple_awaitable);
        if (uec) co_return fail(uec, conn.get());
        auto [cec, c] = co_await conn->async_query("COMMIT", tuple_awaitable);
        if (cec) co_return fail(cec, conn.get());
        note({});
        co_return next;
    }

    // On the pool (its async_query poisons a broken connection itself), with the failure in words:
    // libpq's for a connect that failed, the server's for a statement.
    asio::awaitable<error_code> probe() override {
        respool::diagnostics diag;
        error_code ec;
        if (!schema_ready_) {
            auto [sec, r] = co_await db_.async_query(create_table, &diag, tuple_awaitable);
            if (!sec || pg::sqlstate_of(sec) == "23505" || pg::sqlstate_of(sec) == "42P07")
                schema_ready_ = true;
            ec = schema_ready_ ? error_code{} : sec;
        }
        if (!ec) {
            auto [qec, r] = co_await db_.async_query("SELECT 1", &diag, tuple_awaitable);
            ec = qec;
        }
        note_probe(ec, diag.message);
        co_return ec;
    }

    void report_to(db_health& h, std::size_t w) override {
        kv_store::report_to(h, w);
        const std::string name = "postgresql (thread " + std::to_string(w) + ")";
        db_.base().add_observer(make_pool_observer(h, name));
        db_.base().set_log_sink(make_pool_log_sink(name));
    }

    std::vector<pool_view> pools() const override { return {{"postgresql", db_.stats()}}; }

    asio::awaitable<void> close(std::chrono::nanoseconds grace) override {
        co_await db_.async_close(std::chrono::duration_cast<respool::duration>(grace), tuple_awaitable);
    }

private:
    // A connection within the borrow timeout, on a database whose table exists: the first borrow
    // that reaches the server creates it (the server may be down at startup).
    asio::awaitable<respool::http::request_lease<pg::connection>> borrow() {
        auto conn = co_await respool::http::borrow(db_, std::chrono::steady_clock::now() + borrow_timeout_);
        if (!conn || schema_ready_) co_return conn;
        auto [ec, r] = co_await conn->async_query(create_table, tuple_awaitable);
        // Two loops creating it at once: one of them meets the other's catalog row (23505) or table
        // (42P07); either way the table is there.
        if (!ec || pg::sqlstate_of(ec) == "23505" || pg::sqlstate_of(ec) == "42P07") {
            schema_ready_ = true;
            co_return conn;
        }
        if (ec == pg::condition::connection_broken) conn.get().poison();
        co_return respool::http::request_lease<pg::connection>(ec);
    }

    static constexpr const char* create_table =
        "CREATE TABLE IF NOT EXISTS respool_kv (k text PRIMARY KEY, v bytea NOT NULL)";

    kv_result fail(const error_code& ec, std::string words = {}) {
        note(ec, words);
        return {ec, kv_result::outcome::ok, {}, std::move(words)};
    }
    // A statement's failure: the server's words (masked by the connection), then the lease's fate.
    kv_result fail(const error_code& ec, respool::lease<pg::connection>& l) {
        std::string words = pg::describe(ec, l->last_error());
        if (ec == pg::condition::connection_broken) l.poison();  // never lent again
        return fail(ec, std::move(words));
    }

    respool::duration borrow_timeout_;
    pg::pool db_;
    bool schema_ready_ = false;
};

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
    return std::make_unique<pg_store>(std::move(ex), std::move(c));
}

}  // namespace respool_cli
