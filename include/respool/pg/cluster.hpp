// respool::pg::cluster: one object over a PostgreSQL primary and its streaming standbys. It keeps one
// pg::pool per host (never rebuilt when roles change), learns the hosts' roles, sends writes and
// transactions to the primary, reads (on request) to the least busy standby within the lag bound, and
// rides out a failover: a write that arrives while no primary is known waits for one (failover_wait)
// instead of failing. An old primary that still claims the role after another host was promoted is
// fenced: nothing is sent to it until it comes back as a standby.
//
//   pg::cluster db(io.get_executor(), {.pool = {.conninfo = "postgresql://app:...@db1:5432,db2:5432/app"}});
//   pg::commit_token t;
//   co_await db.transaction([&](pg::connection& c) -> asio::awaitable<void> {
//       co_await c.async_query("INSERT ...", pg::params(...), asio::use_awaitable);
//   }, {.commit_lsn = &t}, asio::use_awaitable);                        // on the primary
//   pg::result r = co_await db.async_query({.to = pg::route::prefer_standby, .after = t},
//                                          "SELECT ...", pg::params(...), asio::use_awaitable);
//
// How roles are learned (docs/06-postgresql.md, "Clusters"): a monitor connection per host probes it
// every topology_interval (its role, timeline, WAL position and replay lag in one round trip; every
// no_primary_interval while no primary is known, when it also sends an empty statement to each
// standby's monitor so that a promotion is reported by the server's push at once); every lease's
// ParameterStatus (in_hot_standby, default_transaction_read_only) and errors (25006, 57P01-57P03, a lost
// connection) make a host suspect at once. Only the monitors connect to a host that is down: user
// requests never wait on a dead host's connect timeout.
//
// Threads: the cluster lives on its executor (the host pools too). Operations may be started from any
// thread when that executor is a strand and pool.thread_safe is set (they are dispatched there);
// stats(), hosts() and host_pool() are for code running on the executor.
#pragma once

#include <respool/pg/pool.hpp>
#include <respool/pg/roles.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace respool::pg {

struct cluster_config {
    // pool.conninfo names every host: `host=db1,db2 port=5432,5433 ...` or
    // `postgresql://db1:5432,db2:5433/app` (target_session_attrs and load_balance_hosts are the
    // cluster's business and ignored). Every other pool setting applies to each host's pool: max
    // connections per host.
    pool_config pool;
    duration topology_interval = std::chrono::seconds(1);           // probe period per host
    duration no_primary_interval = std::chrono::milliseconds(100);  // while no primary is known
    duration probe_timeout = std::chrono::seconds(1);  // a probe (connect + statement) taking longer failed
    // A write (async_query without read_options, with_connection, transaction, async_acquire) that
    // finds no primary waits this long for one, then fails with errc::unavailable; the wait for a
    // connection of the primary's pool (borrow_timeout) comes after it.
    duration failover_wait = std::chrono::seconds(5);
    // A read routed to a standby goes only to one known to hold every commit acknowledged longer ago
    // than this (standbys are probed at least every max_replica_lag / 2 to know it).
    duration max_replica_lag = std::chrono::seconds(1);
    // Called on the cluster's executor for every role change of a host (its name is host:port, no
    // credential), with the reason in words: for the service's log line. Optional.
    std::function<void(std::string_view host, host_role from, host_role to, std::string_view reason)>
        on_role_change;
};

// Where a read goes (async_query, with_connection and async_acquire with read_options).
struct read_options {
    route to = route::prefer_standby;
    commit_token after{};  // read-your-writes: only a host that has replayed this far
};

struct cluster_host_stats {
    std::string name;  // host:port
    host_role role = host_role::unknown;
    bool writable = false;        // writes go here now
    std::uint32_t timeline = 0;   // its timeline, from its last primary claim (0: none seen)
    std::uint64_t lsn = 0;        // last probed: a primary's insert LSN, a standby's replay LSN
    std::optional<duration> lag;  // how stale it may be now (0 for the primary; nullopt: unknown)
    std::uint64_t role_changes = 0;
    std::uint64_t statements = 0;  // operations routed to it
    std::string last_failure;      // why its last probe failed (masked); empty after a success
    pool_stats pool;
    // Its pool's share of the shared connection budget (pool_config::budget). Only the primary's pool
    // shares: a standby's keeps its configured max (degraded says so) and joins when promoted.
    budget_stats budget;
};

