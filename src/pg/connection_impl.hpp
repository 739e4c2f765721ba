// The state behind a respool::pg::connection, shared by the files that drive it (connect.cpp,
// query.cpp, session.cpp, connection.cpp). Private to the PostgreSQL layer.
#pragma once

#include "read_first.hpp"
#include "statement_cache.hpp"

#include <respool/lease.hpp>
#include <respool/pg/connection.hpp>
#include <respool/trace.hpp>

#include <boost/asio/any_completion_executor.hpp>
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <libpq-fe.h>

#include <array>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace respool::pg {

// What a borrower changed in the session that the next borrower must not see (docs/06-postgresql.md,
// "Reset on return"). Read from the command tags of every result, the SQL text of what was sent (for
// functions with session effects whose tag says only SELECT) and the server's ParameterStatus reports.
struct session_state {
    bool dirty = false;          // something to reset: SET, LISTEN, temp objects, advisory locks, ...
    bool user_prepared = false;  // PREPARE by hand: DEALLOCATE ALL (and our cache goes with it)
    bool failover = false;       // a write met read_only (25006) on a server that is now read-only
    // ParameterStatus values at connect (or after the last reset), for the reported settings a
    // borrower can change without a SET tag (set_config in a function, say).
    static constexpr std::array<const char*, 6> watched = {"application_name", "client_encoding",
                                                           "DateStyle",        "IntervalStyle",
                                                           "TimeZone",         "standard_conforming_strings"};
    static constexpr std::size_t client_encoding = 1;
    std::array<std::string, watched.size()> reported;
    // libpq's encoding id at the snapshot. libpq keeps it current from the server's reports, so a
    // changed client_encoding is seen in one read (PQclientEncoding): each PQparameterStatus walks
    // libpq's list of reported settings with a string compare per entry, and the release of every
    // lease looks.
    int encoding = -1;
};

static_assert(std::string_view(session_state::watched[session_state::client_encoding]) == "client_encoding");

struct connection::impl {
    explicit impl(boost::asio::any_io_executor e)
        : ex(std::move(e)), ex_erased(ex), sock(ex), timer(ex), stmt_timer(ex), resolver(ex) {}
    ~impl() { finish(); }

    boost::asio::any_io_executor ex;
    // `ex` as a type-erased handler's executor is compared (complete_here): made once, not per reply.
    boost::asio::any_completion_executor ex_erased;
    PGconn* conn = nullptr;
    boost::asio::generic::stream_protocol::socket sock;  // watches libpq's socket; never closes it
    boost::asio::steady_timer timer;                     // the connect deadline
    boost::asio::steady_timer stmt_timer;  // the statement deadline, then the bound on draining a cancel
    std::chrono::steady_clock::duration statement_timeout{};
    // After a cancel request: how long the server gets to end the statement before the connection is
    // closed instead (set_cancel_drain_limit).
    std::chrono::steady_clock::duration cancel_drain_limit = std::chrono::seconds(1);
    boost::asio::ip::tcp::resolver resolver;
    diagnostics diag;
    std::deque<notification> notifications;  // arrived, not yet delivered
    std::string info;                        // masked
    bool busy = false;
    bool timed_out = false;
    std::chrono::steady_clock::time_point last_reply{};  // when the last operation ended
    // The server said FATAL or PANIC outside a query (a terminated backend, a shutdown): libpq passes
    // such a message to the notice receiver while the connection still looks open until the socket
    // closes. Seen, the connection is dead whatever PQstatus says.
    bool server_fatal = false;

    // The operation under way: how to make it end early (a query: server-side cancel and drain), and
    // who waits for its end (a reset on release, which must not touch the connection before).
    std::function<void()> abort_current;
    const void* abort_current_of = nullptr;  // the operation abort_current belongs to
    std::function<void()> on_idle;

    statement_mode mode = statement_mode::cache;
    detail::statement_cache cache;
    std::vector<std::string> to_deallocate;  // evicted or stale statements, sent with the next query
    std::string key;                         // reused buffer for cache keys (no allocation per query)
    session_state session;
    std::shared_ptr<statement_tracer> tracer;  // set_tracer: told of every statement as it ends
    std::string trace_host;                    // host:port for the tracer, made at the first trace
    // The reported settings as the connect left them (the client's startup values). RESET ALL brings a
    // setting back to the server session's default, which behind a pooler (PgBouncer in transaction
    // mode) is the pooler's, not this client's: the reset puts these back when they differ.
    std::array<std::string, session_state::watched.size()> at_connect;
    // A transaction's BEGIN not sent yet (detail::defer_begin): it goes with the transaction's first
    // statement, in the same round trip, as pgjdbc does; a transaction that runs nothing sends nothing.
    std::string deferred_begin;
    // Whether a statement reads its reply once before waiting for the socket (read_first.hpp).
    detail::read_first_record read_first;

