// The one kv_store of `respool serve`, over a database pool's own operations: a service written the
// way the library's users write theirs. Every operation is one pool.async_query (the pool borrows
// a connection within its borrow timeout, gives it back, and poisons it only when the connection
// broke) except incr, which is one pool.transaction. So the service runs what the pools offer a
// statement: SQLite's read batches (GET) and group commit (PUT, DELETE), PostgreSQL's pipelining
// (every statement with parameters, when pipeline_depth > 1).
//
// What differs between the databases is the dialect, a small traits struct (pg_store.cpp,
// sqlite_store.cpp):
//   pool, result, params, error       the database's types (error: its error_with_diagnostics)
//   create_table                       CREATE TABLE IF NOT EXISTS respool_kv (k, v)
//   select, upsert, remove             the statements of GET, PUT, DELETE: (key), (key, value), (key)
//   lock_current, lock_params(key)     incr's first statement: the key's stored value, zero or one row,
//                                      taking the write lock so that no concurrent increment is lost
//   store_new                          incr's second statement: (key, new value)
//   value_of(result)                   the stored bytes of row 0
//   table_is_there(ec)                 create_table failed only because another loop created it
//   pools_of(pool)                     the generic pools underneath, named (observers, log sinks, close)
//   views_of(pool)                     their snapshots, named, for /health and /metrics
// and, optionally (a cluster of hosts, pg_cluster_store.cpp):
//   read_route                         a type: GET runs pool.async_query(read_route, sql, params, ...)
//                                      with the store's value of it (where reads go), not where writes go
//   cluster_of(pool)                   the hosts and their roles, for /health and /metrics
//   learns_roles_first = true          the first probe waits for pool.async_wait_ready (roles known)
//   close(pool, grace)                 an awaitable closing it all, instead of each generic pool's
//                                      async_close (a PostgreSQL pool also leaves the shared budget)
//
// incr rolls its transaction back for a 409 (a stored non-integer, an overflow): the function ends
// with refused, which the pool's transaction treats as any exception (ROLLBACK, the lease back).
#pragma once

#include "db_health.hpp"
#include "kv_store.hpp"

#include <respool/options.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <exception>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace respool_cli {

// A dialect's types (see above).
template <class Pool, class Connection, class Params, class Result, class Error>
struct dialect_types {
    using pool = Pool;
    using connection = Connection;
    using params = Params;
    using result = Result;
    using error = Error;
    static constexpr bool learns_roles_first = false;
};

// Where a dialect's reads go: its read_route type, or nowhere in particular (reads go where writes go).
struct same_as_writes {};
template <class Dialect>
struct read_route_of {
    using type = same_as_writes;
};
template <class Dialect>
requires requires {
    typename Dialect::read_route;
}
struct read_route_of<Dialect> {
    using type = typename Dialect::read_route;
};

template <class Dialect>
class db_store final : public kv_store {
public:
    using pool_type = typename Dialect::pool;
    using connection = typename Dialect::connection;
    using read_route = typename read_route_of<Dialect>::type;

    template <class Config>
    db_store(boost::asio::any_io_executor ex, Config c, read_route reads = {})
        : db_(std::move(ex), std::move(c)), reads_(reads) {}

    boost::asio::awaitable<kv_result> get(std::string key) override {
        auto [ec, r, words] = co_await query(Dialect::select, typename Dialect::params(key), true);
        if (ec) co_return fail(ec, std::move(words));
        if (r.rows() == 0) co_return kv_result{{}, kv_result::outcome::absent, {}};
        co_return kv_result{{}, kv_result::outcome::ok, Dialect::value_of(r)};
    }

    boost::asio::awaitable<kv_result> put(std::string key, std::string value) override {
        auto [ec, r, words] = co_await query(Dialect::upsert, typename Dialect::params(key, bytes_of(value)));
        if (ec) co_return fail(ec, std::move(words));
        co_return kv_result{};
    }

    boost::asio::awaitable<kv_result> erase(std::string key) override {
        auto [ec, r, words] = co_await query(Dialect::remove, typename Dialect::params(key));
        if (ec) co_return fail(ec, std::move(words));
        co_return kv_result{
            {}, r.affected_rows() == 0 ? kv_result::outcome::absent : kv_result::outcome::ok, {}};
    }

    boost::asio::awaitable<kv_result> incr(std::string key) override {
        if (auto [ec, words] = co_await ensure_schema(); ec) co_return fail(ec, std::move(words));
        auto [error, next] = co_await db_.transaction(
            [&key](connection& c) -> boost::asio::awaitable<kv_result> {
                constexpr auto use = boost::asio::use_awaitable;
                const auto current =
                    co_await c.async_query(Dialect::lock_current, Dialect::lock_params(key), use);
                std::string stored;
                if (current.rows() > 0) stored = Dialect::value_of(current);
                kv_result out = increment(current.rows() > 0 ? &stored : nullptr);
                if (out.what != kv_result::outcome::ok) throw refused{out};
                co_await c.async_query(Dialect::store_new, typename Dialect::params(key, bytes_of(out.value)),
                                       use);
                co_return out;
            },
            {}, boost::asio::as_tuple(boost::asio::use_awaitable));
        if (!error) {
            note({});
            co_return next;
        }
        try {
            std::rethrow_exception(error);
        } catch (const refused& r) {  // rolled back: the database answered
            note({});
            co_return r.result;
        } catch (const boost::system::system_error& e) {
            co_return fail(e.code(), words_of(e));
        }
    }