struct cluster_stats {
    std::vector<cluster_host_stats> hosts;  // in the conninfo's order
    std::optional<std::size_t> primary;     // index into hosts
    std::string no_primary_reason;          // why there is none (empty when there is)
    std::size_t waiting_for_primary = 0;    // writes waiting now
    std::uint64_t failover_waits = 0;       // writes that had to wait for a primary
    std::uint64_t failover_timeouts = 0;    // ... and gave up after failover_wait
    std::uint64_t reads_to_standby = 0;
    std::uint64_t reads_to_primary = 0;
};

namespace detail {
struct cluster_state;
// Helpers of the templates below (cluster.cpp): a lease on the host a route picks and that host,
// waiting for a primary when needed; failures thrown as pool's acquire does.
boost::asio::awaitable<std::pair<lease<connection>, std::size_t>> acquire_routed(
    std::shared_ptr<cluster_state> s, std::optional<read_options> r);
// Throws errc::unavailable when `host` is no longer the primary (a transaction about to run again).
void check_still_primary(const std::shared_ptr<cluster_state>& s, std::size_t host);

// A cluster transaction's steps: the pool's, and before every attempt the check that its host is still
// the primary (an attempt after a serialization failure is never sent to a host fenced meanwhile), in
// begin_at_once, which starts every attempt.
struct cluster_transaction_steps : transaction_steps {
    std::shared_ptr<cluster_state> cluster;
    std::size_t host = 0;
    bool begin_at_once(connection& c) const {
        check_still_primary(cluster, host);
        return transaction_steps::begin_at_once(c);
    }
};
}  // namespace detail

class cluster : public respool::detail::db::query_operations<cluster, params, result> {
public:
    using executor_type = boost::asio::any_io_executor;

    // Checks the settings (std::invalid_argument naming the setting; the conninfo masked), makes one
    // pool per host and starts the monitors. A single host is allowed (its role is still watched).
    cluster(executor_type ex, cluster_config cfg);
    ~cluster();  // closes
    cluster(cluster&&) noexcept;
    cluster& operator=(cluster&&) noexcept;

    [[nodiscard]] executor_type get_executor() const noexcept;
    [[nodiscard]] const cluster_config& config() const noexcept;

    // async_query(sql[, params][, diag], token): on the primary (query_operations; pool::async_query's
    // contract). A write that finds no primary waits up to failover_wait; then errc::unavailable with
    // `diag` saying why (the hosts' states, masked).
    using respool::detail::db::query_operations<cluster, params, result>::async_query;

    // A read on the host `r` picks (route, lag bound, read-your-writes token).
    template <class Token = boost::asio::deferred_t>
    auto async_query(read_options r, std::string sql, Token&& token = {}) {
        return initiate_read(r, std::move(sql), std::nullopt, nullptr, std::forward<Token>(token));
    }
    template <class Token = boost::asio::deferred_t>
    auto async_query(read_options r, std::string sql, params p, Token&& token = {}) {
        return initiate_read(r, std::move(sql), std::move(p), nullptr, std::forward<Token>(token));
    }
    template <class Token = boost::asio::deferred_t>
    auto async_query(read_options r, std::string sql, params p, respool::diagnostics* diag,
                     Token&& token = {}) {
        return initiate_read(r, std::move(sql), std::move(p), diag, std::forward<Token>(token));
    }

    // A lease on a connection of the primary (or, with read_options, of the host the route picks).
    //  Handler: void(error_code, lease<connection>). Errors: pool::async_acquire's, and
    //  errc::unavailable when no host fit within failover_wait.
    template <class Token = boost::asio::deferred_t>
    requires(!std::is_same_v<std::decay_t<Token>, read_options>) auto async_acquire(Token&& token = {}) {
        return initiate_acquire(std::nullopt, std::forward<Token>(token));
    }
    template <class Token = boost::asio::deferred_t>
    auto async_acquire(read_options r, Token&& token = {}) {
        return initiate_acquire(r, std::forward<Token>(token));
    }

