// The running service of `respool serve`: N workers, each an event loop on a thread of its own with
// its own pool (kv_store), its own request metrics and the HTTP sessions it serves. A session, its
// store and its metrics are only touched on their worker's thread; what crosses threads is the
// accepted socket (handed to a worker's io_context), the atomics below, and the /metrics and /health
// snapshots, taken by running a coroutine on each worker's loop.
#pragma once

#include "db_health.hpp"
#include "kv_store.hpp"
#include "serve_flags.hpp"

#include <respool/http/request_metrics.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <atomic>
#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <vector>

namespace respool_cli {

struct worker {
    explicit worker(std::size_t i) : index(i) {}
    std::size_t index;
    boost::asio::io_context io{1};  // one thread runs it: no locking inside
    std::unique_ptr<kv_store> store;
    respool::http::request_metrics metrics;

    // The sessions on this loop, so that a shutdown can end the idle ones at once and let the busy
    // ones finish their request (then Connection: close).
    struct session_entry {
        boost::beast::tcp_stream* stream;
        bool busy = false;  // between a request's first byte and its response written
    };
    std::list<session_entry> sessions;
    bool stopping = false;                                 // no new request on this loop
    std::function<void()> on_drained;                      // run once stopping and the last session is gone
    std::optional<boost::asio::steady_timer> probe_timer;  // between two probes of the database
};

struct service {
    serve_config cfg;
    db_target target;
    std::vector<std::unique_ptr<worker>> workers;
    std::unique_ptr<db_health> health;  // why the database is down, since when (/health, the log)
};

// Stops the sessions of `w` (on w's thread): idle ones are closed now, busy ones after their
// response; `drained` runs on w's thread when none is left.
void stop_sessions(worker& w, std::function<void()> drained);
// Closes every session of `w` now (the shutdown deadline passed).
void abort_sessions(worker& w);

// One HTTP/1.1 connection: keep-alive, body limit, request and idle timeouts (session.cpp).
boost::asio::awaitable<void> run_session(service& svc, worker& w, boost::beast::tcp_stream stream);

}  // namespace respool_cli