    // On the pool, with the failure in words (the server's, the driver's for a connect or an open that
    // failed).
    boost::asio::awaitable<respool::error_code> probe() override {
        // A cluster learns its hosts' roles first (each host probed once, either outcome: about a
        // second at most), so that the first statement finds the primary instead of waiting for one,
        // or failing at once with --failover-wait 0.
        if constexpr (Dialect::learns_roles_first) {
            if (!roles_learned_) {
                co_await db_.async_wait_ready(tuple_awaitable);
                roles_learned_ = true;
            }
        }
        auto [ec, words] = co_await ensure_schema();
        if (!ec) {
            respool::diagnostics diag;
            auto [qec, r] = co_await db_.async_query("SELECT 1", &diag, tuple_awaitable);
            ec = qec;
            words = std::move(diag.message);
        }
        note_probe(ec, words);
        co_return ec;
    }

    void report_to(db_health& h, std::size_t w) override {
        kv_store::report_to(h, w);
        for (auto [name, p] : Dialect::pools_of(db_)) {
            const std::string named = std::string(name) + " (thread " + std::to_string(w) + ")";
            p->add_observer(make_pool_observer(h, named));
            p->set_log_sink(make_pool_log_sink(named));
        }
    }

    std::vector<pool_view> pools() const override { return Dialect::views_of(db_); }

    std::optional<cluster_view> cluster() const override {
        if constexpr (requires { Dialect::cluster_of(db_); })
            return Dialect::cluster_of(db_);
        else
            return std::nullopt;
    }

    boost::asio::awaitable<void> close(std::chrono::nanoseconds grace) override {
        const auto g = std::chrono::duration_cast<respool::duration>(grace);
        if constexpr (requires { Dialect::close(db_, g); }) {
            co_await Dialect::close(db_, g);  // PostgreSQL: also the budget's leave (its row deleted)
        } else {
            for (auto [name, p] : Dialect::pools_of(db_)) co_await p->async_close(g, tuple_awaitable);
            db_.close();
        }
    }

private:
    static constexpr auto tuple_awaitable = boost::asio::as_tuple(boost::asio::use_awaitable);

    // What incr's function throws to roll back without a failure.
    struct refused {
        kv_result result;
    };

    struct outcome {
        respool::error_code ec;
        typename Dialect::result r;
        std::string words;  // with ec: the failure in words, as the pool put them
    };

    // One statement on the pool, on a database whose table exists; a `read` where the dialect routes
    // reads.
    boost::asio::awaitable<outcome> query(const char* sql, typename Dialect::params p, bool read = false) {
        if (auto [ec, words] = co_await ensure_schema(); ec) co_return outcome{ec, {}, std::move(words)};
        respool::diagnostics diag;
        respool::error_code ec;
        typename Dialect::result r;
        if constexpr (std::is_same_v<read_route, same_as_writes>) {
            (void)read;
            std::tie(ec, r) = co_await db_.async_query(sql, std::move(p), &diag, tuple_awaitable);
        } else if (read) {
            std::tie(ec, r) = co_await db_.async_query(reads_, sql, std::move(p), &diag, tuple_awaitable);
        } else {
            std::tie(ec, r) = co_await db_.async_query(sql, std::move(p), &diag, tuple_awaitable);
        }
        if (!ec) note({});
        co_return outcome{ec, std::move(r), std::move(diag.message)};
    }

    // The table, created the first time the database answers (it may be unreachable at startup: a
    // server that is down, a folder that appears later).
    boost::asio::awaitable<std::pair<respool::error_code, std::string>> ensure_schema() {
        if (schema_ready_) co_return std::pair<respool::error_code, std::string>{};
        respool::diagnostics diag;
        auto [ec, r] = co_await db_.async_query(Dialect::create_table, &diag, tuple_awaitable);
        if (!ec || Dialect::table_is_there(ec)) {
            schema_ready_ = true;
            co_return std::pair<respool::error_code, std::string>{};
        }
        co_return std::pair{ec, std::move(diag.message)};
    }

    // A transaction's failure in words: the database's (its error_with_diagnostics says them), or the
    // pool's for a borrow that failed, without the code's message Boost appends to them.
    static std::string words_of(const boost::system::system_error& e) {
        if (dynamic_cast<const typename Dialect::error*>(&e)) return e.what();
        std::string w = e.what();
        const std::string tail = ": " + e.code().message();
        if (const auto at = w.rfind(tail); at != std::string::npos) w.resize(at);
        return w;
    }

    kv_result fail(const respool::error_code& ec, std::string words) {
        note(ec, words);
        return {ec, kv_result::outcome::ok, {}, std::move(words)};
    }

    pool_type db_;
    [[no_unique_address]] read_route reads_;
    bool schema_ready_ = false;
    bool roles_learned_ = false;
};

}  // namespace respool_cli
