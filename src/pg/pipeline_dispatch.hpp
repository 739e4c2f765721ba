// pool::async_query with pool_config::pipeline_depth > 1: pipelinable statements (pipeline.hpp) from
// many callers share borrowed connections, up to `depth` in flight on each. The pool lends the
// connections ("carriers") as it lends any: a carrier is a lease held while statements are in flight
// and given back when its pipeline is idle, so transactions and with_connection borrow beside them
// with the same FIFO and timeouts. Private to the PostgreSQL layer.
#pragma once

#include "pipeline.hpp"

#include <respool/detail/request_queue.hpp>
#include <respool/pool.hpp>

#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <vector>

namespace respool::pg::detail {

class pipeline_dispatch : public std::enable_shared_from_this<pipeline_dispatch> {
public:
    struct settings {
        std::size_t depth = 1;     // statements in flight per carrier
        std::size_t carriers = 1;  // at most this many connections carry statements (the pool's max)
        duration borrow_timeout{};
        duration statement_timeout{};
    };
    pipeline_dispatch(respool::pool<connection>& p, boost::asio::any_io_executor ex, settings s);

    // Runs the statement on the least busy carrier with room, else waits (within borrow_timeout,
    // then errc::exhausted) for room or a new carrier. The handler completes as connection::async_query's.
    // `handler_ex`: the handler's executor read before it was erased, or empty (pipeline::submit).
    void submit(std::string sql, params p, query_handler h, respool::diagnostics* diag = nullptr,
                boost::asio::any_io_executor handler_ex = {});
    // No more statements (errc::closed); those waiting fail now, those in flight finish, and their
    // carriers go back to the (closed) pool.
    void close();

private:
    struct carrier {
        lease<connection> l;
        std::shared_ptr<pipeline> pipe;
    };
    // A statement waiting for a carrier with room (in the request queue, which keeps the FIFO, the
    // borrow deadline and the cancellation).
    struct waiting : respool::detail::request_node {
        using owner_type = pipeline_dispatch;
        waiting(std::string q, params pr, query_handler handler, respool::diagnostics* d,
                boost::asio::any_io_executor hx)
            : sql(std::move(q)),
              p(std::move(pr)),
              h(std::move(handler)),
              diag(d),
              handler_ex(std::move(hx)) {}
        std::string sql;
        params p;
        query_handler h;
        respool::diagnostics* diag;
        boost::asio::any_io_executor handler_ex;
        // Cancelled while queued: completes with operation_aborted. Once on a carrier, the pipeline's
        // own cancellation applies.
        static void on_cancel(pipeline_dispatch& d, const std::shared_ptr<waiting>& w, bool withdrawn);
    };
    using queue = respool::detail::request_queue<waiting>;

    carrier* roomiest() noexcept;
    void grow();
    void carrier_idle(carrier* c, bool broken);
    void feed();
    void arm_wait_timer();
    void on_wait_timer();
    void fail_waiting(error_code ec);
    void fail(const std::shared_ptr<waiting>& w, error_code ec);

    respool::pool<connection>& pool_;
    boost::asio::any_io_executor ex_;
    settings s_;
    std::vector<std::unique_ptr<carrier>> carriers_;
    queue waiting_;                         // FIFO: the same borrow_timeout for all
    boost::asio::steady_timer wait_timer_;  // at the queue's next deadline while statements wait
    bool growing_ = false;                  // an acquire for a new carrier is under way
    bool closed_ = false;
};

}  // namespace respool::pg::detail
