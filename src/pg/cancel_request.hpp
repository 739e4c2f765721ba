// Server-side cancel requests and where they report back. PQcancel blocks (it opens a connection of
// its own), so each request runs on a thread of its own; the operation that sent it must not end
// (and hand the connection on) before every request has returned, or a late one could cancel the
// next borrower's statement. Private to the PostgreSQL layer.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <libpq-fe.h>

#include <functional>
#include <memory>
#include <mutex>

namespace respool::pg::detail {

// Where the threads that send cancel requests report back. The operation closes it when it ends (or
// is destroyed unrun with its io_context): a request returning later posts nothing.
struct cancel_mailbox {
    std::mutex m;
    bool open = true;
    int in_flight = 0;
    boost::asio::any_io_executor work;  // tracked while requests are out: the event loop waits for them
    std::function<void()> on_return;    // posted to the event loop as each request returns

    // Sets on_return (under the lock: a request sent earlier may be returning on its thread now).
    void set_on_return(std::function<void()> f);
    void started(const boost::asio::any_io_executor& e);
    void returned();
    bool busy();
    // Also lets the event loop go: a request that never returns (a server that swallows it) holds
    // nothing once the operation has ended without it.
    void close();
};

// Asks the server to cancel what `conn` runs now, on a thread of its own that reports to `box`;
// false when no request could be sent (no connection, no thread).
bool send_cancel_request(PGconn* conn, const std::shared_ptr<cancel_mailbox>& box,
                         const boost::asio::any_io_executor& ex);

}  // namespace respool::pg::detail