    // Takes the socket back from Asio and closes the connection (libpq closes the socket). Every wait
    // of the operation under way ends now, so nothing keeps the event loop busy for a closed connection.
    void finish() noexcept;
    void unwatch() noexcept;
    // Watches libpq's current socket (after any PQconnectPoll step it may be a new one).
    bool watch() noexcept;
    // Calls h(ec) once libpq's socket has bytes to read, or the stream ended (libpq's own read then says
    // so). A one-byte peek, not async_wait: Asio tries a receive at once and otherwise queues the
    // operation on the socket's standing edge-triggered registration, where async_wait re-arms the
    // descriptor with an epoll_ctl at every call, a system call a statement. The peeked byte stays in
    // the socket for libpq. A socket error is passed on: the peek has taken it from the socket (a
    // reset, a keepalive timeout), and libpq's read would only see the end of the stream.
    template <class Handler>
    void wait_readable(Handler&& h) {
        sock.async_receive(boost::asio::buffer(&peeked, 1), boost::asio::socket_base::message_peek,
                           [h = std::forward<Handler>(h)](boost::system::error_code ec, std::size_t) mutable {
                               if (ec == boost::asio::error::eof) ec = {};
                               h(ec);
                           });
    }
    // For a wait right after a read that found no complete result (usually: the socket empty): a receive
    // tried at once would find nothing too, so the wait goes to the event loop's readiness directly, its
    // epoll_ctl the one system call before the reply (the re-arm also reports bytes a partial read left).
    // A socket error or the end of the stream completes it as readable, and libpq's read then reports
    // it in libpq's words (nothing has taken it from the socket, unlike wait_readable's peek).
    template <class Handler>
    void wait_readable_after_empty_read(Handler&& h) {
        sock.async_wait(boost::asio::socket_base::wait_read, std::forward<Handler>(h));
    }
    // A wait ended by the socket itself (a reset, a timeout), not by a cancellation or a closed socket.
    static bool socket_failed(const boost::system::error_code& ec) noexcept {
        return ec && ec != boost::asio::error::operation_aborted && ec != boost::asio::error::bad_descriptor;
    }
    // What to tell of a wait that ended with `ec`: the socket's own error, or libpq's last words.
    std::string wait_failure(const boost::system::error_code& ec) const {
        if (socket_failed(ec)) return "the connection failed: " + ec.message();
        return conn ? PQerrorMessage(conn) : "connection closed";
    }
    char peeked = 0;  // wait_readable's one byte (never looked at)
    // The operation under way has ended: the connection takes the next one.
    void op_ended();
    // Moves what libpq has read of NOTIFY messages into the queue (after every read of the socket).
    void collect_notifications();
    void client_error(std::string message);
    // The last failure's words cleared in place (no temporaries to build and move: after every statement).
    void clear_diagnostics() noexcept;
    // Routes libpq's notices (and the FATAL a server sends before it closes an idle connection) here.
    void listen_for_fatal() noexcept;
    void server_error(const PGresult* r);
    // Session tracking (session.cpp).
    void snapshot_session();  // after connect and after a reset: the clean state
    // SET statements for the reported settings whose value is no longer the one at connect (empty when
    // every one is): after a session reset.
    [[nodiscard]] std::string restore_startup_settings() const;
    void track_result(const PGresult* r);  // command tags
    void track_error(const std::string& sqlstate);
    [[nodiscard]] bool session_changed() const noexcept;  // the borrower changed the session (tracked)
};

