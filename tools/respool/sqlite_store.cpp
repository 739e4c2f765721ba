// kv_store over respool::sqlite::pool. Reads borrow a reader (borrow_reader), writes the one writer
// (borrow): SQLite admits one writer per file, and the pool queues writers in FIFO order inside the
// process, so they never meet SQLITE_BUSY from each other. incr is one BEGIN IMMEDIATE transaction:
// the write lock is taken before the read, so no concurrent increment can be lost (--threads N gives
// N writers on the same file; SQLite's lock, waited for up to --busy-timeout, orders them).
#include "kv_store.hpp"

#include "db_health.hpp"

#include <respool/http/request_lease.hpp>
#include <respool/sqlite/pool.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <span>

namespace asio = boost::asio;
namespace sqlite = respool::sqlite;
using respool::error_code;

namespace respool_cli {
namespace {

constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

class sqlite_store final : public kv_store {
public:
    sqlite_store(asio::any_io_executor ex, sqlite::pool_config c)
        : borrow_timeout_(c.borrow_timeout), db_(std::move(ex), std::move(c)) {}

    asio::awaitable<kv_result> get(std::string key) override {
        error_code ec = co_await ensure_schema();
        if (ec) co_return fail(ec);
        auto conn = co_await respool::http::borrow_reader(db_, deadline());
        if (!conn) co_return fail(conn.error());
        auto [qec, r] = co_await conn->async_query("SELECT v FROM respool_kv WHERE k = ?",
                                                   sqlite::params(key), tuple_awaitable);
        if (qec) co_return fail(qec, conn.get());
        note({});
        if (r.rows() == 0) co_return kv_result{{}, kv_result::outcome::absent, {}};
        co_return kv_result{{}, kv_result::outcome::ok, std::string(r.text(0, 0))};
    }

    asio::awaitable<kv_result> put(std::string key, std::string value) override {
        error_code ec = co_await ensure_schema();
        if (ec) co_return fail(ec);
        auto conn = co_await respool::http::borrow(db_, deadline());
        if (!conn) co_return fail(conn.error());
        auto [qec, r] = co_await conn->async_query(
            "INSERT INTO respool_kv (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v",
            sqlite::params(key, bytes_of(value)), tuple_awaitable);
        if (qec) co_return fail(qec, conn.get());
        note({});
        co_return kv_result{};
    }

    asio::awaitable<kv_result> erase(std::string key) override {
        error_code ec = co_await ensure_schema();
        if (ec) co_return fail(ec);
        auto conn = co_await respool::http::borrow(db_, deadline());
        if (!conn) co_return fail(conn.error());
        auto [qec, r] = co_await conn->async_query("DELETE FROM respool_kv WHERE k = ?", sqlite::params(key),
                                                   tuple_awaitable);
        if (qec) co_return fail(qec, conn.get());
        note({});
        co_return kv_result{
            {}, r.affected_rows() == 0 ? kv_result::outcome::absent : kv_result::outcome::ok, {}};
    }

    asio::awaitable<kv_result> incr(std::string key) override {
        error_code ec = co_await ensure_schema();
        if (ec) co_return fail(ec);
        auto conn = co_await respool::http::borrow(db_, deadline());
        if (!conn) co_return fail(conn.error());
        // A statement that fails leaves the transaction open: the pool's reset on release rolls it
        // back, so every early return below is safe.
        auto [bec, b] = co_await conn->async_query("BEGIN IMMEDIATE", tuple_awaitable);
        if (bec) co_return fail(bec, conn.get());
        auto [sec, current] = co_await conn->async_query("SELECT v FROM respool_kv WHERE k = ?",
                                                         sqlite::params(key), tuple_awaitable);
        if (sec) co_return fail(sec, conn.get());
        std::string stored;
        if (current.rows() > 0) stored = std::string(current.text(0, 0));
        kv_result next = increment(current.rows() > 0 ? &stored : nullptr);
        if (next.what != kv_result::outcome::ok) {
            auto [rec, rb] = co_await conn->async_query("ROLLBACK", tuple_awaitable);
            note(rec);
            co_return next;
        }
        auto [uec, u] = co_await conn->async_query(
            "INSERT INTO respool_kv (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v",
            sqlite::params(key, bytes_of(next.value)), tuple_awaitable);
        if (uec) co_return fail(uec, conn.get());
        auto [cec, c] = co_await conn->async_query("COMMIT", tuple_awaitable);
        if (cec) co_return fail(cec, conn.get());
        note({});
        co_return next;
    }

    // On the pool, with the failure in words (an open's names the path).
    asio::awaitable<error_code> probe() override {
        respool::diagnostics diag;
        error_code ec;
        if (!schema_ready_) {
            auto [sec, r] = co_await db_.async_query(create_table, &diag, tuple_awaitable);
            ec = sec;
            if (!ec) schema_ready_ = true;
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
        for (auto* p : {&db_.writer_pool(), &db_.reader_pool()}) {
            const std::string name = std::string(p == &db_.writer_pool() ? "writer" : "reader") +
                                     " (thread " + std::to_string(w) + ")";
            p->add_observer(make_pool_observer(h, name));
            p->set_log_sink(make_pool_log_sink(name));
        }
    }

    std::vector<pool_view> pools() const override {
        return {{"writer", db_.writer_stats()}, {"reader", db_.reader_stats()}};
    }

    asio::awaitable<void> close(std::chrono::nanoseconds grace) override {
        const auto g = std::chrono::duration_cast<respool::duration>(grace);
        co_await db_.writer_pool().async_close(g, tuple_awaitable);
        co_await db_.reader_pool().async_close(g, tuple_awaitable);
        db_.close();
    }

private:
    std::chrono::steady_clock::time_point deadline() const {
        return std::chrono::steady_clock::now() + borrow_timeout_;
    }

    static constexpr const char* create_table =
        "CREATE TABLE IF NOT EXISTS respool_kv (k TEXT PRIMARY KEY NOT NULL, v BLOB NOT NULL) WITHOUT ROWID";

    kv_result fail(const error_code& ec, std::string words = {}) {
        note(ec, words);
        return {ec, kv_result::outcome::ok, {}, std::move(words)};
    }
    // A statement's failure: SQLite's words, then the lease's fate.
    kv_result fail(const error_code& ec, respool::lease<sqlite::connection>& l) {
        std::string words = sqlite::describe(ec, l->last_error());
        if (ec == sqlite::condition::connection_broken) l.poison();  // never lent again
        return fail(ec, std::move(words));
    }

    // The table, created on the writer the first time the database answers (it may be unreachable
    // at startup: a folder that appears later).
    asio::awaitable<error_code> ensure_schema() {
        if (schema_ready_) co_return error_code{};
        auto conn = co_await respool::http::borrow(db_, deadline());
        if (!conn) co_return conn.error();
        auto [ec, r] = co_await conn->async_query(create_table, tuple_awaitable);
        if (ec == sqlite::condition::connection_broken) conn.get().poison();
        if (!ec) schema_ready_ = true;
        co_return ec;
    }

    respool::duration borrow_timeout_;
    sqlite::pool db_;
    bool schema_ready_ = false;
};

}  // namespace

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
    return std::make_unique<sqlite_store>(std::move(ex), std::move(c));
}

}  // namespace respool_cli
