// A statement that waits in one of the pool's queues (a read batch's, group commit's): what the caller
// handed over, and what the job that runs it hands back. Each queue's entry adds its own parameters
// form and cancellation rule.
#pragma once

#include <respool/detail/request_queue.hpp>
#include <respool/sqlite/connection.hpp>

#include <boost/asio/any_completion_handler.hpp>

#include <atomic>
#include <string>

namespace respool::sqlite::detail {

struct pool_state;
using query_handler = boost::asio::any_completion_handler<void(error_code, result)>;

// The caller's side owns everything but `ec`, `words` and `res` (written by the job that runs it, read
// after its completion) and `cancelled`. Its place in the queue (and deadline, if any) is the request
// queue's.
struct queued_statement : respool::detail::request_node {
    using owner_type = pool_state;
    queued_statement(std::string q, query_handler h, respool::diagnostics* d)
        : sql(std::move(q)), handler(std::move(h)), diag(d) {}
    std::string sql;
    query_handler handler;
    respool::diagnostics* diag;  // the caller's (filled on failure before the handler runs), or nullptr
    error_code ec;
    diagnostics words;  // ec's, as SQLite said it
    result res;
    std::atomic<bool> cancelled{false};  // cancelled after it was taken: see each entry's on_cancel
};

}  // namespace respool::sqlite::detail