    // pool::with_connection and pool::transaction, on the primary (with_connection: or where `r` says).
    template <class F, class Token = boost::asio::deferred_t>
    requires(!std::is_same_v<std::decay_t<F>, read_options>) auto with_connection(F fn, Token&& token = {}) {
        return with_connection_on(std::nullopt, std::move(fn), std::forward<Token>(token));
    }
    template <class F, class Token = boost::asio::deferred_t>
    auto with_connection(read_options r, F fn, Token&& token = {}) {
        return with_connection_on(r, std::move(fn), std::forward<Token>(token));
    }
    template <class F, class Token = boost::asio::deferred_t>
    auto transaction(F fn, transaction_options o = {}, Token&& token = {}) {
        using R = typename detail::awaited<std::invoke_result_t<F&, connection&>>::type;
        return boost::asio::co_spawn(get_executor(), run_transaction<R>(state_, o, std::move(fn)),
                                     std::forward<Token>(token));
    }

    // Completes when every host has been probed once (either outcome): roles are known.
    template <class Token = boost::asio::deferred_t>
    auto async_wait_ready(Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [this](auto handler) { start_wait_ready(std::move(handler)); }, token);
    }

    [[nodiscard]] cluster_stats stats() const;
    [[nodiscard]] std::size_t hosts() const noexcept;
    pool& host_pool(std::size_t host);  // host i's pool (its observers, log sink, stats)
    // Closes every pool and monitor; writes waiting for a primary fail with errc::closed.
    void close() noexcept;

private:
    friend class respool::detail::db::query_operations<cluster, params, result>;
    using query_handler = boost::asio::any_completion_handler<void(error_code, result)>;
    using acquire_handler = boost::asio::any_completion_handler<void(error_code, lease<connection>)>;

    template <class Token>
    auto initiate_read(read_options r, std::string sql, std::optional<params> p, respool::diagnostics* diag,
                       Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code, result)>(
            [this](auto handler, read_options ro, std::string s, std::optional<params> q,
                   respool::diagnostics* d) {
                start_routed_query(ro, std::move(s), std::move(q), d, std::move(handler));
            },
            token, r, std::move(sql), std::move(p), diag);
    }
    template <class Token>
    auto initiate_acquire(std::optional<read_options> r, Token&& token) {
        return boost::asio::async_initiate<Token, void(error_code, lease<connection>)>(
            [this](auto handler, std::optional<read_options> ro) { start_acquire(ro, std::move(handler)); },
            token, r);
    }
    template <class F, class Token>
    auto with_connection_on(std::optional<read_options> r, F fn, Token&& token) {
        using R = typename detail::awaited<std::invoke_result_t<F&, connection&>>::type;
        return boost::asio::co_spawn(get_executor(), run_with_connection<R>(state_, r, std::move(fn)),
                                     std::forward<Token>(token));
    }
    template <class R, class F>
    static boost::asio::awaitable<R> run_with_connection(std::shared_ptr<detail::cluster_state> s,
                                                         std::optional<read_options> r, F fn) {
        std::pair<lease<connection>, std::size_t> got = co_await detail::acquire_routed(std::move(s), r);
        co_return co_await respool::detail::db::with_lease<R>(std::move(got.first), fn, &detail::settle);
    }
    template <class R, class F>
    static boost::asio::awaitable<R> run_transaction(std::shared_ptr<detail::cluster_state> s,
                                                     transaction_options o, F fn) {
        std::pair<lease<connection>, std::size_t> got = co_await detail::acquire_routed(s, std::nullopt);
        // Named, not a temporary inside the co_await's arguments: GCC 12 destroys such a temporary
        // twice (here: one reference of the cluster's state too many).
        detail::cluster_transaction_steps steps{{o}, std::move(s), got.second};
        co_return co_await respool::detail::db::in_transaction<R>(
            respool::detail::db::borrowed(std::move(got.first)), o.max_attempts, std::move(fn),
            std::move(steps));
    }

    // (`handler_ex` is not used: a routed statement completes through the routing's own handler.)
    void start_query(std::string sql, std::optional<params> p, respool::diagnostics* diag,
                     query_handler handler, const boost::asio::any_io_executor& handler_ex);
    void start_routed_query(read_options r, std::string sql, std::optional<params> p,
                            respool::diagnostics* diag, query_handler handler);
    void start_acquire(std::optional<read_options> r, acquire_handler handler);
    void start_wait_ready(boost::asio::any_completion_handler<void(error_code)> handler);

    std::shared_ptr<detail::cluster_state> state_;
};

}  // namespace respool::pg
