// What a cluster (cluster.cpp) needs of its host pools beyond their public interface: a pool that shows
// it every connection as its lease ends, and a statement run on a lease the cluster borrowed itself
// (pool::async_query's second half: the statement, its diagnostics, the lease back or poisoned).
#pragma once

#include <respool/pg/pool.hpp>

#include <boost/asio/any_completion_handler.hpp>

#include <functional>
#include <optional>
#include <string>

namespace respool::pg::detail {

struct pool_access {
    static pool make(boost::asio::any_io_executor ex, pool_config cfg,
                     std::function<void(connection&)> on_return) {
        return pool(std::move(ex), std::move(cfg), std::move(on_return));
    }
    // Runs `sql` on the lease's connection; a connection-level failure poisons it, anything else
    // releases it (reset on the way back); then `handler` (on its associated executor). Cancellation:
    // the handler's slot cancels the statement on the server.
    static void run_query(lease<connection> l, std::string sql, std::optional<params> q,
                          respool::diagnostics* diag,
                          boost::asio::any_completion_handler<void(error_code, result)> handler);
    // Whether pool::async_query would pipeline this statement (pipeline_depth > 1, bound parameters, a
    // statement that may share a connection).
    static bool pipelined(const pool& p, const std::string& sql, const std::optional<params>& q);
    // Tests: the pool's budget member stops as a killed process would, its row left to expire (after
    // lease); nothing without a budget.
    static void budget_vanish(pool& p);
};

}  // namespace respool::pg::detail