namespace detail {

// The state behind a connection, for the layer's own operations outside the class.
struct connection_access {
    static const std::shared_ptr<connection::impl>& impl_of(const connection& c) noexcept { return c.impl_; }
};

using connect_handler = boost::asio::any_completion_handler<void(error_code)>;
using query_handler = boost::asio::any_completion_handler<void(error_code, result)>;

// Completes a handler on its associated executor (the connection's by default), never inline: posted
// through the connection's executor, then dispatched to the handler's own.
template <class Handler, class... Args>
void complete(const boost::asio::any_io_executor& ex, Handler h, Args... args) {
    boost::asio::post(ex, boost::asio::append(std::move(h), std::move(args)...));
}

// Completes a handler from inside a completion that runs on `ex` (a reply arrived): called right here
// when the handler's executor is `ex` itself, as Asio's own operations do, else dispatched to its own.
// (The direct call saves two type-erased hops per statement.) `handler_ex` is the handler's executor
// read before it was erased (handler_executor.hpp), or empty; then the handler is asked, with the
// connection's executor already erased as the candidate (connection::impl::ex_erased). Asking an
// erased handler whose executor is an any_io_executor wraps that executor anew, an allocation: what
// `handler_ex` saves at every reply.
template <class Handler, class... Args>
void complete_here(const connection::impl& c, Handler h, const boost::asio::any_io_executor& handler_ex,
                   Args... args) {
    const bool here =
        handler_ex ? handler_ex == c.ex : boost::asio::get_associated_executor(h, c.ex_erased) == c.ex_erased;
    if (here)
        std::move(h)(std::move(args)...);
    else
        boost::asio::dispatch(c.ex, boost::asio::append(std::move(h), std::move(args)...));
}

// Makes `op` the statement under way on `c` (a query or a COPY, with request_cancel(error_code) and a
// `handler`): the connection is busy, closing it aborts `op`, and the handler's cancellation slot and
// the statement timeout (when set) ask `op` to cancel.
template <class Op>
void begin_statement(connection::impl& c, const std::shared_ptr<Op>& op) {
    c.busy = true;
    c.abort_current = [o = op.get()] {
        o->request_cancel(boost::asio::error::operation_aborted);
    };  // no allocation
    c.abort_current_of = op.get();
    auto slot = op->handler.get_cancellation_slot();
    if (slot.is_connected())
        slot.assign([weak = std::weak_ptr<Op>(op)](boost::asio::cancellation_type) {
            if (auto o = weak.lock()) o->request_cancel(boost::asio::error::operation_aborted);
        });
    if (c.statement_timeout > std::chrono::steady_clock::duration::zero()) {
        c.stmt_timer.expires_after(c.statement_timeout);
        c.stmt_timer.async_wait([weak = std::weak_ptr<Op>(op)](boost::system::error_code ec) {
            if (auto o = weak.lock(); o && !ec) o->request_cancel(error::statement_timeout);
        });
    }
}

// With a cancel request still out after the reply was read: `op` waits for it (whose return finishes
// `op` and cancels this wait) until the statement's drain limit, then closes the connection. Nothing
// else holds `op` meanwhile: this wait does.
template <class Op>
void hold_for_cancel_return(const std::shared_ptr<Op>& op) {
    op->c->timer.expires_at(op->c->stmt_timer.expiry());
    op->c->timer.async_wait([self = op](boost::system::error_code ec) {
        if (ec || self->done) return;
        self->c->client_error("the cancel request did not return");
        self->c->finish();
        self->finish(error::connection_broken);
    });
}

// Opens a transaction on `c` lazily: `begin_sql` (BEGIN with its options) is sent with the next
// statement, in the same round trip (query.cpp). `c` must be idle, outside a transaction.
void defer_begin(connection& c, std::string begin_sql);
// Forgets a BEGIN not sent yet; true when there was one (the transaction ran no statement).
bool drop_deferred_begin(connection& c) noexcept;

// Starts a query on `c` (query.cpp): the simple protocol when `p` is null, else bound parameters
// through the statement cache (or the unnamed statement, statement_mode::unnamed). `pool_statement`:
// the pool's own (a reset, a liveness check), so marked for the tracer. `handler_ex`: the handler's
// executor, read before it was erased, or empty (complete_here).
void start_query(const std::shared_ptr<connection::impl>& c, std::string sql, std::optional<params> p,
                 query_handler handler, boost::asio::any_io_executor handler_ex = {},
                 bool pool_statement = false);
// pool::async_query's second half, done by the statement's own operation: `sql` on the lease's
// connection; when it ends, the lease goes back (poisoned after a connection-level failure, else
// released: reset on the way back), `diag` (when given) gets the failure's words, then `handler` runs.
// One operation and one type-erased handler for the borrow and the statement.
void start_query_on_lease(lease<connection> l, std::string sql, std::optional<params> p,
                          respool::diagnostics* diag, query_handler handler,
                          boost::asio::any_io_executor handler_ex = {});
// Fills the caller's diagnostics for a statement that failed on `c` (the server's words when `ec` is
// the failure c.last_error() describes).
void report_failure(respool::diagnostics& out, const connection& c, const error_code& ec);

// Tells the connection's tracer (when it has one) that a statement ended: `started` is when it was
// sent, `r` its result (nullptr on failure). Never throws.
void trace_statement(connection::impl& c, std::string_view sql, std::size_t parameters,
                     std::chrono::steady_clock::time_point started, const result* r, const error_code& ec,
                     bool pool_statement) noexcept;

}  // namespace detail

}  // namespace respool::pg
